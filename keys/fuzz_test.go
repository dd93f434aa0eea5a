package keys

import (
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzDecodePrivateKey(f *testing.F) {
	for _, spec := range []KeySpec{{Algorithm: AlgorithmECDSA}, {Algorithm: AlgorithmEd25519}, {}} {
		k := mustKey(f, spec)
		for _, enc := range []Encoding{EncodingPKCS1, EncodingPKCS8} {
			b, _ := EncodePrivateKey(k, enc)
			f.Add(b)
		}
	}
	f.Add([]byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		key, err := DecodePrivateKey(in)
		if err != nil {
			return
		}
		// Whatever decodes must encode and decode back to the same key.
		for _, enc := range []Encoding{EncodingPKCS1, EncodingPKCS8} {
			out, err := EncodePrivateKey(key, enc)
			require.NoError(t, err, "a decoded key does not encode as %s", enc)
			back, err := DecodePrivateKey(out)
			require.NoError(t, err, "%s round trip", enc)
			require.True(t, PublicKeysEqual(back.Public(), key.Public()), "%s round trip changed the key", enc)
		}
	})
}

func FuzzParseSecretData(f *testing.F) {
	ca := newTestCA(f)
	key := mustKey(f, KeySpec{Algorithm: AlgorithmECDSA})
	chain := append(pemCert(ca.issueDER(f, key.Public(), "a.example", []string{"a.example"})), ca.pem...)
	keyPEM, _ := EncodePrivateKey(key, EncodingPKCS1)
	f.Add(chain, keyPEM, ca.pem)
	f.Add([]byte("junk"), []byte("junk"), []byte("junk"))
	f.Add(keyPEM, chain, []byte(nil))
	f.Fuzz(func(t *testing.T, crt, k, caPEM []byte) {
		p, err := ParseSecretData(map[string][]byte{"tls.crt": crt, "tls.key": k, "ca.crt": caPEM})
		require.NotNil(t, p, "nil ParsedSecret")
		require.Equal(t, p.CertErr == nil && p.KeyErr == nil, err == nil, "joined error %v disagrees with fields", err)
		require.NotEqual(t, p.Leaf == nil, p.CertErr == nil, "tls.crt must be either parsed or in error")
		require.NotEqual(t, p.Key == nil, p.KeyErr == nil, "tls.key must be either parsed or in error")
		if p.KeyMatches {
			require.True(t, PublicKeysEqual(p.Leaf.PublicKey, p.Key.Public()), "KeyMatches for a key that is not the leaf's")
		}
		_, _ = p.Chain()
		_, _ = p.CA()
		_ = p.String()
		// A secret that parsed and matches must be writable again.
		if p.KeyMatches {
			if _, err := SecretData(rand.Reader, p.Key, crt, nil, OutputSpec{}); err != nil {
				// The chain after the leaf may be garbage; only the leaf is
				// promised to round-trip.
				if _, cerr := p.Chain(); cerr == nil {
					t.Fatalf("a matching parsed secret does not write back: %v", err)
				}
			}
		}
	})
}

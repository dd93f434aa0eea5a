package keys

import (
	"crypto/rand"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// driftFixture is a secret written by SecretData with every output asked,
// and the pieces to write it again differently.
type driftFixture struct {
	out    OutputSpec
	data   map[string][]byte
	parsed *ParsedSecret
	write  func(OutputSpec) map[string][]byte // for the fixture's key, chain and CA
	old    map[string][]byte                  // the same outputs for another key and certificate
}

func newDriftFixture(t testing.TB) *driftFixture {
	ca := newTestCA(t)
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	chain := pemCert(ca.issueDER(t, key.Public(), "a.example", []string{"a.example"}))
	out := OutputSpec{
		KeyEncoding: EncodingPKCS8, CombinedPEM: true, DER: true,
		PKCS12: &PKCS12Spec{Password: "s3cret-pw"}, JKS: &JKSSpec{Password: "s3cret-pw"},
	}
	write := func(o OutputSpec) map[string][]byte {
		d, err := SecretData(rand.Reader, key, chain, ca.pem, o)
		require.NoError(t, err)
		return d
	}
	data := write(out)
	parsed, err := ParseSecretData(data)
	require.NoError(t, err)
	oldKey := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	old, err := SecretData(rand.Reader, oldKey, pemCert(ca.issueDER(t, oldKey.Public(), "a.example", []string{"a.example"})), ca.pem, out)
	require.NoError(t, err)
	return &driftFixture{out: out, data: data, parsed: parsed, write: write, old: old}
}

func TestDataMismatches(t *testing.T) {
	f := newDriftFixture(t)
	other := newTestCA(t)
	tests := map[string]struct {
		mutate func(d map[string][]byte, o *OutputSpec)
		want   []string
	}{
		"data written by SecretData for the spec is in line": {
			mutate: func(map[string][]byte, *OutputSpec) {},
		},
		"tls.key with headers and other line breaks is the same key": {
			mutate: func(d map[string][]byte, _ *OutputSpec) {
				d[SecretPrivateKey] = append([]byte("# written by hand\n"), d[SecretPrivateKey]...)
			},
		},
		"every output missing is reported, each by name": {
			mutate: func(d map[string][]byte, _ *OutputSpec) {
				for _, k := range []string{SecretCombinedPEM, SecretKeyDER, SecretPKCS12, SecretPKCS12Trust, SecretJKS, SecretJKSTrust} {
					delete(d, k)
				}
			},
			want: []string{"tls-combined.pem is missing", "key.der is missing", "keystore.p12 is missing", "truststore.p12 is missing", "keystore.jks is missing", "truststore.jks is missing"},
		},
		"outputs no longer asked for are reported": {
			mutate: func(_ map[string][]byte, o *OutputSpec) { *o = OutputSpec{KeyEncoding: EncodingPKCS8} },
			want: []string{"tls-combined.pem is no longer asked for", "key.der is no longer asked for", "keystore.p12 is no longer asked for",
				"truststore.p12 is no longer asked for", "keystore.jks is no longer asked for", "truststore.jks is no longer asked for"},
		},
		"a key encoding changed in the spec": {
			mutate: func(_ map[string][]byte, o *OutputSpec) { o.KeyEncoding = EncodingPKCS1 },
			want:   []string{"tls.key is not in the PKCS1 encoding", "tls-combined.pem does not hold the key and chain of tls.key and tls.crt"},
		},
		"outputs of an earlier key and certificate are stale": {
			mutate: func(d map[string][]byte, _ *OutputSpec) {
				for _, k := range []string{SecretCombinedPEM, SecretKeyDER, SecretPKCS12, SecretJKS} {
					d[k] = f.old[k]
				}
			},
			want: []string{"tls-combined.pem does not hold the key and chain of tls.key and tls.crt", "key.der does not hold the key of tls.key",
				"keystore.p12 does not hold the key and chain of tls.key and tls.crt", "keystore.jks does not hold the key and chain of tls.key, tls.crt and ca.crt"},
		},
		"a changed keystore password makes both stores stale": {
			mutate: func(_ map[string][]byte, o *OutputSpec) {
				o.PKCS12 = &PKCS12Spec{Password: "n3w-pw"}
				o.JKS = &JKSSpec{Password: "n3w-pw"}
			},
			want: []string{"keystore.p12 cannot be opened with the password of spec (changed, or the keystore is damaged)",
				"truststore.p12 cannot be opened with the password of spec (changed, or the truststore is damaged)",
				`keystore.jks has no key entry "certificate" that opens with the password of spec`,
				"truststore.jks cannot be opened with the password of spec (changed, or the truststore is damaged)"},
		},
		"another PKCS#12 profile in the spec": {
			mutate: func(_ map[string][]byte, o *OutputSpec) {
				o.PKCS12 = &PKCS12Spec{Password: "s3cret-pw", Profile: PKCS12LegacyDES}
			},
			want: []string{"keystore.p12 is not in the LegacyDES profile", "truststore.p12 is not in the LegacyDES profile"},
		},
		"another JKS alias in the spec": {
			mutate: func(_ map[string][]byte, o *OutputSpec) { o.JKS = &JKSSpec{Password: "s3cret-pw", Alias: "tls"} },
			want:   []string{`keystore.jks has no key entry "tls" that opens with the password of spec`},
		},
		"damaged keystores": {
			mutate: func(d map[string][]byte, _ *OutputSpec) {
				d[SecretPKCS12] = []byte("not a keystore")
				d[SecretJKS] = []byte("not a keystore")
			},
			want: []string{"keystore.p12 is not in the Modern2023 profile", `keystore.jks has no key entry "certificate" that opens with the password of spec`},
		},
		"truststores of another CA": {
			mutate: func(d map[string][]byte, _ *OutputSpec) { d[SecretCA] = other.pem },
			want: []string{"truststore.p12 does not hold the CA of ca.crt", "keystore.jks does not hold the key and chain of tls.key, tls.crt and ca.crt",
				"truststore.jks does not hold the CA of ca.crt"},
		},
		"truststores beside an empty ca.crt": {
			mutate: func(d map[string][]byte, _ *OutputSpec) { delete(d, SecretCA) },
			want: []string{"truststore.p12 is there but ca.crt holds no CA", "keystore.jks does not hold the key and chain of tls.key, tls.crt and ca.crt",
				"truststore.jks is there but ca.crt holds no CA"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := maps.Clone(f.data)
			o := f.out
			tc.mutate(d, &o)
			got := DataMismatches(d, f.parsed, o)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("DataMismatches (-want +got):\n%s", diff)
			}
			for _, m := range got {
				require.NotContains(t, m, "pw", "a mismatch names a password")
			}
			// A repair — SecretData from the secret's own key, chain and
			// CA — puts it back in line.
			if len(got) > 0 {
				again, err := SecretData(rand.Reader, f.parsed.Key, d[SecretCertificate], d[SecretCA], o)
				require.NoError(t, err)
				require.Empty(t, DataMismatches(again, f.parsed, o), "data rewritten for the spec")
			}
		})
	}
}

// Each profile SecretData writes is told apart (RFC 7292 §4.1: the
// algorithm of the encrypted certificate bag), and its iteration count is
// read: never more than MaxKeystoreIterations, so certlife's own files are
// opened.
func TestInspectPKCS12(t *testing.T) {
	f := newDriftFixture(t)
	for _, p := range []PKCS12Profile{PKCS12Modern, PKCS12LegacyRC2, PKCS12LegacyDES} {
		d := f.write(OutputSpec{PKCS12: &PKCS12Spec{Password: "x", Profile: p}})
		require.Equal(t, pkcs12Info{profile: p, iterations: 2048}, inspectPKCS12(d[SecretPKCS12]), "keystore")
		require.Equal(t, pkcs12Info{profile: p, iterations: 2048}, inspectPKCS12(d[SecretPKCS12Trust]), "truststore")
	}
	require.Equal(t, pkcs12Info{}, inspectPKCS12([]byte{0x30, 0x03, 0x02, 0x01, 0x03}))
}

// A secret with no usable key and leaf has nothing to compare against.
func TestDataMismatchesNeedsAKeyPair(t *testing.T) {
	f := newDriftFixture(t)
	require.Nil(t, DataMismatches(f.data, nil, f.out))
	require.Nil(t, DataMismatches(f.data, &ParsedSecret{}, f.out))
}

// FuzzDataMismatches: whatever bytes sit under each data key, the check
// never panics and never echoes a password.
func FuzzDataMismatches(f *testing.F) {
	fx := newDriftFixture(f)
	f.Add(fx.data[SecretPKCS12], fx.data[SecretJKS], fx.data[SecretCombinedPEM], fx.data[SecretKeyDER], fx.data[SecretPrivateKey], uint8(0))
	f.Add([]byte{0x30}, []byte{0xfe, 0xed, 0xfe, 0xed}, []byte("x"), []byte{}, []byte("-----BEGIN PRIVATE KEY-----\n"), uint8(255))
	f.Fuzz(func(t *testing.T, p12, jks, combined, der, key []byte, flags uint8) {
		d := maps.Clone(fx.data)
		d[SecretPKCS12], d[SecretJKS], d[SecretCombinedPEM], d[SecretKeyDER], d[SecretPrivateKey] = p12, jks, combined, der, key
		o := fx.out
		if flags&1 != 0 {
			o.PKCS12 = nil
		}
		if flags&2 != 0 {
			o.JKS = nil
		}
		if flags&4 != 0 {
			o.KeyEncoding = EncodingPKCS1
		}
		for _, m := range DataMismatches(d, fx.parsed, o) {
			if strings.Contains(m, "s3cret") {
				t.Fatalf("a mismatch names the password: %q", m)
			}
		}
	})
}

// TestKeyPEMTypeIsTheBlocks: the key type DataMismatches takes from a
// parse is the type of tls.key's first PEM block, whether the parse was of
// this tls.key, of another encoding of the key, or made by hand.
func TestKeyPEMTypeIsTheBlocks(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	sec1, err := EncodePrivateKey(key, EncodingPKCS1)
	require.NoError(t, err)
	pkcs8, err := EncodePrivateKey(key, EncodingPKCS8)
	require.NoError(t, err)
	parsedSEC1, _ := ParseSecretData(map[string][]byte{SecretPrivateKey: sec1})
	cached, _ := NewParseCache(0).ParseSecretData(map[string][]byte{SecretPrivateKey: sec1})
	tests := map[string]struct {
		tlsKey []byte
		p      *ParsedSecret
		want   string
	}{
		"the parse of this tls.key":                {sec1, parsedSEC1, "EC PRIVATE KEY"},
		"a cached parse of this tls.key":           {sec1, cached, "EC PRIVATE KEY"},
		"the parse of the key in another encoding": {pkcs8, parsedSEC1, "PRIVATE KEY"},
		"a parse made by hand":                     {pkcs8, &ParsedSecret{Key: key}, "PRIVATE KEY"},
		"a tls.key that is no PEM, beside a parse": {[]byte("garbage"), parsedSEC1, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, keyPEMType(map[string][]byte{SecretPrivateKey: tc.tlsKey}, tc.p))
		})
	}
}

package keys

import (
	"bytes"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Secret data beyond MaxSecretValueBytes, MaxCertificates or
// MaxPrivateKeyBytes is refused unread by every parser of secret data,
// cached or not, with an error wrapping ErrTooLarge that names the field
// and the bound; data at the bounds parses.
func TestSecretDataBounds(t *testing.T) {
	ca := newTestCA(t)
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	leaf := pemCert(ca.issueDER(t, key.Public(), "a.example", []string{"a.example"}))
	keyPEM, err := EncodePrivateKey(key, EncodingPKCS8)
	require.NoError(t, err)
	chainOf := func(n int) []byte { return append(bytes.Clone(leaf), bytes.Repeat(ca.pem, n-1)...) }
	// A key padded after its block to exactly n bytes: it still decodes.
	keyOf := func(n int) []byte { return append(bytes.Clone(keyPEM), bytes.Repeat([]byte("\n"), n-len(keyPEM))...) }
	bigBlock := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: make([]byte, MaxSecretValueBytes)})

	tests := map[string]struct {
		crt, key, ca []byte
		// certErr, keyErr, caErr: "" when it parses, else part of the error
		certErr, keyErr, caErr string
	}{
		"at the bounds": {
			crt: chainOf(MaxCertificates), key: keyOf(MaxPrivateKeyBytes), ca: bytes.Repeat(ca.pem, MaxCertificates),
		},
		"one certificate too many": {
			crt: chainOf(MaxCertificates + 1), key: keyPEM, ca: bytes.Repeat(ca.pem, MaxCertificates+1),
			certErr: "keys: tls.crt: too large: 101 PEM blocks, over the limit of 100: not read",
			caErr:   "keys: ca.crt: too large: 101 PEM blocks, over the limit of 100: not read",
		},
		"a key one byte too long": {
			crt: leaf, key: keyOf(MaxPrivateKeyBytes + 1),
			keyErr: "keys: tls.key: keys: cannot decode private key: too large: 65537 bytes, over the limit of 65536: not read",
		},
		"one certificate block over MaxSecretValueBytes": {
			crt: append(bytes.Clone(leaf), bigBlock...), key: keyPEM, ca: bigBlock,
			certErr: "bytes, over the limit of 1048576: not read",
			caErr:   "bytes, over the limit of 1048576: not read",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			data := map[string][]byte{SecretCertificate: tt.crt, SecretPrivateKey: tt.key, SecretCA: tt.ca}
			for _, pc := range []*ParseCache{nil, NewParseCache(0)} {
				p, _ := pc.ParseSecretData(data)
				check := func(field string, err error, want string) {
					t.Helper()
					if want == "" {
						assert.NoError(t, err, field)
						return
					}
					require.Error(t, err, field)
					assert.ErrorIs(t, err, ErrTooLarge, field)
					assert.Contains(t, err.Error(), want)
					var fe *FieldError
					if assert.ErrorAs(t, err, &fe) {
						assert.Equal(t, field, fe.Field)
					}
				}
				check(SecretCertificate, p.CertErr, tt.certErr)
				check(SecretPrivateKey, p.KeyErr, tt.keyErr)
				_, caErr := p.CA()
				check(SecretCA, caErr, tt.caErr)
				if tt.certErr == "" {
					chain, err := p.Chain()
					require.NoError(t, err)
					assert.Len(t, chain, bytes.Count(tt.crt, pemBegin))
				}
				_, err := pc.ParseCertificates(tt.crt)
				assert.Equal(t, tt.certErr != "", errors.Is(err, ErrTooLarge), "ParseCertificates: %v", err)
				_, err = pc.DecodePrivateKey(tt.key)
				assert.Equal(t, tt.keyErr != "", errors.Is(err, ErrTooLarge), "DecodePrivateKey: %v", err)
				if tt.keyErr != "" {
					assert.ErrorIs(t, err, ErrDecode)
				}
			}
			// SecretData refuses to write what could not be read back.
			_, err := SecretData(rand.Reader, key, tt.crt, tt.ca, OutputSpec{})
			if tt.certErr == "" && tt.caErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrTooLarge)
			}
		})
	}
}

// A keystore beyond MaxSecretValueBytes is stale and is not opened.
func TestDataMismatchesOversizedKeystore(t *testing.T) {
	ca := newTestCA(t)
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	leaf := pemCert(ca.issueDER(t, key.Public(), "a.example", []string{"a.example"}))
	out := OutputSpec{PKCS12: &PKCS12Spec{Password: "pw"}, JKS: &JKSSpec{Password: "password"}}
	data, err := SecretData(rand.Reader, key, leaf, ca.pem, out)
	require.NoError(t, err)
	p, err := ParseSecretData(data)
	require.NoError(t, err)
	require.Empty(t, DataMismatches(data, p, out))
	for _, k := range []string{SecretPKCS12, SecretPKCS12Trust, SecretJKS, SecretJKSTrust} {
		grown := bytes.Clone(data[k])
		data[k] = append(grown, make([]byte, MaxSecretValueBytes)...)
	}
	var want []string
	for _, k := range []string{SecretPKCS12, SecretPKCS12Trust, SecretJKS, SecretJKSTrust} {
		want = append(want, fmt.Sprintf("%s is %d bytes, over the limit of 1048576; it was not opened", k, len(data[k])))
	}
	assert.Equal(t, want, DataMismatches(data, p, out))
}

package keys

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestX509Usages(t *testing.T) {
	rsaKey := mustKey(t, KeySpec{Algorithm: AlgorithmRSA, Size: 2048}).Public()
	ecKey := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA}).Public()
	edKey := mustKey(t, KeySpec{Algorithm: AlgorithmEd25519}).Public()
	tests := map[string]struct {
		usages []Usage
		isCA   bool
		key    crypto.PublicKey
		ku     x509.KeyUsage
		eku    []x509.ExtKeyUsage
		err    string
	}{
		// RFC 3279 §2.3.1: key encipherment for RSA key transport.
		"none, an RSA leaf: digital signature and key encipherment": {key: rsaKey, ku: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment},
		// RFC 8813 §3: no key encipherment for an ECDSA key.
		"none, an ECDSA leaf: digital signature only":   {key: ecKey, ku: x509.KeyUsageDigitalSignature},
		"none, an Ed25519 leaf: digital signature only": {key: edKey, ku: x509.KeyUsageDigitalSignature},
		"none, no key known: digital signature only":    {ku: x509.KeyUsageDigitalSignature},
		// RFC 5280 §4.2.1.3, RFC 3279 §2.3.1: a CA signs certificates and CRLs.
		"none, an RSA CA: cert sign, CRL sign, digital signature, never key encipherment": {key: rsaKey, isCA: true,
			ku: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign | x509.KeyUsageCRLSign},
		"none, an ECDSA CA: the same": {key: ecKey, isCA: true, ku: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign | x509.KeyUsageCRLSign},
		"listed usages are kept as they are, whatever the key": {key: ecKey, usages: []Usage{UsageDigitalSignature, UsageKeyEncipherment},
			ku: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment},
		"server and client auth": {usages: []Usage{UsageDigitalSignature, UsageServerAuth, UsageClientAuth},
			ku: x509.KeyUsageDigitalSignature, eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		"signing is digital signature, and repeats are dropped": {usages: []Usage{UsageSigning, UsageDigitalSignature, UsageCodeSigning, UsageCodeSigning},
			ku: x509.KeyUsageDigitalSignature, eku: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}},
		"a CA adds cert sign": {usages: []Usage{UsageCRLSign}, isCA: true, ku: x509.KeyUsageCRLSign | x509.KeyUsageCertSign},
		"an unknown usage":    {usages: []Usage{UsageServerAuth, "teleport"}, err: `keys: usages[1]: "teleport" is not a known usage`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ku, eku, err := X509Usages(tc.usages, tc.isCA, tc.key)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ku, ku)
			assert.Equal(t, tc.eku, eku)
		})
	}
}

// A certificate issued with X509Usages's answer carries what CompareCSR
// expects of a request for the same usages: for every known usage, alone
// and with isCA.
func TestX509UsagesAgreeWithRequests(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	var all []Usage
	for u := range x509ExtKeyUsages {
		all = append(all, u)
	}
	for _, u := range []Usage{UsageSigning, UsageDigitalSignature, UsageContentCommitment, UsageKeyEncipherment, UsageKeyAgreement,
		UsageDataEncipherment, UsageCertSign, UsageCRLSign, UsageEncipherOnly, UsageDecipherOnly} {
		all = append(all, u)
	}
	for _, u := range all {
		for _, isCA := range []bool{false, true} {
			tmpl := RequestTemplate{CommonName: "a.example", Usages: []Usage{u}, IsCA: isCA}
			csrPEM, err := BuildCSR(rand.Reader, tmpl, key)
			require.NoError(t, err)
			csr, err := ParseCSR(csrPEM)
			require.NoError(t, err)
			ku, eku, err := X509Usages(tmpl.Usages, isCA, key.Public())
			require.NoError(t, err)
			// What the CSR asks and what the issuer grants compare equal.
			wantKU, wantEKU, _ := requestUsages(csr)
			cert := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
				KeyUsage: ku, ExtKeyUsage: eku, BasicConstraintsValid: true, IsCA: isCA}
			der, err := x509.CreateCertificate(rand.Reader, cert, cert, key.Public(), key)
			require.NoError(t, err)
			parsed, err := x509.ParseCertificate(der)
			require.NoError(t, err)
			assert.Equal(t, wantKU, parsed.KeyUsage, "%s isCA=%v", u, isCA)
			var got []string
			for _, e := range parsed.ExtKeyUsage {
				for k, v := range x509ExtKeyUsages {
					if v == e {
						got = append(got, extKeyUsages[k].String())
					}
				}
			}
			assert.ElementsMatch(t, wantEKU, got, "%s isCA=%v", u, isCA)
		}
	}
}

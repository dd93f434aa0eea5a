package keys

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// DataMismatches lists how a secret's data differs from what SecretData
// writes for the key and chain the secret already holds, under out. Each
// entry names the data key and what is wrong with it ("keystore.p12 is
// missing", "key.der is no longer asked for"); nil means the data is in
// line. p is the secret's parse (ParseSecretData of the same data); with no
// decodable key and matching leaf there is nothing to compare against, and
// the result is nil — re-issuing, not repairing, is the answer then.
//
// tls.key must be in out.KeyEncoding (its PEM block type: the key itself is
// p's). What else SecretData makes without randomness is compared byte for
// byte: tls-combined.pem and key.der. Keystores carry random salts, so they
// are opened with their passwords instead and must hold this key and chain
// (and the CA from ca.crt in the truststores), in the PKCS#12 profile or
// under the JKS alias out names. A keystore that cannot be opened — wrong
// password, another profile, damaged bytes — is stale. Opening a PKCS#12
// file runs its password-based key derivation; a PKCS#12 file that asks for
// more than MaxKeystoreIterations is stale and is not opened, so a Secret
// written with a huge count cannot stall the check. JKS has no work factor,
// but a JKS file whose declared lengths or counts overrun its bytes is stale
// and is not opened either: the JKS reader would allocate what it declares,
// and a 40-byte file can ask for 160 GB. A keystore beyond
// MaxSecretValueBytes is stale and is not opened, and a tls.crt or ca.crt
// beyond MaxSecretValueBytes or MaxCertificates is not read (see
// ParseSecretData).
//
// ca.crt is not judged: only the issuer knows what it should be. The check
// is pure: it reads only its arguments and never includes key material or
// passwords in what it returns.
func DataMismatches(data map[string][]byte, p *ParsedSecret, out OutputSpec) []string {
	if p == nil || p.Key == nil || p.Leaf == nil || !p.KeyMatches {
		return nil
	}
	var m []string
	absent := func(k string) {
		if len(data[k]) > 0 {
			m = append(m, k+" is no longer asked for")
		}
	}
	// tls.key holds the secret's key (p says so); whether it is in the
	// asked encoding is its PEM block's type.
	wantType, err := privateKeyPEMType(p.Key, out.KeyEncoding)
	if err != nil {
		return []string{SecretPrivateKey + ": " + err.Error()}
	}
	if keyPEMType(data, p) != wantType {
		enc := out.KeyEncoding
		if enc == "" {
			enc = EncodingPKCS1
		}
		m = append(m, SecretPrivateKey+" is not in the "+string(enc)+" encoding")
	}
	chainPEM := data[SecretCertificate]
	if out.CombinedPEM {
		keyPEM, err := EncodePrivateKey(p.Key, out.KeyEncoding)
		if err != nil || !bytes.Equal(data[SecretCombinedPEM], combinedPEM(keyPEM, chainPEM)) {
			m = append(m, describe(SecretCombinedPEM, data, "does not hold the key and chain of tls.key and tls.crt"))
		}
	} else {
		absent(SecretCombinedPEM)
	}
	if out.DER {
		der, err := x509.MarshalPKCS8PrivateKey(p.Key)
		if err != nil || !bytes.Equal(data[SecretKeyDER], der) {
			m = append(m, describe(SecretKeyDER, data, "does not hold the key of tls.key"))
		}
	} else {
		absent(SecretKeyDER)
	}
	if out.PKCS12 == nil && out.JKS == nil {
		absent(SecretPKCS12)
		absent(SecretPKCS12Trust)
		absent(SecretJKS)
		absent(SecretJKSTrust)
		return m
	}
	chain, err := parseCertificates(chainPEM)
	if err != nil || len(chain) == 0 {
		return append(m, "tls.crt cannot be read to check the keystores")
	}
	cas, caErr := parseCertificates(data[SecretCA])
	if caErr != nil {
		cas = nil
	}
	if k := out.PKCS12; k != nil {
		m = append(m, pkcs12Mismatches(data, p, chain, cas, k)...)
	} else {
		absent(SecretPKCS12)
		absent(SecretPKCS12Trust)
	}
	if k := out.JKS; k != nil {
		m = append(m, jksMismatches(data, p, chain, cas, k)...)
	} else {
		absent(SecretJKS)
		absent(SecretJKSTrust)
	}
	return m
}

// describe says "k is missing" or "k <what>".
func describe(k string, data map[string][]byte, what string) string {
	if len(data[k]) == 0 {
		return k + " is missing"
	}
	return k + " " + what
}

// combinedPEM is tls-combined.pem as SecretData writes it.
func combinedPEM(keyPEM, chainPEM []byte) []byte {
	combined := make([]byte, 0, len(keyPEM)+len(chainPEM)+1)
	combined = append(combined, keyPEM...)
	if len(combined) > 0 && combined[len(combined)-1] != '\n' {
		combined = append(combined, '\n')
	}
	return append(combined, chainPEM...)
}

func pkcs12Mismatches(data map[string][]byte, p *ParsedSecret, chain, cas []*x509.Certificate, spec *PKCS12Spec) []string {
	var m []string
	profile := spec.Profile
	if profile == "" {
		profile = PKCS12Modern
	}
	ks := data[SecretPKCS12]
	ksInfo := inspectPKCS12(boundedKeystore(ks))
	switch {
	case len(ks) == 0:
		m = append(m, SecretPKCS12+" is missing")
	case len(ks) > MaxSecretValueBytes:
		m = append(m, tooLargeKeystore(SecretPKCS12, len(ks)))
	case ksInfo.profile != profile:
		m = append(m, fmt.Sprintf("%s is not in the %s profile", SecretPKCS12, profile))
	case ksInfo.iterations > MaxKeystoreIterations:
		m = append(m, tooManyIterations(SecretPKCS12, ksInfo.iterations))
	default:
		key, leaf, rest, err := pkcs12.DecodeChain(ks, string(spec.Password))
		switch {
		case err != nil:
			m = append(m, SecretPKCS12+" cannot be opened with the password of spec (changed, or the keystore is damaged)")
		case !PublicKeysEqual(key, p.Key.Public()) || !bytes.Equal(leaf.Raw, chain[0].Raw) || !sameCertificates(rest, chain[1:]):
			m = append(m, SecretPKCS12+" does not hold the key and chain of tls.key and tls.crt")
		}
	}
	ts := data[SecretPKCS12Trust]
	tsInfo := inspectPKCS12(boundedKeystore(ts))
	switch {
	case len(cas) == 0:
		if len(ts) > 0 {
			m = append(m, SecretPKCS12Trust+" is there but ca.crt holds no CA")
		}
	case len(ts) == 0:
		m = append(m, SecretPKCS12Trust+" is missing")
	case len(ts) > MaxSecretValueBytes:
		m = append(m, tooLargeKeystore(SecretPKCS12Trust, len(ts)))
	case tsInfo.profile != profile:
		m = append(m, fmt.Sprintf("%s is not in the %s profile", SecretPKCS12Trust, profile))
	case tsInfo.iterations > MaxKeystoreIterations:
		m = append(m, tooManyIterations(SecretPKCS12Trust, tsInfo.iterations))
	default:
		certs, err := pkcs12.DecodeTrustStore(ts, string(spec.Password))
		switch {
		case err != nil:
			m = append(m, SecretPKCS12Trust+" cannot be opened with the password of spec (changed, or the truststore is damaged)")
		case !sameCertificates(certs, cas):
			m = append(m, SecretPKCS12Trust+" does not hold the CA of ca.crt")
		}
	}
	return m
}

// boundedKeystore is b, or nil when b is beyond MaxSecretValueBytes: a
// keystore that large is stale and is not read.
func boundedKeystore(b []byte) []byte {
	if len(b) > MaxSecretValueBytes {
		return nil
	}
	return b
}

// tooLargeKeystore says a keystore is beyond MaxSecretValueBytes, so it
// was not opened.
func tooLargeKeystore(k string, n int) string {
	return fmt.Sprintf("%s is %d bytes, over the limit of %d; it was not opened", k, n, MaxSecretValueBytes)
}

// tooManyIterations says a keystore asks for more key derivation than
// certlife writes, so it was not opened.
func tooManyIterations(k string, n int) string {
	return fmt.Sprintf("%s asks for %d key-derivation iterations, more than the %d certlife writes; it was not opened", k, n, MaxKeystoreIterations)
}

func jksMismatches(data map[string][]byte, p *ParsedSecret, chain, cas []*x509.Certificate, spec *JKSSpec) []string {
	var m []string
	alias := spec.Alias
	if alias == "" {
		alias = DefaultJKSAlias
	}
	pw := []byte(spec.Password)
	if ks := data[SecretJKS]; len(ks) == 0 {
		m = append(m, SecretJKS+" is missing")
	} else if len(ks) > MaxSecretValueBytes {
		m = append(m, tooLargeKeystore(SecretJKS, len(ks)))
	} else {
		store := keystore.New()
		var entry keystore.PrivateKeyEntry
		err := errJKSUnbounded
		if jksBounded(ks) {
			err = store.Load(bytes.NewReader(ks), pw)
		}
		if err == nil {
			entry, err = store.GetPrivateKeyEntry(alias, pw)
		}
		pkcs8, kerr := x509.MarshalPKCS8PrivateKey(p.Key)
		switch {
		case err != nil:
			m = append(m, fmt.Sprintf("%s has no key entry %q that opens with the password of spec", SecretJKS, alias))
		case kerr != nil || !bytes.Equal(entry.PrivateKey, pkcs8) || len(store.Aliases()) != 1 ||
			!sameJKSChain(entry.CertificateChain, append(slices.Clip(chain), cas...)):
			m = append(m, SecretJKS+" does not hold the key and chain of tls.key, tls.crt and ca.crt")
		}
	}
	ts := data[SecretJKSTrust]
	switch {
	case len(cas) == 0:
		if len(ts) > 0 {
			m = append(m, SecretJKSTrust+" is there but ca.crt holds no CA")
		}
	case len(ts) == 0:
		m = append(m, SecretJKSTrust+" is missing")
	case len(ts) > MaxSecretValueBytes:
		m = append(m, tooLargeKeystore(SecretJKSTrust, len(ts)))
	default:
		store := keystore.New()
		if !jksBounded(ts) || store.Load(bytes.NewReader(ts), pw) != nil {
			m = append(m, SecretJKSTrust+" cannot be opened with the password of spec (changed, or the truststore is damaged)")
			break
		}
		if !sameTrustEntries(store, cas) {
			m = append(m, SecretJKSTrust+" does not hold the CA of ca.crt")
		}
	}
	return m
}

// errJKSUnbounded stands for a load refused by jksBounded.
var errJKSUnbounded = errors.New("keys: a JKS file declares more than it holds")

// sameTrustEntries reports whether a JKS truststore holds exactly the
// CAs, under the aliases SecretData gives them.
func sameTrustEntries(store keystore.KeyStore, cas []*x509.Certificate) bool {
	if len(store.Aliases()) != len(cas) {
		return false
	}
	for i, c := range cas {
		name := "ca"
		if i > 0 {
			name = fmt.Sprintf("ca-%d", i)
		}
		e, err := store.GetTrustedCertificateEntry(name)
		if err != nil || !bytes.Equal(e.Certificate.Content, c.Raw) {
			return false
		}
	}
	return true
}

func sameJKSChain(have []keystore.Certificate, want []*x509.Certificate) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if !bytes.Equal(have[i].Content, want[i].Raw) {
			return false
		}
	}
	return true
}

func sameCertificates(a, b []*x509.Certificate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Raw, b[i].Raw) {
			return false
		}
	}
	return true
}

// keyPEMType is the type of tls.key's first PEM block: as p read it, when
// p was read from the same tls.key, else read from data.
func keyPEMType(data map[string][]byte, p *ParsedSecret) string {
	if p.keyType != "" && bytes.Equal(p.keyPEM, data[SecretPrivateKey]) {
		return p.keyType
	}
	if block, _ := pem.Decode(data[SecretPrivateKey]); block != nil {
		return block.Type
	}
	return ""
}

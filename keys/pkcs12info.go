package keys

import (
	"crypto/x509/pkix"
	"encoding/asn1"
)

// MaxKeystoreIterations is the most key-derivation iterations
// DataMismatches lets a PKCS#12 keystore or truststore ask for. certlife
// writes 2048 (every profile of go-pkcs12 it uses); a file that declares
// more anywhere it can be read without the password — its MAC, an
// encrypted bag of certificates, a shrouded key — is reported as drift and
// rewritten, without being opened. Opening such a file would run the
// derivation: four million iterations take seconds, on every pass, so
// anyone who can write a Secret could stall the host's workers.
const MaxKeystoreIterations = 2048

// PKCS#12 object identifiers (RFC 7292, RFC 8018, RFC 9579).
var (
	oidPKCS12Data          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidEncryptedData       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 6}
	oidPKCS8ShroudedKeyBag = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
	oidPBES2               = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2              = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidPBMAC1              = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 14}
	oidPKCS12PBE           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1} // pbeWithSHAAnd… (RFC 7292 Appendix C)
	oidPBEWithSHARC2       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 6}
	oidPBEWithSHA3DES      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 3}
)

// The PKCS#12 structures read before a file is opened (RFC 7292 §4,
// Appendix C; RFC 8018 Appendix A.2, A.4; RFC 9579 for PBMAC1).
type (
	p12PFX struct {
		Version  int
		AuthSafe p12ContentInfo
		MacData  p12MacData `asn1:"optional"`
	}
	p12ContentInfo struct {
		ContentType asn1.ObjectIdentifier
		Content     asn1.RawValue `asn1:"tag:0,explicit,optional"`
	}
	p12MacData struct {
		Mac        p12DigestInfo
		MacSalt    []byte
		Iterations int `asn1:"optional,default:1"`
	}
	p12DigestInfo struct {
		Algorithm pkix.AlgorithmIdentifier
		Digest    []byte
	}
	p12EncryptedData struct {
		Version              int
		EncryptedContentInfo p12EncryptedContentInfo
	}
	p12EncryptedContentInfo struct {
		ContentType      asn1.ObjectIdentifier
		Algorithm        pkix.AlgorithmIdentifier
		EncryptedContent []byte `asn1:"tag:0,optional"`
	}
	p12SafeBag struct {
		ID         asn1.ObjectIdentifier
		Value      asn1.RawValue   `asn1:"tag:0,explicit"`
		Attributes []asn1.RawValue `asn1:"set,optional"`
	}
	p12EncryptedPrivateKeyInfo struct {
		Algorithm     pkix.AlgorithmIdentifier
		EncryptedData []byte
	}
	p12PBEParams struct {
		Salt       []byte
		Iterations int
	}
	p12PBES2Params struct { // also PBMAC1's: a KDF and a scheme
		KDF    pkix.AlgorithmIdentifier
		Scheme pkix.AlgorithmIdentifier
	}
	p12PBKDF2Params struct {
		Salt       asn1.RawValue
		Iterations int
		KeyLength  int                      `asn1:"optional"`
		PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
	}
)

// pkcs12Info is what can be read from a PKCS#12 file without its
// password.
type pkcs12Info struct {
	// profile is the profile SecretData writes with these algorithms,
	// from the first encrypted bag; "" when it cannot tell.
	profile PKCS12Profile
	// iterations is the largest key-derivation iteration count declared
	// where it can be read without the password (the MAC, each encrypted
	// content, each shrouded key in plain content); 0 when the file
	// cannot be read.
	iterations int
}

// inspectPKCS12 reads a PKCS#12 file's profile and the work its key
// derivations ask for, without deriving a key, with encoding/asn1. A file
// in a shape it cannot read (BER from another tool, a key-derivation
// function go-pkcs12 does not run, a count that is not positive) has no
// profile, so it is rewritten once, in DER, without being opened.
//
// A shrouded key inside an encrypted content has a count that only the
// password reveals; files certlife writes keep shrouded keys in plain
// content, whose counts are read here.
func inspectPKCS12(der []byte) pkcs12Info {
	var pfx p12PFX
	if rest, err := asn1.Unmarshal(der, &pfx); err != nil || len(rest) > 0 || !pfx.AuthSafe.ContentType.Equal(oidPKCS12Data) {
		return pkcs12Info{}
	}
	var info pkcs12Info
	ok := true
	count := func(n int, good bool) {
		ok = ok && good && n > 0
		info.iterations = max(info.iterations, n)
	}
	if len(pfx.MacData.Mac.Algorithm.Algorithm) > 0 {
		if pfx.MacData.Mac.Algorithm.Algorithm.Equal(oidPBMAC1) {
			count(pbkdf2Iterations(pfx.MacData.Mac.Algorithm.Parameters))
		} else {
			count(pfx.MacData.Iterations, true)
		}
	}
	var content []byte
	var safe []p12ContentInfo
	if !unmarshalAll(pfx.AuthSafe.Content.Bytes, &content) || !unmarshalAll(content, &safe) {
		return pkcs12Info{}
	}
	found := false
	for _, ci := range safe {
		switch {
		case ci.ContentType.Equal(oidEncryptedData):
			var ed p12EncryptedData
			if !unmarshalAll(ci.Content.Bytes, &ed) {
				return pkcs12Info{}
			}
			alg := ed.EncryptedContentInfo.Algorithm
			count(encryptionIterations(alg))
			if !found {
				found = true
				switch {
				case alg.Algorithm.Equal(oidPBES2):
					info.profile = PKCS12Modern
				case alg.Algorithm.Equal(oidPBEWithSHARC2):
					info.profile = PKCS12LegacyRC2
				case alg.Algorithm.Equal(oidPBEWithSHA3DES):
					info.profile = PKCS12LegacyDES
				}
			}
		case ci.ContentType.Equal(oidPKCS12Data):
			var bags []p12SafeBag
			if !unmarshalAll(ci.Content.Bytes, &content) || !unmarshalAll(content, &bags) {
				return pkcs12Info{}
			}
			for _, bag := range bags {
				if !bag.ID.Equal(oidPKCS8ShroudedKeyBag) {
					continue
				}
				var epki p12EncryptedPrivateKeyInfo
				if !unmarshalAll(bag.Value.Bytes, &epki) {
					return pkcs12Info{}
				}
				count(encryptionIterations(epki.Algorithm))
			}
		}
	}
	if !ok {
		// Something it cannot read: no profile, so the file is rewritten
		// rather than opened.
		return pkcs12Info{iterations: info.iterations}
	}
	return info
}

// encryptionIterations is the iteration count of a password-based
// encryption: PBES2 with PBKDF2, or one of PKCS#12's own PBE schemes.
func encryptionIterations(alg pkix.AlgorithmIdentifier) (int, bool) {
	switch {
	case alg.Algorithm.Equal(oidPBES2):
		return pbkdf2Iterations(alg.Parameters)
	case len(alg.Algorithm) == len(oidPKCS12PBE)+1 && alg.Algorithm[:len(oidPKCS12PBE)].Equal(oidPKCS12PBE):
		var p p12PBEParams
		if !unmarshalAll(alg.Parameters.FullBytes, &p) {
			return 0, false
		}
		return p.Iterations, true
	}
	return 0, false
}

// pbkdf2Iterations reads the PBKDF2 iteration count of PBES2 or PBMAC1
// parameters (both start with the KDF's AlgorithmIdentifier).
func pbkdf2Iterations(params asn1.RawValue) (int, bool) {
	var p p12PBES2Params
	var kdf p12PBKDF2Params
	if !unmarshalAll(params.FullBytes, &p) || !p.KDF.Algorithm.Equal(oidPBKDF2) || !unmarshalAll(p.KDF.Parameters.FullBytes, &kdf) {
		return 0, false
	}
	return kdf.Iterations, true
}

// unmarshalAll is asn1.Unmarshal that also refuses trailing bytes.
func unmarshalAll(der []byte, v any) bool {
	rest, err := asn1.Unmarshal(der, v)
	return err == nil && len(rest) == 0
}

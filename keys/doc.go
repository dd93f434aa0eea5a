// Package keys holds the effects and checks around private keys,
// certificate signing requests and certificate secrets that certlife's
// decisions rely on.
//
// Decisions in package certificate never generate keys or sign anything:
// they return actions. A host carries out a key action with [Generate] and
// [EncodePrivateKey], a request action with [BuildCSR], an issue action
// with [SecretData], and a temporary certificate action with
// [TemporaryCertificate]; each takes a caller-supplied io.Reader for
// randomness.
//
// A [RequestTemplate] holds what cert-manager's Certificate spec asks of a
// request: the subject as fields or as an RFC 4514 string
// ([ParseLiteralSubject]), subject alternative names with [OtherName]
// entries, usages (encoded in the request or not), isCA and a CA's
// [NameConstraints]. [BuildCSR] encodes them as the reference operator
// does, and [ParseNameConstraints] carries a request's name constraints
// into a CA certificate.
//
// The checks are pure: they read only their arguments, so the trigger can
// run them on every reconcile of every certificate:
//
//   - [KeySpec] and [KeySpec.Validate]: RSA 2048–8192, ECDSA P-256/384/521,
//     Ed25519; PKCS#1 or PKCS#8 encoding; rotation Always or Never.
//   - [SpecMismatches] and [PublicKeysEqual]: does a key meet a spec, is a
//     certificate's, request's and private key's public key the same.
//   - [CompareCSR] and [CompareCertificateNames]: every difference between a
//     request or an issued certificate and what the certificate asks.
//   - [ParseSecretData]: a secret's tls.crt and tls.key parsed once, with a
//     per-field error, the chain parsed only when asked. The result is
//     immutable, so hosts may cache it by resource version. Data beyond
//     [MaxSecretValueBytes], [MaxCertificates] or [MaxPrivateKeyBytes] is
//     not parsed ([ErrTooLarge]): whoever can write a secret cannot make
//     a decision on it slow.
//   - [ParseCache]: what [DecodePrivateKey], [ParseSecretData],
//     [DecodeCertificateRequest] and x509.ParseCertificate make of some
//     bytes, kept by content within a bound, so that a host deciding on the
//     same objects pass after pass parses each once; the answers are the
//     same as without it.
//   - [ParseCSR]: a PEM request read with crypto/x509 and its signature
//     checked.
//   - [IsTemporaryCertificate]: a placeholder certificate, certlife's or
//     the reference operator's, not an issued one.
//
// Private key material never appears in String, in any fmt verb, or in an
// error: [ParsedSecret] and [Password] redact themselves, and parse errors
// name the field, never its bytes.
package keys

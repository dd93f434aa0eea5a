package certificate

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"slices"
	"strconv"

	"github.com/certlife/certlife/keys"
)

// specFingerprint hashes what a request is made from, in a canonical form:
// name lists as sorted sets, IPs normalised, default usages and issuer
// fields filled in. Two specs that ask the same request get the same value.
// It is stamped on each request (AnnotationSpecFingerprint) so that a
// healthy pass compares one hash instead of the request's CSR.
func specFingerprint(s *Spec) string {
	sum := specFingerprintSum(s)
	return hex.EncodeToString(sum[:])
}

// fingerprintMatches reports whether a request's fingerprint annotation is
// the spec's, without allocating.
func fingerprintMatches(annotation string, s *Spec) bool {
	if len(annotation) != sha256.Size {
		return false
	}
	sum := specFingerprintSum(s)
	var enc [sha256.Size]byte
	hex.Encode(enc[:], sum[:])
	return string(enc[:]) == annotation
}

// specFingerprintSum builds the canonical form on the stack for the usual
// spec (a few names) and hashes it; the first 16 bytes of SHA-256 are kept.
//
// The form: one line per field, "name" then each value after a NUL byte;
// sets sorted and without duplicates.
func specFingerprintSum(s *Spec) [sha256.Size / 2]byte {
	var stack [512]byte
	b := stack[:0]
	field := func(b []byte, name string, vals ...string) []byte {
		b = append(b, name...)
		for _, v := range vals {
			b = append(b, 0)
			b = append(b, v...)
		}
		return append(b, '\n')
	}
	b = field(b, "cn", s.CommonName)
	b = appendSet(b, "dns", s.DNSNames, nil)
	b = appendSet(b, "ip", s.IPAddresses, normaliseIP)
	b = appendSet(b, "uri", s.URIs, nil)
	b = appendSet(b, "email", s.EmailAddresses, nil)
	if sub := s.Subject; sub != nil {
		b = appendSet(b, "o", sub.Organizations, nil)
		b = appendSet(b, "c", sub.Countries, nil)
		b = appendSet(b, "ou", sub.OrganizationalUnits, nil)
		b = appendSet(b, "l", sub.Localities, nil)
		b = appendSet(b, "st", sub.Provinces, nil)
		b = appendSet(b, "street", sub.StreetAddresses, nil)
		b = appendSet(b, "postal", sub.PostalCodes, nil)
		b = field(b, "serial", sub.SerialNumber)
	}
	usages := s.Usages
	if len(usages) == 0 {
		usages = keys.DefaultUsages
	}
	var ubuf [8]string
	u := ubuf[:0]
	for _, x := range usages {
		u = append(u, string(x))
	}
	b = appendSet(b, "usages", u, nil)
	b = field(b, "ca", strconv.FormatBool(s.IsCA))
	ref := s.IssuerRef.WithDefaults()
	b = field(b, "issuer", ref.Name, ref.Kind, ref.Group)
	b = field(b, "duration", durationOf(s.Duration).String())
	full := sha256.Sum256(b)
	var out [sha256.Size / 2]byte
	copy(out[:], full[:])
	return out
}

// appendSet appends "name" and the values, normalised by norm when it is
// set, sorted and without duplicates. Up to 8 values are sorted on the
// stack.
func appendSet(b []byte, name string, vals []string, norm func(string) string) []byte {
	var buf [8]string
	c := buf[:0]
	if len(vals) > len(buf) {
		c = make([]string, 0, len(vals))
	}
	for _, v := range vals {
		if norm != nil {
			v = norm(v)
		}
		c = append(c, v)
	}
	slices.Sort(c)
	c = slices.Compact(c)
	b = append(b, name...)
	for _, v := range c {
		b = append(b, 0)
		b = append(b, v...)
	}
	return append(b, '\n')
}

// normaliseIP writes an IP the way Go prints it, so "::ffff:1.2.3.4" and
// "1.2.3.4" are one address; what does not parse is kept as written.
func normaliseIP(ip string) string {
	if p := net.ParseIP(ip); p != nil {
		return p.String()
	}
	return ip
}

// Compiled is what a host may cache about a certificate's spec between
// passes, keyed by the certificate's metadata.generation: the spec's
// validation and the fingerprint its requests carry. With it, a healthy
// pass compares one string where it would otherwise validate the spec and
// compare the current request's CSR with it.
//
// It is an input like any other: Reconcile reads it only when its
// generation equals the certificate's and is not zero, so a stale entry is
// ignored rather than trusted. A host whose store does not bump the
// generation on every spec change (the Kubernetes API server does) must
// not pass it.
type Compiled struct {
	// Generation is the certificate's metadata.generation at compilation.
	Generation int64

	err         error
	fingerprint string
}

// Compile validates the certificate's spec and computes its request
// fingerprint, for Snapshot.Compiled.
func Compile(c *Certificate) *Compiled {
	if c == nil {
		return nil
	}
	return &Compiled{Generation: c.Generation, err: Validate(&c.Spec), fingerprint: specFingerprint(&c.Spec)}
}

// Err is the spec's validation error (Validate), nil when it is valid.
func (c *Compiled) Err() error { return c.err }

// compiled returns the snapshot's compiled spec when it is for this
// generation of the certificate, else nil.
func (s *Snapshot) compiled() *Compiled {
	if k := s.Compiled; k != nil && s.Certificate != nil && k.Generation != 0 && k.Generation == s.Certificate.Generation {
		return k
	}
	return nil
}

// validate is Validate, from the compiled spec when the host has it.
func (s *Snapshot) validate() error {
	if k := s.compiled(); k != nil {
		return k.err
	}
	return Validate(&s.Certificate.Spec)
}

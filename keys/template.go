package keys

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"net/url"
	"unicode/utf8"
)

// Validate names every problem of the template that keeps BuildCSR or
// TemporaryCertificate from encoding it, as *TemplateError values whose
// Field is the template's JSON field path ("emailAddresses[0]",
// "subject.organizations[1]", "nameConstraints.permitted.dnsDomains[0]";
// "" for the template as a whole), joined; nil when there is none. Both
// refuse a template it refuses, with its errors. It checks encoding, not
// policy: what a certificate may not carry although it can be written
// (a DNS name with an underscore, a common name over 64 bytes) is
// certificate.Validate's to refuse.
//
// The rules: a common name or at least one subject alternative name; a
// literal subject that ParseLiteralSubject reads, not beside a common
// name or subject fields; subject attributes in UTF-8; DNS names, email
// addresses and URIs in ASCII, as a certificate carries them
// (IA5String, RFC 5280 §4.2.1.6: an internationalised domain in its
// xn-- form; an email address with a non-ASCII mailbox (RFC 6531) has no
// place in rfc822Name); URIs absolute (with a scheme) and written as
// crypto/x509 writes them back (net/url's String), so that a request
// reads back as its template; IP addresses net.ParseIP reads; known
// usages; valid other names and name constraints.
func (t RequestTemplate) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &TemplateError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	indexed := func(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }
	if t.LiteralSubject != "" {
		if t.CommonName != "" || !t.Subject.IsEmpty() {
			add("literalSubject", "may not be set together with commonName or subject")
		}
		if _, _, err := literalSubjectDER(t.LiteralSubject); err != nil {
			add("literalSubject", "%q: %v", t.LiteralSubject, err)
		}
	}
	if t.commonName() == "" && len(t.DNSNames)+len(t.IPAddresses)+len(t.URIs)+len(t.EmailAddresses)+len(t.OtherNames) == 0 {
		add("", "no common name and no subject alternative names")
	}
	if !utf8.ValidString(t.CommonName) {
		add("commonName", "%q is not valid UTF-8", t.CommonName)
	}
	if s := t.Subject; s != nil {
		for _, f := range []struct {
			field  string
			values []string
		}{
			{"subject.organizations", s.Organizations}, {"subject.countries", s.Countries},
			{"subject.organizationalUnits", s.OrganizationalUnits}, {"subject.localities", s.Localities},
			{"subject.provinces", s.Provinces}, {"subject.streetAddresses", s.StreetAddresses},
			{"subject.postalCodes", s.PostalCodes},
		} {
			for i, v := range f.values {
				if !utf8.ValidString(v) {
					add(indexed(f.field, i), "%q is not valid UTF-8", v)
				}
			}
		}
		if !utf8.ValidString(s.SerialNumber) {
			add("subject.serialNumber", "%q is not valid UTF-8", s.SerialNumber)
		}
	}
	for i, n := range t.DNSNames {
		if !isASCII(n) {
			add(indexed("dnsNames", i), "%q has non-ASCII characters, which a certificate cannot carry (IA5String, RFC 5280 §4.2.1.6): write an internationalised name in its xn-- form", n)
		}
	}
	for i, e := range t.EmailAddresses {
		if !isASCII(e) {
			add(indexed("emailAddresses", i), "%q has non-ASCII characters, which a certificate's email address cannot carry (IA5String, RFC 5280 §4.2.1.6; RFC 6531 mailboxes are not supported)", e)
		}
	}
	for i, s := range t.IPAddresses {
		if net.ParseIP(s) == nil {
			add(indexed("ipAddresses", i), "%q is not an IP address", s)
		}
	}
	for i, s := range t.URIs {
		if why := uriProblem(s); why != "" {
			add(indexed("uris", i), "%q %s", s, why)
		}
	}
	for i, o := range t.OtherNames {
		for _, e := range templateErrors(o.Validate()) {
			add(indexed("otherNames", i)+"."+e.Field, "%s", e.Message)
		}
	}
	for i, u := range t.Usages {
		if !KnownUsage(u) {
			add(indexed("usages", i), "%q is not a known usage", u)
		}
	}
	for _, e := range templateErrors(t.NameConstraints.Validate()) {
		field := "nameConstraints"
		if e.Field != field {
			field += "." + e.Field
		}
		add(field, "%s", e.Message)
	}
	return errors.Join(errs...)
}

// uriProblem says what keeps s from being a URI subject alternative name
// that reads back as written, "" when nothing does.
func uriProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Scheme == "":
		return "is not an absolute URI (scheme:rest, such as spiffe://cluster.local/ns/app)"
	case !isASCII(s):
		return "has non-ASCII characters, which a certificate cannot carry (IA5String, RFC 5280 §4.2.1.6): percent-encode them"
	case u.String() != s:
		return fmt.Sprintf("is not in the form a certificate carries it: write %q", u.String())
	}
	return ""
}

// templateErrors lists the *TemplateError values in err, which may join
// several.
func templateErrors(err error) []*TemplateError {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []*TemplateError
	for _, e := range errs {
		var te *TemplateError
		if errors.As(e, &te) {
			out = append(out, te)
		}
	}
	return out
}

// trialKey signs the requests CheckTemplate builds: an Ed25519 key from a
// fixed seed, whose signatures need no randomness.
var trialKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// zeroReader reads zeros: CheckTemplate's randomness, which an Ed25519
// signature does not read.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// CheckTemplate reports whether BuildCSR builds a request for t: it builds
// one, signed by a fixed Ed25519 key, and returns BuildCSR's error. What a
// request is made of does not depend on the key that signs it, so a
// template CheckTemplate accepts builds with any key BuildCSR supports. It
// reads no randomness and gives the same answer for the same template:
// for a decision that must know before it asks a host to build the
// request. It costs about one Ed25519 signature.
func CheckTemplate(t RequestTemplate) error {
	_, err := BuildCSR(zeroReader{}, t, trialKey)
	return err
}

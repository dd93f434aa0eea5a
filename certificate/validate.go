package certificate

import (
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/certlife/certlife/keys"
)

// ErrInvalidSpec is wrapped by every *FieldError Validate returns.
var ErrInvalidSpec = errors.New("certificate: invalid spec")

// FieldError is one problem of a spec, at a field path such as
// "spec.renewBefore".
type FieldError struct {
	Path    string
	Message string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Message }

// Unwrap lets errors.Is(err, ErrInvalidSpec) match.
func (e *FieldError) Unwrap() error { return ErrInvalidSpec }

// MinDuration is the shortest certificate duration a spec may ask.
const MinDuration = time.Hour

// MinRenewBefore is the shortest renewBefore a spec may ask: less would
// leave no time for an issuance to finish before expiry.
const MinRenewBefore = 5 * time.Minute

// MinTimeBeforeRenewal is the least time a spec may leave between a
// certificate's issuance and its renewal: the duration less renewBefore,
// or the part of the duration renewBeforePercentage leaves. With less, a
// certificate would be due for renewal about as soon as it arrives (an
// issuance takes time, and the CA's clock is not the host's): a new
// certificate on every pass. The duration is spec.duration, or
// DefaultDuration when it is unset.
const MinTimeBeforeRenewal = 10 * time.Minute

// dnsNameProblem says what makes name an invalid DNS name for a
// certificate, "" when it is valid: labels of letters, digits and hyphens
// (neither first nor last), 1 to 63 characters each, at most 253 in all, no
// trailing dot; a wildcard only as the whole leftmost label of a name with
// more labels after it; internationalised names in their ASCII (xn--)
// form.
func dnsNameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > 253:
		return fmt.Sprintf("it is %d characters long, over 253", len(name))
	case strings.HasSuffix(name, "."):
		return "it ends with a dot"
	}
	i := -1
	for l := range strings.SplitSeq(name, ".") { // no slice of labels: this runs on every pass
		i++
		switch {
		case l == "":
			return "it has an empty label"
		case l == "*" && i == 0:
			if name == "*" {
				return "a wildcard needs a domain after it"
			}
			continue
		case strings.Contains(l, "*"):
			return "a wildcard may only be the whole leftmost label"
		case len(l) > 63:
			return fmt.Sprintf("label %q is %d characters long, over 63", l, len(l))
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Sprintf("label %q starts or ends with a hyphen", l)
		}
		for _, r := range l {
			switch {
			case r == ' ':
				return "it contains a space"
			case r > 0x7f:
				return "it has non-ASCII characters: use the ASCII (xn--) form of an internationalised name"
			case r == '_':
				return fmt.Sprintf("label %q has an underscore, which publicly trusted certificates may not carry", l)
			case !(r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'):
				return fmt.Sprintf("label %q has the character %q", l, r)
			}
		}
	}
	return ""
}

// Validate returns every problem of the spec, each a *FieldError with its
// path, joined; nil when the spec is valid. It never panics.
//
// Among others, it refuses what RFC 5280 forbids a certificate to carry:
// subject attributes over their upper bounds or in a string type they
// cannot have (keys.RequestTemplate.ValidateSubject: organizations and
// organizational units over 64 characters, a country that is not two
// characters, a serial number that is not a PrintableString, ...), and the
// usage "cert sign" without isCA. spec.secretName must be a valid object
// name (ValidateObjectName): it names a secret in the certificate's own
// namespace, and no other.
func Validate(s *Spec) error {
	if s == nil {
		return &FieldError{Path: "spec", Message: "is missing"}
	}
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, &FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if s.SecretName == "" {
		add("spec.secretName", "is required")
	} else if e := objectNameError(s.SecretName); e != nil {
		add("spec.secretName", "%s", e.detail())
	}
	commonName := s.CommonName
	if s.LiteralSubject != "" {
		if s.CommonName != "" {
			add("spec.literalSubject", "may not be set together with spec.commonName: put the CN in the literal subject")
		}
		if !s.Subject.IsEmpty() {
			add("spec.literalSubject", "may not be set together with spec.subject: put its attributes in the literal subject")
		}
		if rdns, err := keys.ParseLiteralSubject(s.LiteralSubject); err != nil {
			add("spec.literalSubject", "%q is not an RFC 4514 distinguished name: %v", s.LiteralSubject, err)
		} else {
			var n pkix.Name
			n.FillFromRDNSequence(&rdns)
			commonName = n.CommonName
			if len(commonName) > 64 {
				add("spec.literalSubject", "its CN %q is longer than 64 bytes (X.509 ub-common-name)", commonName)
			}
		}
	}
	if commonName == "" && len(s.DNSNames)+len(s.IPAddresses)+len(s.URIs)+len(s.EmailAddresses)+len(s.OtherNames) == 0 {
		add("spec", "names nothing: set at least one of commonName (or a CN in literalSubject), dnsNames, ipAddresses, uris, emailAddresses, otherNames")
	}
	if len(s.CommonName) > 64 {
		add("spec.commonName", "%q is longer than 64 bytes (X.509 ub-common-name)", s.CommonName)
	}
	for _, e := range templateErrors(s.Template().ValidateSubject()) {
		add("spec."+e.Field, "%s", e.Message)
	}
	for i, o := range s.OtherNames {
		for _, e := range templateErrors(o.Validate()) {
			add(fmt.Sprintf("spec.otherNames[%d].%s", i, e.Field), "%s", e.Message)
		}
	}
	if nc := s.NameConstraints; nc != nil {
		if !s.IsCA {
			add("spec.nameConstraints", "may only be set when spec.isCA is true: name constraints belong in CA certificates (RFC 5280 §4.2.1.10)")
		}
		for _, e := range templateErrors(nc.Validate()) {
			path := "spec.nameConstraints"
			if e.Field != "nameConstraints" {
				path += "." + e.Field
			}
			add(path, "%s", e.Message)
		}
	}
	for i, n := range s.DNSNames {
		if why := dnsNameProblem(n); why != "" {
			add(fmt.Sprintf("spec.dnsNames[%d]", i), "%q is not a valid DNS name: %s", n, why)
		}
	}
	for i, e := range s.EmailAddresses {
		if a, err := mail.ParseAddress(e); err != nil || a.Name != "" || a.Address != e {
			add(fmt.Sprintf("spec.emailAddresses[%d]", i), "%q is not an email address (local-part@domain, nothing around it)", e)
		}
	}
	for i, ip := range s.IPAddresses {
		if net.ParseIP(ip) == nil {
			add(fmt.Sprintf("spec.ipAddresses[%d]", i), "%q is not an IP address", ip)
		}
	}
	for i, u := range s.URIs {
		if p, err := url.Parse(u); err != nil || p.Scheme == "" {
			add(fmt.Sprintf("spec.uris[%d]", i), "%q is not an absolute URI (scheme:rest, such as spiffe://cluster.local/ns/app)", u)
		}
	}
	duration := DefaultDuration
	if s.Duration != nil {
		duration = s.Duration.Duration
		if duration < MinDuration {
			add("spec.duration", "%v is under the minimum of %v", duration, MinDuration)
		}
	}
	durationName := func() string {
		if s.Duration == nil {
			return fmt.Sprintf("the duration %v (the default, spec.duration being unset)", duration)
		}
		return fmt.Sprintf("the duration %v", duration)
	}
	// dueOnArrival words the error of a renewal that leaves the certificate
	// in use for less than MinTimeBeforeRenewal.
	dueOnArrival := func(path string, value any, use time.Duration) {
		add(path, "%v leaves %v of %s before renewal is due, under the minimum of %v: the certificate would be due for renewal as soon as it arrives",
			value, use, durationName(), MinTimeBeforeRenewal)
	}
	if s.RenewBefore != nil {
		rb := s.RenewBefore.Duration
		switch {
		case rb < MinRenewBefore:
			add("spec.renewBefore", "%v is under the minimum of %v", rb, MinRenewBefore)
		case rb >= duration:
			add("spec.renewBefore", "%v is not less than %s", rb, durationName())
		case duration-rb < MinTimeBeforeRenewal:
			dueOnArrival("spec.renewBefore", rb, duration-rb)
		}
	}
	if s.RenewBeforePercentage != nil {
		if s.RenewBefore != nil {
			add("spec.renewBeforePercentage", "may not be set together with spec.renewBefore")
		}
		if p := *s.RenewBeforePercentage; p <= 0 || p >= 100 {
			add("spec.renewBeforePercentage", "%d is outside (0, 100)", p)
		} else if use := duration / 100 * time.Duration(100-p); use < MinTimeBeforeRenewal {
			dueOnArrival("spec.renewBeforePercentage", p, use)
		}
	}
	if s.IssuerRef.Name == "" {
		add("spec.issuerRef.name", "is required")
	}
	if n := len(s.FallbackIssuerRefs); n > MaxFallbackIssuers {
		add("spec.fallbackIssuerRefs", "names %d issuers, over the maximum of %d", n, MaxFallbackIssuers)
	}
	var seen map[IssuerRef]string
	if len(s.FallbackIssuerRefs) > 0 {
		seen = map[IssuerRef]string{s.IssuerRef.WithDefaults(): "spec.issuerRef"}
	}
	for i, r := range s.FallbackIssuerRefs {
		path := fmt.Sprintf("spec.fallbackIssuerRefs[%d]", i)
		if r.Name == "" {
			add(path+".name", "is required")
			continue
		}
		if first, dup := seen[r.WithDefaults()]; dup {
			add(path, "%s is named already, by %s: each issuer may be named once", describeRef(r.WithDefaults()), first)
			continue
		}
		seen[r.WithDefaults()] = path
	}
	for i, u := range s.Usages {
		switch {
		case !keys.KnownUsage(u):
			add(fmt.Sprintf("spec.usages[%d]", i), "%q is not a known usage", u)
		case u == keys.UsageCertSign && !s.IsCA:
			add(fmt.Sprintf("spec.usages[%d]", i), "%q is only for a CA certificate (RFC 5280 §4.2.1.3: a certificate whose key signs certificates must be a CA, §4.2.1.9): set spec.isCA, or drop the usage", u)
		}
	}
	if s.PrivateKey != nil {
		if err := s.PrivateKey.Validate(); err != nil {
			add("spec.privateKey", "%v", trimPrefix(err, keys.ErrInvalidSpec))
		}
	}
	for i, f := range s.AdditionalOutputFormats {
		if f != OutputCombinedPEM && f != OutputDER {
			add(fmt.Sprintf("spec.additionalOutputFormats[%d]", i), "%q is not CombinedPEM or DER", f)
		}
	}
	if k := s.Keystores; k != nil {
		if err := (keys.OutputSpec{PKCS12: k.PKCS12, JKS: k.JKS}).Validate(); err != nil {
			add("spec.keystores", "%v", trimPrefix(err, keys.ErrOutputSpec))
		}
	}
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 1 {
		add("spec.revisionHistoryLimit", "%d must be at least 1", *s.RevisionHistoryLimit)
	}
	if s.Renewal != nil {
		if err := s.Renewal.Validate(); err != nil {
			add("spec.renewal", "%v", err)
		}
	}
	return errors.Join(append(errs, encodingErrors(s, errs)...)...)
}

// encodingErrors are the problems keys.RequestTemplate.Validate finds in
// the spec's template — what would keep the host from building its CSR —
// at fields errs names no problem at: the spec says what is wrong once,
// and a spec Validate accepts is one keys.BuildCSR builds.
func encodingErrors(s *Spec, errs []error) []error {
	seen := map[string]bool{}
	for _, e := range errs {
		if fe, ok := e.(*FieldError); ok {
			seen[fe.Path] = true
		}
	}
	var out []error
	for _, e := range templateErrors(s.Template().Validate()) {
		path := "spec"
		if e.Field != "" {
			path += "." + e.Field
		}
		if !seen[path] {
			seen[path] = true
			out = append(out, &FieldError{Path: path, Message: e.Message})
		}
	}
	return out
}

// templateErrors lists the *keys.TemplateError values in err, which may
// join several (keys' Validate methods return nothing else).
func templateErrors(err error) []*keys.TemplateError {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []*keys.TemplateError
	for _, e := range errs {
		var te *keys.TemplateError
		if errors.As(e, &te) {
			out = append(out, te)
		}
	}
	return out
}

// trimPrefix drops a sentinel's text from the front of err's message.
func trimPrefix(err, sentinel error) string {
	msg, prefix := err.Error(), sentinel.Error()+": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

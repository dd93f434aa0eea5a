package certificate

import (
	"errors"
	"fmt"
	"net"
	"net/url"
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

// Validate returns every problem of the spec, each a *FieldError with its
// path, joined; nil when the spec is valid. It never panics.
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
	}
	if s.CommonName == "" && len(s.DNSNames)+len(s.IPAddresses)+len(s.URIs)+len(s.EmailAddresses) == 0 {
		add("spec", "names nothing: set at least one of commonName, dnsNames, ipAddresses, uris, emailAddresses")
	}
	if len(s.CommonName) > 64 {
		add("spec.commonName", "%q is longer than 64 bytes (X.509 ub-common-name)", s.CommonName)
	}
	for i, ip := range s.IPAddresses {
		if net.ParseIP(ip) == nil {
			add(fmt.Sprintf("spec.ipAddresses[%d]", i), "%q is not an IP address", ip)
		}
	}
	for i, u := range s.URIs {
		if p, err := url.Parse(u); err != nil || p.Scheme == "" {
			add(fmt.Sprintf("spec.uris[%d]", i), "%q is not an absolute URI", u)
		}
	}
	duration := DefaultDuration
	if s.Duration != nil {
		duration = s.Duration.Duration
		if duration < MinDuration {
			add("spec.duration", "%v is under the minimum of %v", duration, MinDuration)
		}
	}
	if s.RenewBefore != nil {
		if s.RenewBefore.Duration <= 0 {
			add("spec.renewBefore", "%v must be positive", s.RenewBefore.Duration)
		} else if s.RenewBefore.Duration >= duration {
			add("spec.renewBefore", "%v is not less than the duration %v", s.RenewBefore.Duration, duration)
		}
	}
	if s.RenewBeforePercentage != nil {
		if s.RenewBefore != nil {
			add("spec.renewBeforePercentage", "may not be set together with spec.renewBefore")
		}
		if p := *s.RenewBeforePercentage; p <= 0 || p >= 100 {
			add("spec.renewBeforePercentage", "%d is outside (0, 100)", p)
		}
	}
	if s.IssuerRef.Name == "" {
		add("spec.issuerRef.name", "is required")
	}
	for i, u := range s.Usages {
		if !keys.KnownUsage(u) {
			add(fmt.Sprintf("spec.usages[%d]", i), "%q is not a known usage", u)
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
	return errors.Join(errs...)
}

// trimPrefix drops a sentinel's text from the front of err's message.
func trimPrefix(err, sentinel error) string {
	msg, prefix := err.Error(), sentinel.Error()+": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

package renewal

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/certlife/certlife/internal/stablehash"
)

// ARIWindow is a suggested renewal window from an ACME server's renewalInfo
// resource (RFC 9773 §4.2).
type ARIWindow struct {
	// Start and End bound the suggested window.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// ExplanationURL, when the server gives one, says why the window is
	// where it is (for example a revocation incident).
	ExplanationURL string `json:"explanationURL,omitempty"`
}

// Polling bounds for renewalInfo (RFC 9773 §4.3). A Retry-After below
// MinPoll is raised to it, so a broken server cannot make a host poll in a
// loop; one above MaxPoll is lowered to it, because Let's Encrypt asks
// clients to check ARI at least twice a day. With no Retry-After, hosts
// poll every DefaultPoll.
const (
	MinPoll     = time.Minute
	MaxPoll     = 12 * time.Hour
	DefaultPoll = 6 * time.Hour
)

// NextPoll returns when to fetch renewalInfo again after a fetch at now that
// carried retryAfter (zero or negative: none).
func NextPoll(now time.Time, retryAfter time.Duration) time.Time {
	switch {
	case retryAfter <= 0:
		retryAfter = DefaultPoll
	case retryAfter < MinPoll:
		retryAfter = MinPoll
	case retryAfter > MaxPoll:
		retryAfter = MaxPoll
	}
	return now.Add(retryAfter)
}

// ErrCertID is wrapped by CertID's errors.
var ErrCertID = errors.New("renewal: cannot compute ARI certificate identifier")

// CertID returns a certificate's ARI identifier (RFC 9773 §4.1):
// base64url(authority key identifier) "." base64url(serial number as DER
// integer bytes), without padding.
func CertID(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return "", fmt.Errorf("%w: no certificate", ErrCertID)
	}
	if len(cert.AuthorityKeyId) == 0 {
		return "", fmt.Errorf("%w: the certificate has no authority key identifier", ErrCertID)
	}
	if cert.SerialNumber == nil {
		return "", fmt.Errorf("%w: the certificate has no serial number", ErrCertID)
	}
	// The DER INTEGER's content octets: two's complement, minimal, with a
	// leading zero when the high bit is set.
	der, err := asn1.Marshal(cert.SerialNumber)
	if err != nil {
		return "", fmt.Errorf("%w: serial: %v", ErrCertID, err)
	}
	var raw asn1.RawValue
	if _, err := asn1.Unmarshal(der, &raw); err != nil {
		return "", fmt.Errorf("%w: serial: %v", ErrCertID, err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(cert.AuthorityKeyId) + "." + enc.EncodeToString(raw.Bytes), nil
}

// ariChoice is the outcome of reading a suggested window.
type ariChoice struct {
	at     time.Time
	ok     bool
	note   string // where the point lies, when ok
	reason string // why the window was ignored, when !ok
}

// chooseInWindow picks the renewal time in a suggested window (RFC 9773
// §4.2): a point in [Start, End) derived from key alone, so that every call
// with the same window and key gives the same point and a fleet spreads
// evenly over the window. When the window runs past notAfter, the point is
// chosen in the part before notAfter, so that a renewal the CA allows
// before expiry never lands after it. A window already in the past gives a
// point in the past: renew now, as the RFC asks. A window whose end is not
// after its start is invalid and ignored (the RFC: treat it as no answer),
// as is one that cannot belong to this certificate (it ends before
// notBefore, or starts at or after notAfter).
func chooseInWindow(w *ARIWindow, notBefore, notAfter time.Time, key string) ariChoice {
	switch {
	case w == nil:
		return ariChoice{}
	case w.Start.IsZero() || w.End.IsZero() || !w.End.After(w.Start):
		return ariChoice{reason: fmt.Sprintf("ignored the ARI window %s–%s: it is malformed (end not after start)", stamp(w.Start), stamp(w.End))}
	case !notBefore.IsZero() && w.End.Before(notBefore):
		return ariChoice{reason: fmt.Sprintf("ignored the ARI window %s–%s: it ends before the certificate's notBefore %s", stamp(w.Start), stamp(w.End), stamp(notBefore))}
	case !notAfter.IsZero() && !w.Start.Before(notAfter):
		return ariChoice{reason: fmt.Sprintf("ignored the ARI window %s–%s: it starts at or after the certificate's notAfter %s", stamp(w.Start), stamp(w.End), stamp(notAfter))}
	}
	end := w.End
	if !notAfter.IsZero() && notAfter.Before(end) {
		end = notAfter
	}
	at := w.Start.Add(time.Duration(stablehash.Scale(int64(end.Sub(w.Start)), "ari", key)))
	return ariChoice{at: truncate(at, w.Start), ok: true, note: "; chosen in the ARI window " + stamp(w.Start) + "–" + stamp(w.End)}
}

package certificate

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
)

func TestSpecFingerprint(t *testing.T) {
	a := testCertificate().Spec
	b := testCertificate().Spec
	b.DNSNames = []string{"www.web.example", "web.example", "web.example"}
	b.IssuerRef.Kind = DefaultIssuerKind
	b.Usages = keys.DefaultUsages
	if specFingerprint(&a) != specFingerprint(&b) {
		t.Fatal("specs asking the same request have different fingerprints")
	}
	for name, change := range map[string]func(*Spec){
		"a new name":      func(s *Spec) { s.DNSNames = append(s.DNSNames, "x.example") },
		"another issuer":  func(s *Spec) { s.IssuerRef.Name = "other" },
		"isCA":            func(s *Spec) { s.IsCA = true },
		"a duration":      func(s *Spec) { s.Duration = &Duration{48 * 3600e9} },
		"a subject field": func(s *Spec) { s.Subject = &keys.Subject{Organizations: []string{"o"}} },
	} {
		c := testCertificate().Spec
		change(&c)
		if specFingerprint(&c) == specFingerprint(&a) {
			t.Errorf("%s does not change the fingerprint", name)
		}
	}
}

// A request whose fingerprint is stale or missing is compared by its CSR,
// so the answer never depends on the annotation being right.
func TestTriggerFallsBackToTheCSRWithoutAFingerprint(t *testing.T) {
	f := newFixture(t)
	for name, ann := range map[string]string{"missing": "", "stale": "0123"} {
		t.Run(name, func(t *testing.T) {
			s, _ := f.healthy(t0)
			if ann == "" {
				delete(s.Requests[0].Annotations, AnnotationSpecFingerprint)
			} else {
				s.Requests[0].Annotations[AnnotationSpecFingerprint] = ann
			}
			if r := Trigger(s, t0, Config{}); r.Reason != ReasonUpToDate {
				t.Fatalf("a matching request with a %s fingerprint: %s %s", name, r.Reason, r.Message)
			}
			s.Certificate.Spec.DNSNames = []string{"web.example"}
			if r := Trigger(s, t0, Config{}); r.Reason != ReasonRequestChanged {
				t.Fatalf("a changed spec with a %s fingerprint: %s", name, r.Reason)
			}
		})
	}
}

// specFingerprintReference is the first, plain version of the fingerprint
// (a strings.Builder, cloned and sorted sets); the stack-built one must
// give the same value, so requests stamped by either stay current.
func specFingerprintReference(s *Spec) string {
	var b strings.Builder
	field := func(name string, vals ...string) {
		b.WriteString(name)
		for _, v := range vals {
			b.WriteByte(0)
			b.WriteString(v)
		}
		b.WriteByte('\n')
	}
	set := func(name string, vals []string) {
		c := slices.Clone(vals)
		slices.Sort(c)
		field(name, slices.Compact(c)...)
	}
	field("cn", s.CommonName)
	set("dns", s.DNSNames)
	ips := make([]string, 0, len(s.IPAddresses))
	for _, ip := range s.IPAddresses {
		if p := net.ParseIP(ip); p != nil {
			ip = p.String()
		}
		ips = append(ips, ip)
	}
	set("ip", ips)
	set("uri", s.URIs)
	set("email", s.EmailAddresses)
	if sub := s.Subject; sub != nil {
		set("o", sub.Organizations)
		set("c", sub.Countries)
		set("ou", sub.OrganizationalUnits)
		set("l", sub.Localities)
		set("st", sub.Provinces)
		set("street", sub.StreetAddresses)
		set("postal", sub.PostalCodes)
		field("serial", sub.SerialNumber)
	}
	usages := s.Usages
	if len(usages) == 0 {
		usages = keys.DefaultUsages
	}
	u := make([]string, len(usages))
	for i, x := range usages {
		u[i] = string(x)
	}
	set("usages", u)
	field("ca", strconv.FormatBool(s.IsCA))
	ref := s.IssuerRef.WithDefaults()
	field("issuer", ref.Name, ref.Kind, ref.Group)
	field("duration", durationOf(s.Duration).String())
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

func FuzzSpecFingerprint(f *testing.F) {
	f.Add("web", "a.example\x00b.example\x00a.example", "::ffff:1.2.3.4\x0010.0.0.1\x00bad", "o1\x00o2", "server auth\x00client auth", true, int64(3600e9))
	f.Add("", "", "", "", "", false, int64(0))
	many := strings.Repeat("n.example\x00m.example\x00", 9)
	f.Add("x", many, many, many, many, false, int64(-1))
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, "\x00")
	}
	f.Fuzz(func(t *testing.T, cn, dns, ips, orgs, usages string, isCA bool, d int64) {
		s := Spec{CommonName: cn, DNSNames: split(dns), IPAddresses: split(ips), URIs: split(orgs),
			EmailAddresses: split(dns), IsCA: isCA, IssuerRef: IssuerRef{Name: cn}}
		if orgs != "" {
			s.Subject = &keys.Subject{Organizations: split(orgs), Countries: split(cn), SerialNumber: cn}
		}
		for _, u := range split(usages) {
			s.Usages = append(s.Usages, keys.Usage(u))
		}
		if d != 0 {
			s.Duration = &Duration{time.Duration(d)}
		}
		want := specFingerprintReference(&s)
		if got := specFingerprint(&s); got != want {
			t.Fatalf("fingerprint %s, reference %s", got, want)
		}
		if !fingerprintMatches(want, &s) {
			t.Fatal("fingerprintMatches rejects the spec's own fingerprint")
		}
		if fingerprintMatches(want[:31]+"x", &s) || fingerprintMatches(want[:16], &s) {
			t.Fatal("fingerprintMatches accepts another value")
		}
	})
}

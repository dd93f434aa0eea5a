package certificate

import (
	"testing"

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

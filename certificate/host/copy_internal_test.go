package host

import (
	"reflect"
	"testing"
	"time"

	"github.com/certlife/certlife/certificate"
)

// A deep copy equals its original and shares nothing with it: changing
// any slice, map or pointer of the copy leaves the original as it was.
func TestDeepCopySharesNothing(t *testing.T) {
	rev := 3
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Labels: map[string]string{"a": "b"}},
		Spec:       certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example"}, Duration: &certificate.Duration{Duration: time.Hour}},
		Status: certificate.Status{Revision: &rev, NotAfter: &when,
			Conditions: []certificate.Condition{{Type: "Ready", Status: "True", LastTransitionTime: when}}},
	}
	cp := deepCopy(c)
	if !reflect.DeepEqual(c, cp) {
		t.Fatalf("the copy differs: %+v", cp)
	}
	cp.Labels["a"] = "changed"
	cp.Spec.DNSNames[0] = "changed"
	cp.Spec.Duration.Duration = 0
	*cp.Status.Revision = 9
	cp.Status.Conditions[0].Status = "False"
	*cp.Status.NotAfter = time.Time{}
	if c.Labels["a"] != "b" || c.Spec.DNSNames[0] != "web.example" || c.Spec.Duration.Duration != time.Hour ||
		*c.Status.Revision != 3 || c.Status.Conditions[0].Status != "True" || !c.Status.NotAfter.Equal(when) {
		t.Errorf("changing the copy changed the original: %+v", c)
	}

	s := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: "web-tls"}, Data: map[string][]byte{"tls.key": []byte("key")}}
	sc := deepCopy(s)
	sc.Data["tls.key"][0] = 'X'
	if string(s.Data["tls.key"]) != "key" {
		t.Errorf("changing the copy's data changed the original's: %q", s.Data["tls.key"])
	}

	r := &certificate.CertificateRequest{Spec: certificate.RequestSpec{Request: []byte("csr")},
		Status: certificate.RequestStatus{Certificate: []byte("crt"), FailureTime: &when}}
	rc := deepCopy(r)
	rc.Spec.Request[0], rc.Status.Certificate[0] = 'X', 'X'
	*rc.Status.FailureTime = time.Time{}
	if string(r.Spec.Request) != "csr" || string(r.Status.Certificate) != "crt" || !r.Status.FailureTime.Equal(when) {
		t.Errorf("changing the copy changed the original: %+v", r)
	}
}

package certificate_test

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/certificate"
)

// A certificate whose secret does not exist yet: the trigger asks the host
// to set Issuing=True, and says why.
func ExampleTrigger() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	crt := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Generation: 1},
		Spec: certificate.Spec{
			SecretName: "web-tls",
			DNSNames:   []string{"web.example"},
			IssuerRef:  certificate.IssuerRef{Name: "letsencrypt"},
		},
	}
	res := certificate.Trigger(&certificate.Snapshot{Certificate: crt}, now, certificate.Config{})
	fmt.Println(res.Reason+":", res.Message)
	for _, a := range res.Actions {
		fmt.Println(a)
	}
	// Output:
	// DoesNotExist: secret web-tls does not exist
	// UpdateStatus{Issuing=True(DoesNotExist)}
}

func ExampleValidate() {
	pct := int32(150)
	err := certificate.Validate(&certificate.Spec{
		IssuerRef:             certificate.IssuerRef{Name: "ca"},
		DNSNames:              []string{"web.example"},
		Duration:              &certificate.Duration{Duration: 30 * time.Minute},
		RenewBeforePercentage: &pct,
	})
	fmt.Println(err)
	// Output:
	// spec.secretName: is required
	// spec.duration: 30m0s is under the minimum of 1h0m0s
	// spec.renewBeforePercentage: 150 is outside (0, 100)
}

package host

import (
	"bytes"
	"maps"
	"slices"

	"github.com/certlife/certlife/certificate"
)

// copyRequest returns a copy of r that shares nothing the caller may
// change with it: every pointer, slice and map is copied. An issuer
// answers on one (it changes the request it is given in place), since
// what a store returns may be what it holds (Collection).
// TestCopyRequestCopiesEveryField fills every field, so that a field
// added to a request and forgotten here fails it.
func copyRequest(r *certificate.CertificateRequest) *certificate.CertificateRequest {
	if r == nil {
		return nil
	}
	out := &certificate.CertificateRequest{ObjectMeta: r.ObjectMeta, Spec: r.Spec, Status: r.Status}
	out.Labels = maps.Clone(out.Labels)
	out.Annotations = maps.Clone(out.Annotations)
	out.Spec.Request = bytes.Clone(out.Spec.Request)
	out.Spec.Duration = ptr(out.Spec.Duration)
	out.Spec.Usages = slices.Clone(out.Spec.Usages)
	out.Status.Conditions = slices.Clone(out.Status.Conditions)
	out.Status.Certificate = bytes.Clone(out.Status.Certificate)
	out.Status.CA = bytes.Clone(out.Status.CA)
	out.Status.FailureTime = ptr(out.Status.FailureTime)
	out.Status.RetryAfter = ptr(out.Status.RetryAfter)
	return out
}

// ptr copies what p points to.
func ptr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

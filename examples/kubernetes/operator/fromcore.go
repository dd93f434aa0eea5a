package operator

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/certlife/certlife/certificate"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// Conversions from certlife's snapshot types to the Kubernetes objects:
// the status a decision asks to write, the requests and secrets its
// actions create. Times are kept to the second, as the API server stores
// them, so a status compares equal to itself after a write and a read.
// tocore.go goes the other way.

// StatusFromCore converts the status a decision asks for. The operator's
// own fields (backoff) are left unset.
func StatusFromCore(s certificate.Status) v1alpha1.CertificateStatus {
	out := v1alpha1.CertificateStatus{
		Conditions:               conditionsFromCore(s.Conditions),
		NextPrivateKeySecretName: s.NextPrivateKeySecretName,
		LastFailureTime:          timeFromCore(s.LastFailureTime),
		RetryAfter:               timeFromCore(s.RetryAfter),
		NotBefore:                timeFromCore(s.NotBefore),
		NotAfter:                 timeFromCore(s.NotAfter),
		RenewalTime:              timeFromCore(s.RenewalTime),
	}
	if s.Revision != nil {
		out.Revision = new(*s.Revision)
	}
	if s.FailedIssuanceAttempts != nil {
		out.FailedIssuanceAttempts = new(*s.FailedIssuanceAttempts)
	}
	if r := s.Renewal; r != nil {
		out.Renewal = &v1alpha1.RenewalStatus{Policy: string(r.Policy)}
		if w := r.Windows; w != nil {
			out.Renewal.Windows = &v1alpha1.RenewalWindowsStatus{Valid: w.Valid, MatchedWindow: w.MatchedWindow}
		}
	}
	return out
}

// RequestFromCore converts a request a CreateRequest action asks for,
// owned by the certificate owner when its OwnerUID is owner's. (certlife
// records the request's creation on its decisions' clock in the
// certificate.AnnotationCreatedAt annotation, which travels with the
// others.)
func RequestFromCore(r *certificate.CertificateRequest, owner *v1alpha1.Certificate) *v1alpha1.CertificateRequest {
	out := &v1alpha1.CertificateRequest{
		ObjectMeta: metaFromCore(r.ObjectMeta, owner),
		Spec: v1alpha1.CertificateRequestSpec{
			Request:   r.Spec.Request,
			IssuerRef: issuerRefFromCore(r.Spec.IssuerRef),
			Duration:  durationFromCore(r.Spec.Duration),
			IsCA:      r.Spec.IsCA,
			Usages:    usagesFromCore(r.Spec.Usages),
		},
		Status: RequestStatusFromCore(r.Status),
	}
	return out
}

// RequestStatusFromCore converts an issuer's answer.
func RequestStatusFromCore(s certificate.RequestStatus) v1alpha1.CertificateRequestStatus {
	return v1alpha1.CertificateRequestStatus{
		Conditions:  conditionsFromCore(s.Conditions),
		Certificate: s.Certificate,
		CA:          s.CA,
		FailureTime: timeFromCore(s.FailureTime),
		RetryAfter:  timeFromCore(s.RetryAfter),
	}
}

// SecretFromCore converts a secret, owned by owner when its OwnerUID is
// owner's. The type is left for the caller.
func SecretFromCore(s *certificate.Secret, owner *v1alpha1.Certificate) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metaFromCore(s.ObjectMeta, owner), Data: s.Data}
}

func metaFromCore(m certificate.ObjectMeta, owner *v1alpha1.Certificate) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: types.UID(m.UID), Generation: m.Generation,
		ResourceVersion: m.ResourceVersion, Labels: maps.Clone(m.Labels), Annotations: maps.Clone(m.Annotations),
	}
	if !m.CreationTimestamp.IsZero() {
		out.CreationTimestamp = metav1.NewTime(m.CreationTimestamp)
	}
	if m.OwnerUID != "" && owner != nil && string(owner.UID) == m.OwnerUID {
		out.OwnerReferences = []metav1.OwnerReference{ownerReference(owner)}
	}
	return out
}

// ownerReference makes c the controller of an object: deleting the
// certificate deletes its secrets and requests.
func ownerReference(c *v1alpha1.Certificate) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "Certificate", Name: c.Name, UID: c.UID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

func issuerRefFromCore(r certificate.IssuerRef) v1alpha1.IssuerReference {
	return v1alpha1.IssuerReference{Name: r.Name, Kind: r.Kind, Group: r.Group}
}

func durationFromCore(d *certificate.Duration) *metav1.Duration {
	if d == nil {
		return nil
	}
	return &metav1.Duration{Duration: d.Duration}
}

func usagesFromCore[U ~string](us []U) []v1alpha1.KeyUsage {
	if us == nil {
		return nil
	}
	out := make([]v1alpha1.KeyUsage, len(us))
	for i, u := range us {
		out[i] = v1alpha1.KeyUsage(u)
	}
	return out
}

func conditionsFromCore(cs []certificate.Condition) []metav1.Condition {
	if cs == nil {
		return nil
	}
	out := make([]metav1.Condition, len(cs))
	for i, c := range cs {
		out[i] = metav1.Condition{
			Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
			LastTransitionTime: metav1.NewTime(c.LastTransitionTime.Truncate(time.Second)), ObservedGeneration: c.ObservedGeneration,
		}
	}
	return out
}

func timeFromCore(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return &metav1.Time{Time: t.Truncate(time.Second)}
}

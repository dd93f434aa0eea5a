package operator

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// Conversions from the Kubernetes objects to certlife's snapshot types.
// Every field certlife reads is carried; nothing is defaulted here
// (certlife applies its own defaults), so a decision sees what the user
// wrote. fromcore.go goes the other way.

// Passwords are a certificate's keystore passwords, read from the Secrets
// its spec.keystores names (see Gatherer).
type Passwords struct {
	PKCS12, JKS keys.Password
}

// CertificateToCore converts a Certificate for a decision. The managed
// label (LabelManaged) joins spec.secretTemplate's labels, so certlife
// writes it onto the Secret and puts it back when it goes missing (a
// Secret without it falls out of the operator's cache).
func CertificateToCore(c *v1alpha1.Certificate, pw Passwords) *certificate.Certificate {
	return &certificate.Certificate{
		ObjectMeta: metaToCore(&c.ObjectMeta),
		Spec:       specToCore(&c.Spec, pw),
		Status:     StatusToCore(&c.Status),
	}
}

func specToCore(s *v1alpha1.CertificateSpec, pw Passwords) certificate.Spec {
	out := certificate.Spec{
		SecretName:     s.SecretName,
		CommonName:     s.CommonName,
		DNSNames:       slices.Clone(s.DNSNames),
		IPAddresses:    slices.Clone(s.IPAddresses),
		URIs:           slices.Clone(s.URIs),
		EmailAddresses: slices.Clone(s.EmailAddresses),
		Duration:       durationToCore(s.Duration),
		RenewBefore:    durationToCore(s.RenewBefore),
		IssuerRef:      issuerRefToCore(s.IssuerRef),
		IsCA:           s.IsCA,
		Usages:         usagesToCore(s.Usages),
		SecretTemplate: &certificate.SecretTemplate{Labels: map[string]string{LabelManaged: "true"}},
	}
	if p := s.RenewBeforePercentage; p != nil {
		out.RenewBeforePercentage = new(*p)
	}
	if l := s.RevisionHistoryLimit; l != nil {
		out.RevisionHistoryLimit = new(*l)
	}
	if sub := s.Subject; sub != nil {
		out.Subject = &keys.Subject{
			Organizations: slices.Clone(sub.Organizations), Countries: slices.Clone(sub.Countries),
			OrganizationalUnits: slices.Clone(sub.OrganizationalUnits), Localities: slices.Clone(sub.Localities),
			Provinces: slices.Clone(sub.Provinces), StreetAddresses: slices.Clone(sub.StreetAddresses),
			PostalCodes: slices.Clone(sub.PostalCodes), SerialNumber: sub.SerialNumber,
		}
	}
	if k := s.PrivateKey; k != nil {
		out.PrivateKey = &keys.KeySpec{
			Algorithm: keys.Algorithm(k.Algorithm), Size: k.Size,
			Encoding: keys.Encoding(k.Encoding), RotationPolicy: keys.RotationPolicy(k.RotationPolicy),
		}
	}
	if t := s.SecretTemplate; t != nil {
		maps.Copy(out.SecretTemplate.Labels, t.Labels)
		out.SecretTemplate.Labels[LabelManaged] = "true" // the operator's, whatever the template says
		out.SecretTemplate.Annotations = maps.Clone(t.Annotations)
	}
	for _, f := range s.AdditionalOutputFormats {
		out.AdditionalOutputFormats = append(out.AdditionalOutputFormats, certificate.OutputFormat(f))
	}
	if k := s.Keystores; k != nil {
		out.Keystores = &certificate.Keystores{}
		if p := k.PKCS12; p != nil {
			out.Keystores.PKCS12 = &keys.PKCS12Spec{Password: pw.PKCS12, Profile: keys.PKCS12Profile(p.Profile)}
		}
		if j := k.JKS; j != nil {
			out.Keystores.JKS = &keys.JKSSpec{Password: pw.JKS, Alias: j.Alias}
		}
	}
	if r := s.Renewal; r != nil {
		out.Renewal = &renewal.Spec{Policy: renewal.Policy(r.Policy)}
		for _, w := range r.Windows {
			out.Renewal.Windows = append(out.Renewal.Windows, renewal.Window{
				DaysOfWeek: slices.Clone(w.DaysOfWeek), Start: w.Start, End: w.End, TimeZone: w.TimeZone,
			})
		}
	}
	return out
}

// StatusToCore converts a Certificate's status. The operator's own
// fields (backoff) are not certlife's and stay behind.
func StatusToCore(s *v1alpha1.CertificateStatus) certificate.Status {
	out := certificate.Status{
		Conditions:               conditionsToCore(s.Conditions),
		NextPrivateKeySecretName: s.NextPrivateKeySecretName,
		LastFailureTime:          timeToCore(s.LastFailureTime),
		RetryAfter:               timeToCore(s.RetryAfter),
		NotBefore:                timeToCore(s.NotBefore),
		NotAfter:                 timeToCore(s.NotAfter),
		RenewalTime:              timeToCore(s.RenewalTime),
	}
	if s.Revision != nil {
		out.Revision = new(*s.Revision)
	}
	if s.FailedIssuanceAttempts != nil {
		out.FailedIssuanceAttempts = new(*s.FailedIssuanceAttempts)
	}
	if r := s.Renewal; r != nil {
		out.Renewal = &renewal.Status{Policy: renewal.Policy(r.Policy)}
		if w := r.Windows; w != nil {
			out.Renewal.Windows = &renewal.WindowsStatus{Valid: w.Valid, MatchedWindow: w.MatchedWindow}
		}
	}
	return out
}

// RequestToCore converts a CertificateRequest.
func RequestToCore(r *v1alpha1.CertificateRequest) *certificate.CertificateRequest {
	meta := metaToCore(&r.ObjectMeta)
	return &certificate.CertificateRequest{
		ObjectMeta: meta,
		Spec: certificate.RequestSpec{
			Request:   r.Spec.Request,
			IssuerRef: issuerRefToCore(r.Spec.IssuerRef),
			Duration:  durationToCore(r.Spec.Duration),
			IsCA:      r.Spec.IsCA,
			Usages:    usagesToCore(r.Spec.Usages),
		},
		Status: certificate.RequestStatus{
			Conditions:  conditionsToCore(r.Status.Conditions),
			Certificate: r.Status.Certificate,
			CA:          r.Status.CA,
			FailureTime: timeToCore(r.Status.FailureTime),
			RetryAfter:  timeToCore(r.Status.RetryAfter),
		},
	}
}

// SecretToCore converts a Secret. Its data is shared, not copied: a
// decision never changes its input.
func SecretToCore(s *corev1.Secret) *certificate.Secret {
	return &certificate.Secret{ObjectMeta: metaToCore(&s.ObjectMeta), Data: s.Data}
}

func metaToCore(m *metav1.ObjectMeta) certificate.ObjectMeta {
	out := certificate.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: string(m.UID), Generation: m.Generation,
		ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp.Time,
		Labels: maps.Clone(m.Labels), Annotations: maps.Clone(m.Annotations),
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		out.OwnerUID = string(ref.UID)
	}
	return out
}

func issuerRefToCore(r v1alpha1.IssuerReference) certificate.IssuerRef {
	return certificate.IssuerRef{Name: r.Name, Kind: r.Kind, Group: r.Group}
}

func durationToCore(d *metav1.Duration) *certificate.Duration {
	if d == nil {
		return nil
	}
	return &certificate.Duration{Duration: d.Duration}
}

func usagesToCore(us []v1alpha1.KeyUsage) []keys.Usage {
	if us == nil {
		return nil
	}
	out := make([]keys.Usage, len(us))
	for i, u := range us {
		out[i] = keys.Usage(u)
	}
	return out
}

func conditionsToCore(cs []metav1.Condition) []certificate.Condition {
	if cs == nil {
		return nil
	}
	out := make([]certificate.Condition, len(cs))
	for i, c := range cs {
		out[i] = certificate.Condition{
			Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			LastTransitionTime: c.LastTransitionTime.Time, ObservedGeneration: c.ObservedGeneration,
		}
	}
	return out
}

func timeToCore(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return new(t.Time)
}

package operator_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
	"github.com/certlife/certlife/examples/kubernetes/operator"
)

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	owner = &v1alpha1.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web"}}
)

// What certlife decides travels to the API server and back unchanged:
// the status it writes, the requests and secrets its actions create (and
// the issuer's answers on them).
func TestRoundTripThroughTheAPITypes(t *testing.T) {
	tests := map[string]struct {
		in   any
		trip func(any) any
	}{
		"a status with every field": {
			in: fullStatus(),
			trip: func(v any) any {
				st := operator.StatusFromCore(v.(certificate.Status))
				return operator.StatusToCore(&st)
			},
		},
		"an empty status": {
			in: certificate.Status{},
			trip: func(v any) any {
				st := operator.StatusFromCore(v.(certificate.Status))
				return operator.StatusToCore(&st)
			},
		},
		"a request with every field, answered": {
			in: fullRequest(),
			trip: func(v any) any {
				return operator.RequestToCore(operator.RequestFromCore(v.(*certificate.CertificateRequest), owner))
			},
		},
		"a request as CreateRequest asks for it, without a creation time": {
			in: &certificate.CertificateRequest{
				ObjectMeta: certificate.ObjectMeta{Name: "web-1", Namespace: "apps", OwnerUID: "uid-web",
					Annotations: map[string]string{certificate.AnnotationRevision: "1"}},
				Spec: certificate.RequestSpec{Request: []byte("csr"), IssuerRef: certificate.IssuerRef{Name: "ca"}},
			},
			trip: func(v any) any {
				return operator.RequestToCore(operator.RequestFromCore(v.(*certificate.CertificateRequest), owner))
			},
		},
		"a next-private-key secret": {
			in: &certificate.Secret{
				ObjectMeta: certificate.ObjectMeta{Name: "web-next-key-1-abc", Namespace: "apps", UID: "uid-s", ResourceVersion: "7",
					Generation: 1, CreationTimestamp: t0, OwnerUID: "uid-web",
					Labels:      map[string]string{certificate.LabelNextPrivateKey: "true", operator.LabelManaged: "true"},
					Annotations: map[string]string{"a": "b"}},
				Data: map[string][]byte{keys.SecretPrivateKey: []byte("key")},
			},
			trip: func(v any) any { return operator.SecretToCore(operator.SecretFromCore(v.(*certificate.Secret), owner)) },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, cmp.Diff(tc.in, tc.trip(tc.in)), "(-in +round trip)")
		})
	}
}

// A status read from the API server converts to certlife's and back to
// what was read, the operator's own backoff aside.
func TestStatusFromTheAPIRoundTrips(t *testing.T) {
	in := operator.StatusFromCore(fullStatus())
	back := operator.StatusFromCore(operator.StatusToCore(&in))
	assert.Empty(t, cmp.Diff(in, back), "(-read +round trip)")
	assert.True(t, allFieldsSet(reflect.ValueOf(fullStatus())), "the status fixture sets every field of certificate.Status")
	in.Backoff = &v1alpha1.BackoffStatus{NextAttemptTime: metav1.NewTime(t0), Message: "m"}
	assert.Nil(t, operator.StatusFromCore(operator.StatusToCore(&in)).Backoff, "the backoff is the operator's, not certlife's")
}

// Every field of a Certificate's spec reaches certlife's spec: the
// fixture sets every field of the API type, and every field of
// certificate.Spec comes out set — a field added to one and not carried
// fails here.
func TestCertificateSpecCarriesEveryField(t *testing.T) {
	crt := fullCertificate()
	assert.True(t, allFieldsSet(reflect.ValueOf(crt.Spec)), "the fixture sets every field of CertificateSpec")
	got := operator.CertificateToCore(crt, operator.Passwords{PKCS12: "p12", JKS: "jks"})
	assert.True(t, allFieldsSet(reflect.ValueOf(got.Spec)), "every field of certificate.Spec is set: %+v", got.Spec)
	want := certificate.Spec{
		SecretName: "web-tls", CommonName: "web", DNSNames: []string{"web.example"}, IPAddresses: []string{"192.0.2.1"},
		URIs: []string{"spiffe://cluster.local/web"}, EmailAddresses: []string{"web@example.com"},
		Subject: &keys.Subject{Organizations: []string{"o"}, Countries: []string{"c"}, OrganizationalUnits: []string{"ou"},
			Localities: []string{"l"}, Provinces: []string{"p"}, StreetAddresses: []string{"s"}, PostalCodes: []string{"pc"}, SerialNumber: "sn"},
		Duration: &certificate.Duration{Duration: 48 * time.Hour}, RenewBefore: &certificate.Duration{Duration: time.Hour},
		RenewBeforePercentage: new(int32(30)),
		IssuerRef:             certificate.IssuerRef{Name: "ca", Kind: "ClusterIssuer", Group: "certlife.dev"},
		IsCA:                  true, Usages: []keys.Usage{keys.UsageServerAuth},
		PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 384, Encoding: keys.EncodingPKCS8, RotationPolicy: keys.RotationNever},
		SecretTemplate: &certificate.SecretTemplate{
			Labels:      map[string]string{"team": "web", operator.LabelManaged: "true"},
			Annotations: map[string]string{"note": "x"},
		},
		AdditionalOutputFormats: []certificate.OutputFormat{certificate.OutputCombinedPEM, certificate.OutputDER},
		Keystores: &certificate.Keystores{
			PKCS12: &keys.PKCS12Spec{Password: "p12", Profile: keys.PKCS12LegacyDES},
			JKS:    &keys.JKSSpec{Password: "jks", Alias: "web"},
		},
		RevisionHistoryLimit: new(int32(3)),
		Renewal: &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{
			{DaysOfWeek: []string{"Monday"}, Start: "05:00", End: "07:00", TimeZone: "Europe/Oslo"}}},
	}
	assert.Empty(t, cmp.Diff(want, got.Spec), "(-want +got)")
	assert.Empty(t, cmp.Diff(certificate.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web", Generation: 2,
		ResourceVersion: "9", CreationTimestamp: t0, Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"}}, got.ObjectMeta))
}

// The managed label is the operator's, whatever a template says.
func TestManagedLabelCannotBeTemplatedAway(t *testing.T) {
	crt := &v1alpha1.Certificate{Spec: v1alpha1.CertificateSpec{SecretTemplate: &v1alpha1.SecretTemplate{
		Labels: map[string]string{operator.LabelManaged: "false"}}}}
	got := operator.CertificateToCore(crt, operator.Passwords{})
	assert.Equal(t, "true", got.Spec.SecretTemplate.Labels[operator.LabelManaged])
	assert.Equal(t, "false", crt.Spec.SecretTemplate.Labels[operator.LabelManaged], "the input is left alone")
}

// The time certlife records for a request's creation, on its decisions'
// clock, travels with the request's annotations: certlife reads it rather
// than the API server's creationTimestamp, whose clock may differ.
func TestRequestCreationTimeTravels(t *testing.T) {
	in := fullRequest()
	in.Annotations[certificate.AnnotationCreatedAt] = t0.Add(time.Minute).Format(time.RFC3339Nano)
	r := operator.RequestFromCore(in, owner)
	r.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour)) // the API server's, an hour behind
	got := operator.RequestToCore(r)
	assert.Equal(t, in.Annotations[certificate.AnnotationCreatedAt], got.Annotations[certificate.AnnotationCreatedAt])
	assert.True(t, got.CreationTimestamp.Equal(t0.Add(-time.Hour)), "metadata.creationTimestamp stays the API server's")
}

func fullStatus() certificate.Status {
	return certificate.Status{
		Conditions: []certificate.Condition{
			{Type: certificate.ConditionReady, Status: certificate.StatusTrue, Reason: certificate.ReasonReady, Message: "ok", LastTransitionTime: t0, ObservedGeneration: 2},
			{Type: certificate.ConditionIssuing, Status: certificate.StatusFalse, Reason: certificate.ReasonFailed, Message: "no", LastTransitionTime: t0.Add(time.Second), ObservedGeneration: 2},
		},
		Revision: new(3), NextPrivateKeySecretName: "web-next-key-4-abc",
		LastFailureTime: new(t0.Add(time.Minute)), FailedIssuanceAttempts: new(2), RetryAfter: new(t0.Add(time.Hour)),
		NotBefore: new(t0), NotAfter: new(t0.Add(90 * 24 * time.Hour)), RenewalTime: new(t0.Add(60 * 24 * time.Hour)),
		Renewal: &renewal.Status{Policy: renewal.PolicyScheduled, Windows: &renewal.WindowsStatus{Valid: "True", MatchedWindow: "windows[0]"}},
	}
}

func fullRequest() *certificate.CertificateRequest {
	return &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Name: "web-1", Namespace: "apps", UID: "uid-r", Generation: 1, ResourceVersion: "5",
			CreationTimestamp: t0.Add(time.Minute), OwnerUID: "uid-web",
			Labels: map[string]string{"l": "v"},
			Annotations: map[string]string{certificate.AnnotationRevision: "1", certificate.AnnotationCertificateName: "web",
				certificate.AnnotationPrivateKeySecretName: "web-next-key-1-abc"}},
		Spec: certificate.RequestSpec{Request: []byte("csr"), IssuerRef: certificate.IssuerRef{Name: "ca", Kind: "Issuer", Group: "certlife.dev"},
			Duration: &certificate.Duration{Duration: 24 * time.Hour}, IsCA: true, Usages: []keys.Usage{keys.UsageClientAuth}},
		Status: certificate.RequestStatus{
			Conditions: []certificate.Condition{{Type: certificate.RequestConditionReady, Status: certificate.StatusFalse,
				Reason: certificate.RequestReasonFailed, Message: "down", LastTransitionTime: t0}},
			Certificate: []byte("chain"), CA: []byte("ca"), FailureTime: new(t0), RetryAfter: new(t0.Add(time.Hour)),
		},
	}
}

func fullCertificate() *v1alpha1.Certificate {
	return &v1alpha1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web", Generation: 2, ResourceVersion: "9",
			CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"}},
		Spec: v1alpha1.CertificateSpec{
			SecretName: "web-tls", CommonName: "web", DNSNames: []string{"web.example"}, IPAddresses: []string{"192.0.2.1"},
			URIs: []string{"spiffe://cluster.local/web"}, EmailAddresses: []string{"web@example.com"},
			Subject: &v1alpha1.X509Subject{Organizations: []string{"o"}, Countries: []string{"c"}, OrganizationalUnits: []string{"ou"},
				Localities: []string{"l"}, Provinces: []string{"p"}, StreetAddresses: []string{"s"}, PostalCodes: []string{"pc"}, SerialNumber: "sn"},
			Duration: &metav1.Duration{Duration: 48 * time.Hour}, RenewBefore: &metav1.Duration{Duration: time.Hour},
			RenewBeforePercentage: new(int32(30)),
			IssuerRef:             v1alpha1.IssuerReference{Name: "ca", Kind: "ClusterIssuer", Group: "certlife.dev"},
			IsCA:                  true, Usages: []v1alpha1.KeyUsage{"server auth"},
			PrivateKey:              &v1alpha1.PrivateKey{Algorithm: "ECDSA", Size: 384, Encoding: "PKCS8", RotationPolicy: "Never"},
			SecretTemplate:          &v1alpha1.SecretTemplate{Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"note": "x"}},
			AdditionalOutputFormats: []v1alpha1.OutputFormat{"CombinedPEM", "DER"},
			Keystores: &v1alpha1.Keystores{
				PKCS12: &v1alpha1.PKCS12Keystore{PasswordSecretRef: v1alpha1.SecretKeySelector{Name: "pw", Key: "p12"}, Profile: "LegacyDES"},
				JKS:    &v1alpha1.JKSKeystore{PasswordSecretRef: v1alpha1.SecretKeySelector{Name: "pw", Key: "jks"}, Alias: "web"},
			},
			RevisionHistoryLimit: new(int32(3)),
			Renewal: &v1alpha1.RenewalSpec{Policy: "Scheduled", Windows: []v1alpha1.RenewalWindow{
				{DaysOfWeek: []string{"Monday"}, Start: "05:00", End: "07:00", TimeZone: "Europe/Oslo"}}},
		},
	}
}

// allFieldsSet reports whether every field of v, through pointers,
// structs, and the first element of slices, is not its zero value.
func allFieldsSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && allFieldsSet(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return !v.Interface().(time.Time).IsZero()
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && !allFieldsSet(v.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		return v.Len() > 0 && allFieldsSet(v.Index(0))
	case reflect.Map:
		return v.Len() > 0
	}
	return !v.IsZero()
}

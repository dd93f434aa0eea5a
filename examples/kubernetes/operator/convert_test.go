package operator_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// statusTrip writes a status into a Certificate of spec and reads it
// back, as a write to the API server and a read do.
func statusTrip(t *testing.T, spec cmapi.CertificateSpec, st certificate.Status) (certificate.Status, *cmapi.Certificate) {
	t.Helper()
	crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web", Annotations: map[string]string{"user": "x"}}, Spec: spec}
	core := operator.CertificateToCore(crt, operator.Passwords{})
	operator.CertificateStatusFromCore(crt, st, &core.Spec)
	crt = viaJSON(t, crt)
	return operator.CertificateToCore(crt, operator.Passwords{}).Status, crt
}

// What certlife decides travels to cert-manager's status (and the
// annotations for what it has no field for) and back unchanged: every
// field of certificate.Status (the fixture sets each), times to the
// second as the API server keeps them.
func TestStatusRoundTrip(t *testing.T) {
	require.True(t, allFieldsSet(reflect.ValueOf(fullStatus())), "the status fixture sets every field of certificate.Status")
	scheduled := cmapi.CertificateSpec{Renewal: &cmapi.CertificateRenewal{Windows: []cmapi.CertificateRenewalWindows{
		{Cron: "0 5 * * 1", WindowDuration: &metav1.Duration{Duration: 2 * time.Hour}}}}}
	tests := map[string]struct {
		spec cmapi.CertificateSpec
		in   certificate.Status
		// annotations the trip leaves on the Certificate.
		annotations []string
	}{
		"a status with every field": {spec: scheduled, in: fullStatus(),
			annotations: []string{operator.AnnotationRetryAfter, operator.AnnotationRenewalStatus, operator.AnnotationIssuerStatus}},
		"an empty status": {in: certificate.Status{}},
		"an Automatic renewal status, which the spec implies: no annotation": {
			in: certificate.Status{NotAfter: new(t0), Renewal: &renewal.Status{Policy: renewal.PolicyAutomatic}}},
		"a Disabled renewal status, which the spec implies: no annotation": {
			spec: cmapi.CertificateSpec{Renewal: &cmapi.CertificateRenewal{Policy: cmapi.CertificateRenewalPolicyDisabled}},
			in:   certificate.Status{NotAfter: new(t0), Renewal: &renewal.Status{Policy: renewal.PolicyDisabled}}},
		"a renewal status kept while the secret holds no certificate any more": {
			in: certificate.Status{Revision: new(1), Renewal: &renewal.Status{Policy: renewal.PolicyAutomatic}}},
		"a renewal status kept for a secret that was there before the certificate, and is gone": {
			in: certificate.Status{Renewal: &renewal.Status{Policy: renewal.PolicyAutomatic}}, annotations: []string{operator.AnnotationRenewalStatus}},
		"no renewal status for a certificate that has had one": {
			in: certificate.Status{Revision: new(1)}, annotations: []string{operator.AnnotationRenewalStatus}},
		"a renewal status of another policy than the spec's": {
			in:          certificate.Status{NotAfter: new(t0), Renewal: &renewal.Status{Policy: renewal.PolicyDisabled}},
			annotations: []string{operator.AnnotationRenewalStatus}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, crt := statusTrip(t, tc.spec, tc.in)
			assert.Empty(t, cmp.Diff(tc.in, got), "(-in +round trip)")
			var have []string
			for k := range crt.Annotations {
				if strings.HasPrefix(k, "certlife.dev/") {
					have = append(have, k)
				}
			}
			assert.ElementsMatch(t, tc.annotations, have)
			assert.Equal(t, "x", crt.Annotations["user"], "the user's annotations stay")
		})
	}
}

// A status the API server holds (the reference operator's, or certlife's
// own) converts to certlife's and back to what was read, every field of
// cert-manager's status, status.acme.ari included.
func TestStatusFromTheAPIRoundTrips(t *testing.T) {
	in := cmapi.CertificateStatus{
		Conditions: []cmapi.CertificateCondition{{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue, Reason: "Ready", Message: "ok",
			LastTransitionTime: &metav1.Time{Time: t0}, ObservedGeneration: 2}},
		LastFailureTime: &metav1.Time{Time: t0}, NotBefore: &metav1.Time{Time: t0}, NotAfter: &metav1.Time{Time: t0.Add(time.Hour)},
		RenewalTime: &metav1.Time{Time: t0.Add(time.Minute)}, Revision: new(3), NextPrivateKeySecretName: new("web-abc"),
		FailedIssuanceAttempts: new(1),
		ACME: &cmapi.CertificateACMEStatus{ARI: &cmapi.CertificateACMEARIStatus{ExplanationURL: "https://ca/why",
			SuggestedWindow: &cmapi.ACMERenewalWindow{Start: &metav1.Time{Time: t0}, End: &metav1.Time{Time: t0.Add(time.Hour)}},
			LastChecked:     &metav1.Time{Time: t0}, NextCheck: &metav1.Time{Time: t0.Add(time.Hour)}, LastError: "e"}},
	}
	require.True(t, allFieldsSet(reflect.ValueOf(in)), "the fixture sets every field of cert-manager's status")
	crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: in}
	core := operator.CertificateToCore(crt, operator.Passwords{})
	out := crt.DeepCopy()
	operator.CertificateStatusFromCore(out, core.Status, &core.Spec)
	assert.Empty(t, cmp.Diff(in, out.Status), "(-read +round trip)")
	assert.Empty(t, out.Annotations, "nothing to keep beside the status")
}

// Every field of a cert-manager Certificate's spec either reaches
// certlife's spec, or is named by NotServed (the certificate is then
// refused with InvalidSpec): a field added to cert-manager's API and not
// mapped fails here. Every field of certificate.Spec is filled from the
// fixture: a field added to certlife and not mapped fails here too.
func TestCertificateSpecCarriesEveryField(t *testing.T) {
	crt := fullCertificate()
	require.True(t, allFieldsSet(reflect.ValueOf(crt.Spec)), "the fixture sets every field of cert-manager's CertificateSpec")
	refused := map[string]string{
		"SignatureAlgorithm": "spec.signatureAlgorithm",
	}
	full := operator.CertificateToCore(crt, operator.Passwords{PKCS12: "p12"})
	all := paths(operator.NotServed(crt))
	typ := reflect.TypeFor[cmapi.CertificateSpec]()
	for i := range typ.NumField() {
		field := typ.Field(i).Name
		t.Run(field, func(t *testing.T) {
			without := crt.DeepCopy()
			v := reflect.ValueOf(&without.Spec).Elem().Field(i)
			v.Set(reflect.Zero(v.Type()))
			if path, ok := refused[field]; ok {
				assert.Contains(t, all, path, "NotServed names it")
				assert.NotContains(t, paths(operator.NotServed(without)), path)
				return
			}
			got := operator.CertificateToCore(without, operator.Passwords{PKCS12: "p12"})
			assert.NotEmpty(t, cmp.Diff(full.Spec, got.Spec), "spec.%s reaches certlife's spec", field)
		})
	}

	served := crt.DeepCopy()
	for field := range refused {
		v := reflect.ValueOf(&served.Spec).Elem().FieldByName(field)
		v.Set(reflect.Zero(v.Type()))
	}
	assert.Empty(t, operator.NotServed(served), "the rest is served")
	got := operator.CertificateToCore(served, operator.Passwords{PKCS12: "p12"})
	assert.True(t, allFieldsSet(reflect.ValueOf(got.Spec)), "every field of certificate.Spec is set: %+v", got.Spec)
	want := certificate.Spec{
		SecretName: "web-tls", CommonName: "web", DNSNames: []string{"web.example"}, IPAddresses: []string{"192.0.2.1"},
		URIs: []string{"spiffe://cluster.local/web"}, EmailAddresses: []string{"web@example.com"},
		Subject: &keys.Subject{Organizations: []string{"o"}, Countries: []string{"c"}, OrganizationalUnits: []string{"ou"},
			Localities: []string{"l"}, Provinces: []string{"p"}, StreetAddresses: []string{"s"}, PostalCodes: []string{"pc"}, SerialNumber: "sn"},
		Duration: &certificate.Duration{Duration: 48 * time.Hour}, RenewBefore: &certificate.Duration{Duration: time.Hour},
		RenewBeforePercentage: new(int32(30)),
		IssuerRef:             certificate.IssuerRef{Name: "ca", Kind: "ClusterIssuer", Group: "cert-manager.io"},
		FallbackIssuerRefs: []certificate.IssuerRef{{Name: "zerossl", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			{Name: "backup", Kind: "Issuer", Group: "example.org"}},
		LiteralSubject: "CN=web",
		OtherNames:     []keys.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "web@example.com"}},
		IsCA:           true, Usages: []keys.Usage{keys.UsageServerAuth},
		EncodeUsagesInRequest: new(true),
		NameConstraints: &keys.NameConstraints{Critical: true,
			Permitted: &keys.NameConstraintItem{DNSDomains: []string{"example"}, IPRanges: []string{"192.0.2.0/24"}, EmailAddresses: []string{"example"}, URIDomains: []string{"example"}},
			Excluded:  &keys.NameConstraintItem{DNSDomains: []string{"test"}, IPRanges: []string{"198.51.100.0/24"}, EmailAddresses: []string{"test"}, URIDomains: []string{"test"}}},
		IssueTemporaryCertificate: true,
		PrivateKey:                &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 384, Encoding: keys.EncodingPKCS8, RotationPolicy: keys.RotationNever},
		SecretTemplate: &certificate.SecretTemplate{
			Labels:      map[string]string{"team": "web", operator.LabelManaged: "true"},
			Annotations: map[string]string{"note": "x"},
		},
		AdditionalOutputFormats: []certificate.OutputFormat{certificate.OutputCombinedPEM, certificate.OutputDER},
		Keystores: &certificate.Keystores{
			PKCS12: &keys.PKCS12Spec{Password: "p12", Profile: keys.PKCS12LegacyDES},
			JKS:    &keys.JKSSpec{Password: "literal", Alias: "web"},
		},
		RevisionHistoryLimit: new(int32(3)),
		Renewal: &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{
			{DaysOfWeek: []string{"Monday"}, Start: "05:00", End: "07:00", TimeZone: "Europe/Oslo"}}},
	}
	assert.Empty(t, cmp.Diff(want, got.Spec), "(-want +got)")
	assert.Empty(t, cmp.Diff(certificate.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web", Generation: 2,
		ResourceVersion: "9", CreationTimestamp: t0, Labels: map[string]string{"l": "v"},
		Annotations: map[string]string{"a": "v", cmapi.IssueTemporaryCertificateAnnotation: "true"}}, got.ObjectMeta))
}

// cert-manager's defaults are certlife's where they differ: an issuerRef
// without kind or group names an Issuer of cert-manager.io, a PKCS#12
// keystore without a profile is LegacyRC2; a keystore with create: false
// is none.
func TestCertificateSpecDefaults(t *testing.T) {
	crt := &cmapi.Certificate{Spec: cmapi.CertificateSpec{IssuerRef: cmmeta.IssuerReference{Name: "ca"},
		Keystores: &cmapi.CertificateKeystores{
			PKCS12: &cmapi.PKCS12Keystore{Create: true, Password: new("pw")},
			JKS:    &cmapi.JKSKeystore{Create: false, Password: new("pw")},
		}}}
	got := operator.CertificateToCore(crt, operator.Passwords{}).Spec
	assert.Equal(t, certificate.IssuerRef{Name: "ca", Kind: "Issuer", Group: "cert-manager.io"}, got.IssuerRef)
	require.NotNil(t, got.Keystores)
	assert.Equal(t, &keys.PKCS12Spec{Password: "pw", Profile: keys.PKCS12LegacyRC2}, got.Keystores.PKCS12)
	assert.Nil(t, got.Keystores.JKS, "create: false asks for no keystore")
}

// The managed label is the operator's, whatever a template says.
func TestManagedLabelCannotBeTemplatedAway(t *testing.T) {
	crt := &cmapi.Certificate{Spec: cmapi.CertificateSpec{SecretTemplate: &cmapi.CertificateSecretTemplate{
		Labels: map[string]string{operator.LabelManaged: "false"}}}}
	got := operator.CertificateToCore(crt, operator.Passwords{})
	assert.Equal(t, "true", got.Spec.SecretTemplate.Labels[operator.LabelManaged])
	assert.Equal(t, "false", crt.Spec.SecretTemplate.Labels[operator.LabelManaged], "the input is left alone")
}

// The requests certlife makes, and the issuers' answers on them, travel
// to cert-manager's CertificateRequest and back unchanged, with
// cert-manager's annotations (the ones external issuers and kubectl
// plugins read) in place of certlife's.
func TestRequestRoundTrip(t *testing.T) {
	in := fullRequest()
	// Every field but the conditions' observedGeneration: a request's
	// conditions have none, in either API.
	check := *in
	check.Status.Conditions = []certificate.Condition{in.Status.Conditions[0]}
	check.Status.Conditions[0].ObservedGeneration = 1
	require.True(t, allFieldsSet(reflect.ValueOf(check)), "the request fixture sets every field of certificate.CertificateRequest")
	r := viaJSON(t, operator.RequestFromCore(in))
	assert.Equal(t, map[string]string{
		cmapi.CertificateRequestRevisionAnnotationKey:   "1",
		cmapi.CertificateNameKey:                        "web",
		cmapi.CertificateRequestPrivateKeyAnnotationKey: "web-next-key-1-abc",
		certificate.AnnotationCreatedAt:                 t0.Format(time.RFC3339Nano),
		operator.AnnotationRetryAfter:                   t0.Add(time.Hour).Format(time.RFC3339),
	}, r.Annotations)
	require.Len(t, r.OwnerReferences, 1)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "web", UID: "uid-web",
		Controller: new(true), BlockOwnerDeletion: new(true)}, r.OwnerReferences[0])
	assert.Empty(t, cmp.Diff(in, operator.RequestToCore(r)), "(-in +round trip)")
}

// A CertificateRequest as the reference operator (or its webhook) makes
// it converts to certlife's and back: every field but those its webhook
// fills in about who asked (username, uid, groups, extra), which certlife
// does not read, and which no write of certlife's replaces.
func TestRequestFromTheAPIRoundTrips(t *testing.T) {
	in := &cmapi.CertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "apps", UID: "uid-r", ResourceVersion: "4", Generation: 1,
			CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{"l": "v"},
			Annotations: map[string]string{cmapi.CertificateRequestRevisionAnnotationKey: "1", cmapi.CertificateNameKey: "web",
				cmapi.CertificateRequestPrivateKeyAnnotationKey: "web-abc", "venafi.cert-manager.io/custom-fields": "[]"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "web", UID: "uid-web",
				Controller: new(true), BlockOwnerDeletion: new(true)}}},
		Spec: cmapi.CertificateRequestSpec{Duration: &metav1.Duration{Duration: time.Hour}, IssuerRef: cmmeta.IssuerReference{Name: "ca", Kind: "Issuer", Group: "cert-manager.io"},
			Request: []byte("csr"), IsCA: true, Usages: []cmapi.KeyUsage{cmapi.UsageServerAuth},
			Username: "u", UID: "uid", Groups: []string{"g"}, Extra: map[string][]string{"k": {"v"}}},
		Status: cmapi.CertificateRequestStatus{
			Conditions: []cmapi.CertificateRequestCondition{
				{Type: cmapi.CertificateRequestConditionApproved, Status: cmmeta.ConditionTrue, Reason: "cert-manager.io", Message: "approved", LastTransitionTime: &metav1.Time{Time: t0}},
				{Type: cmapi.CertificateRequestConditionReady, Status: cmmeta.ConditionFalse, Reason: "Failed", Message: "no", LastTransitionTime: &metav1.Time{Time: t0}},
			},
			Certificate: []byte("chain"), CA: []byte("ca"), FailureTime: &metav1.Time{Time: t0},
		},
	}
	require.True(t, allFieldsSet(reflect.ValueOf(in.Spec)) && allFieldsSet(reflect.ValueOf(in.Status)), "the fixture sets every field of cert-manager's spec and status")
	out := operator.RequestFromCore(operator.RequestToCore(in))
	ignore := cmpopts.IgnoreFields(cmapi.CertificateRequestSpec{}, "Username", "UID", "Groups", "Extra")
	assert.Empty(t, cmp.Diff(in.Spec, out.Spec, ignore), "(-read +round trip)")
	assert.Empty(t, cmp.Diff(in.Status, out.Status), "(-read +round trip)")
	assert.Empty(t, cmp.Diff(in.ObjectMeta, out.ObjectMeta), "(-read +round trip)")
}

// What certlife writes into a Secret travels with cert-manager's
// annotations and labels and back unchanged.
func TestSecretRoundTrip(t *testing.T) {
	for name, in := range map[string]*certificate.Secret{
		"a next-private-key secret": {
			ObjectMeta: certificate.ObjectMeta{Name: "web-next-key-1-abc", Namespace: "apps", UID: "uid-s", ResourceVersion: "7",
				Generation: 1, CreationTimestamp: t0, OwnerUID: "uid-web",
				Labels:      map[string]string{certificate.LabelNextPrivateKey: "true", operator.LabelManaged: "true"},
				Annotations: map[string]string{certificate.AnnotationCertificateName: "web"}},
			Data: map[string][]byte{keys.SecretPrivateKey: []byte("key")},
		},
		"a target secret": {
			ObjectMeta: certificate.ObjectMeta{Name: "web-tls", Namespace: "apps", Labels: map[string]string{"team": "web"},
				Annotations: map[string]string{certificate.AnnotationCertificateName: "web", certificate.AnnotationIssuerName: "ca",
					certificate.AnnotationIssuerKind: "Issuer", certificate.AnnotationIssuerGroup: "cert-manager.io",
					certificate.AnnotationCommonName: "web", certificate.AnnotationAltNames: "web.example", certificate.AnnotationIPSANs: "",
					certificate.AnnotationURISANs: "", certificate.AnnotationEmailSANs: "", "note": "x"}},
			Data: map[string][]byte{keys.SecretCertificate: []byte("crt"), keys.SecretPrivateKey: []byte("key")},
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := viaJSON(t, operator.SecretFromCore(in))
			for k := range s.Annotations {
				assert.False(t, strings.HasPrefix(k, "certlife.dev/"), "certlife's annotation %s", k)
			}
			for k := range s.Labels {
				assert.False(t, strings.HasPrefix(k, "certlife.dev/"), "certlife's label %s", k)
			}
			assert.Empty(t, cmp.Diff(in, operator.SecretToCore(s)), "(-in +round trip)")
		})
	}
}

// A Secret the reference operator wrote reads as certlife's own: its
// annotations under certlife's names, an issuer kind and group it left
// empty as Issuer and cert-manager.io, and the e-mail addresses it writes
// no annotation for when there are none as none — so certlife finds no
// drift to repair.
func TestReferenceSecretReadsAsCertlifes(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls", Namespace: "apps",
		Labels: map[string]string{cmapi.PartOfCertManagerControllerLabelKey: "true"},
		Annotations: map[string]string{cmapi.CertificateNameKey: "web", cmapi.IssuerNameAnnotationKey: "ca", cmapi.IssuerKindAnnotationKey: "",
			cmapi.IssuerGroupAnnotationKey: "", cmapi.CommonNameAnnotationKey: "", cmapi.AltNamesAnnotationKey: "web.example",
			cmapi.IPSANAnnotationKey: "", cmapi.URISANAnnotationKey: "", cmapi.SubjectOrganizationsAnnotationKey: "o"}}}
	got := operator.SecretToCore(s)
	assert.Equal(t, map[string]string{certificate.AnnotationCertificateName: "web", certificate.AnnotationIssuerName: "ca",
		certificate.AnnotationIssuerKind: "Issuer", certificate.AnnotationIssuerGroup: "cert-manager.io",
		certificate.AnnotationCommonName: "", certificate.AnnotationAltNames: "web.example", certificate.AnnotationIPSANs: "",
		certificate.AnnotationURISANs: "", certificate.AnnotationEmailSANs: "", cmapi.SubjectOrganizationsAnnotationKey: "o"}, got.Annotations)
	assert.Equal(t, map[string]string{operator.LabelManaged: "true"}, got.Labels)
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
		Issuer: &certificate.IssuerStatus{Revision: 4, Index: 1, IssuerRef: certificate.IssuerRef{Name: "zerossl", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			FailedAttempts: 1, Reason: certificate.ReasonIssuerFailedRepeatedly, Message: "spec.issuerRef failed",
			Skipped: []certificate.IssuerSkip{{IssuerRef: certificate.IssuerRef{Name: "le", Kind: "ClusterIssuer", Group: "cert-manager.io"}, Until: t0.Add(time.Hour)}}},
		RenewalInfo: &certificate.RenewalInfoStatus{
			SuggestedWindow: &renewal.ARIWindow{Start: t0.Add(59 * 24 * time.Hour), End: t0.Add(61 * 24 * time.Hour), ExplanationURL: "https://ca.example/why"},
			LastChecked:     new(t0.Add(2 * time.Minute)), NextCheck: new(t0.Add(6 * time.Hour)), LastError: "renewal information: 503"},
	}
}

func fullRequest() *certificate.CertificateRequest {
	return &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Name: "web-1", Namespace: "apps", UID: "uid-r", Generation: 1, ResourceVersion: "5",
			CreationTimestamp: t0.Add(time.Minute), OwnerUID: "uid-web",
			Labels: map[string]string{"l": "v"},
			Annotations: map[string]string{certificate.AnnotationRevision: "1", certificate.AnnotationCertificateName: "web",
				certificate.AnnotationPrivateKeySecretName: "web-next-key-1-abc", certificate.AnnotationCreatedAt: t0.Format(time.RFC3339Nano)}},
		Spec: certificate.RequestSpec{Request: []byte("csr"), IssuerRef: certificate.IssuerRef{Name: "ca", Kind: "Issuer", Group: "cert-manager.io"},
			Duration: &certificate.Duration{Duration: 24 * time.Hour}, IsCA: true, Usages: []keys.Usage{keys.UsageClientAuth}},
		Status: certificate.RequestStatus{
			Conditions: []certificate.Condition{{Type: certificate.RequestConditionReady, Status: certificate.StatusFalse,
				Reason: certificate.RequestReasonFailed, Message: "down", LastTransitionTime: t0}},
			Certificate: []byte("chain"), CA: []byte("ca"), FailureTime: new(t0), RetryAfter: new(t0.Add(time.Hour)),
		},
	}
}

func fullCertificate() *cmapi.Certificate {
	return &cmapi.Certificate{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web", Generation: 2, ResourceVersion: "9",
			CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{"l": "v"},
			Annotations: map[string]string{"a": "v", cmapi.IssueTemporaryCertificateAnnotation: "true",
				operator.AnnotationFallbackIssuers: "ClusterIssuer/zerossl, Issuer.example.org/backup"}},
		Spec: cmapi.CertificateSpec{
			SecretName: "web-tls", CommonName: "web", DNSNames: []string{"web.example"}, IPAddresses: []string{"192.0.2.1"},
			URIs: []string{"spiffe://cluster.local/web"}, EmailAddresses: []string{"web@example.com"},
			Subject: &cmapi.X509Subject{Organizations: []string{"o"}, Countries: []string{"c"}, OrganizationalUnits: []string{"ou"},
				Localities: []string{"l"}, Provinces: []string{"p"}, StreetAddresses: []string{"s"}, PostalCodes: []string{"pc"}, SerialNumber: "sn"},
			LiteralSubject: "CN=web",
			OtherNames:     []cmapi.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "web@example.com"}},
			Duration:       &metav1.Duration{Duration: 48 * time.Hour}, RenewBefore: &metav1.Duration{Duration: time.Hour},
			RenewBeforePercentage: new(int32(30)),
			IssuerRef:             cmmeta.IssuerReference{Name: "ca", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			IsCA:                  true, Usages: []cmapi.KeyUsage{cmapi.UsageServerAuth},
			PrivateKey:            &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 384, Encoding: cmapi.PKCS8, RotationPolicy: cmapi.RotationPolicyNever},
			SignatureAlgorithm:    cmapi.ECDSAWithSHA384,
			EncodeUsagesInRequest: new(true),
			SecretTemplate:        &cmapi.CertificateSecretTemplate{Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"note": "x"}},
			AdditionalOutputFormats: []cmapi.CertificateAdditionalOutputFormat{{Type: cmapi.CertificateOutputFormatCombinedPEM},
				{Type: cmapi.CertificateOutputFormatDER}},
			Keystores: &cmapi.CertificateKeystores{
				PKCS12: &cmapi.PKCS12Keystore{Create: true, PasswordSecretRef: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: "pw"}, Key: "p12"},
					Profile: cmapi.LegacyDESPKCS12Profile, Password: new("unused: the Secret's wins")},
				JKS: &cmapi.JKSKeystore{Create: true, Alias: new("web"), Password: new("literal"),
					PasswordSecretRef: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: "pw"}, Key: "jks"}},
			},
			RevisionHistoryLimit: new(int32(3)),
			Renewal: &cmapi.CertificateRenewal{Policy: cmapi.CertificateRenewalPolicyRenewBefore, Windows: []cmapi.CertificateRenewalWindows{
				{Cron: "0 5 * * MON", WindowDuration: &metav1.Duration{Duration: 2 * time.Hour}, Timezone: "Europe/Oslo"}}},
			NameConstraints: &cmapi.NameConstraints{Critical: true,
				Permitted: &cmapi.NameConstraintItem{DNSDomains: []string{"example"}, IPRanges: []string{"192.0.2.0/24"}, EmailAddresses: []string{"example"}, URIDomains: []string{"example"}},
				Excluded:  &cmapi.NameConstraintItem{DNSDomains: []string{"test"}, IPRanges: []string{"198.51.100.0/24"}, EmailAddresses: []string{"test"}, URIDomains: []string{"test"}}},
		},
	}
}

func paths(errs []*certificate.FieldError) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Path
	}
	return out
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

// The reference operator's annotation cert-manager.io/issue-temporary-certificate
// asks for a temporary certificate while the first issuance runs, when it
// says exactly "true", as the reference operator reads it.
func TestIssueTemporaryCertificateAnnotation(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        bool
	}{
		"no annotation":     {},
		"true":              {annotations: map[string]string{cmapi.IssueTemporaryCertificateAnnotation: "true"}, want: true},
		"false":             {annotations: map[string]string{cmapi.IssueTemporaryCertificateAnnotation: "false"}},
		"anything but true": {annotations: map[string]string{cmapi.IssueTemporaryCertificateAnnotation: "yes"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}, Spec: cmapi.CertificateSpec{SecretName: "web-tls"}}
			assert.Equal(t, tc.want, operator.CertificateToCore(crt, operator.Passwords{}).Spec.IssueTemporaryCertificate)
			assert.Empty(t, operator.NotServed(crt), "served")
		})
	}
}

// The fallback issuers annotation: Kind/name, Kind.group/name or a name
// alone (an Issuer of cert-manager.io); anything else makes the spec
// invalid, naming the annotation.
func TestFallbackIssuersAnnotation(t *testing.T) {
	tests := map[string]struct {
		value string
		want  []certificate.IssuerRef
		bad   bool
	}{
		"none":              {value: ""},
		"a name":            {value: "backup", want: []certificate.IssuerRef{{Name: "backup", Kind: "Issuer", Group: "cert-manager.io"}}},
		"kinds and a group": {value: "ClusterIssuer/zerossl,Issuer.example.org/b.c", want: []certificate.IssuerRef{{Name: "zerossl", Kind: "ClusterIssuer", Group: "cert-manager.io"}, {Name: "b.c", Kind: "Issuer", Group: "example.org"}}},
		"an empty item":     {value: "a,,b", bad: true},
		"no name":           {value: "ClusterIssuer/", bad: true},
		"no kind":           {value: "/name", bad: true},
		"a slash in a name": {value: "Issuer/a/b", bad: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{operator.AnnotationFallbackIssuers: tc.value}},
				Spec: cmapi.CertificateSpec{SecretName: "s", IssuerRef: cmmeta.IssuerReference{Name: "ca"}}}
			problems := paths(operator.NotServed(crt))
			if tc.bad {
				assert.Contains(t, problems, "metadata.annotations["+operator.AnnotationFallbackIssuers+"]")
				return
			}
			assert.Empty(t, problems)
			assert.Equal(t, tc.want, operator.CertificateToCore(crt, operator.Passwords{}).Spec.FallbackIssuerRefs)
		})
	}
}

// The keystore passwords a Certificate names by passwordSecretRef are
// read through the caller's getter; a missing Secret or key is an error
// naming the field, and never carries a password.
func TestKeystorePasswords(t *testing.T) {
	crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: "apps"}, Spec: cmapi.CertificateSpec{Keystores: &cmapi.CertificateKeystores{
		PKCS12: &cmapi.PKCS12Keystore{Create: true, PasswordSecretRef: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: "pw"}, Key: "p12"}},
		JKS:    &cmapi.JKSKeystore{Create: true, PasswordSecretRef: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: "pw"}, Key: "jks"}},
	}}}
	secrets := map[string]*corev1.Secret{"pw": {Data: map[string][]byte{"p12": []byte("secret-one"), "jks": []byte("secret-two")}}}
	get := func(name string) (*corev1.Secret, error) { return secrets[name], nil }
	pw, err := operator.KeystorePasswords(crt, get)
	require.NoError(t, err)
	assert.Equal(t, operator.Passwords{PKCS12: "secret-one", JKS: "secret-two"}, pw)

	delete(secrets["pw"].Data, "jks")
	_, err = operator.KeystorePasswords(crt, get)
	require.EqualError(t, err, `spec.keystores.jks.passwordSecretRef: secret pw has no key "jks"`)
	assert.NotContains(t, err.Error(), "secret-one")

	delete(secrets, "pw")
	_, err = operator.KeystorePasswords(crt, get)
	require.EqualError(t, err, "spec.keystores.pkcs12.passwordSecretRef: secret pw does not exist")
}

package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	gwapi "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// ingress is an Ingress with one TLS entry per secret, each for
// "<secret>.example", annotated with a.
func (h *harness) ingress(name string, a map[string]string, secrets ...string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Annotations: a},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	for _, s := range secrets {
		ing.Spec.TLS = append(ing.Spec.TLS, networkingv1.IngressTLS{SecretName: s, Hosts: []string{s + ".example"}})
	}
	return ing
}

// editObject changes an object as a user would, again on a conflict.
func (h *harness) editObject(obj client.Object, change func()) {
	h.t.Helper()
	require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(h.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return k8s.Update(h.ctx, obj)
	}))
}

// certificateWhen waits for the Certificate name to exist and satisfy ok.
func (h *harness) certificateWhen(name, what string, ok func(*cmapi.Certificate) bool) *cmapi.Certificate {
	h.t.Helper()
	var c *cmapi.Certificate
	h.eventually(fmt.Sprintf("Certificate %s %s", name, what), func() bool {
		c = &cmapi.Certificate{}
		return k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, c) == nil && ok(c)
	})
	return c
}

// certificateGone waits for the Certificate name not to exist.
func (h *harness) certificateGone(name string) {
	h.t.Helper()
	h.eventually("Certificate "+name+" gone", func() bool {
		return apierrors.IsNotFound(k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &cmapi.Certificate{}))
	})
}

// objectEvents lists the notes of the Events with reason about the
// object of kind and name.
func (h *harness) objectEvents(kind, name, reason string) []string {
	var evs eventsv1.EventList
	if err := k8s.List(h.ctx, &evs, client.InNamespace(h.ns)); err != nil {
		return nil
	}
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// waitEvent waits for an Event with reason about the object whose note
// holds every one of parts, and returns the note.
func (h *harness) waitEvent(kind, name, reason string, parts ...string) string {
	h.t.Helper()
	var found string
	h.eventually(fmt.Sprintf("a %s Event on %s %s saying %q", reason, kind, name, parts), func() bool {
		for _, n := range h.objectEvents(kind, name, reason) {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(n, p)
			}
			if all {
				found = n
				return true
			}
		}
		return false
	})
	return found
}

// controlledBy reports whether c's controller is obj.
func controlledBy(c *cmapi.Certificate, obj client.Object) bool {
	ref := metav1.GetControllerOf(c)
	return ref != nil && ref.UID == obj.GetUID() && ref.Name == obj.GetName()
}

// Each annotation the Ingress shim reads, on its own Ingress, and the
// Certificate field it sets.
func TestShimIngressAnnotations(t *testing.T) {
	h := newHarness(t)
	h.start(func(_ *manager.Options, o *operator.Options) {
		o.Shim.ExtraCertificateAnnotations = []string{"example.com/team"}
	})
	issuer := map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}
	with := func(kv ...string) map[string]string {
		a := map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}
		for i := 0; i < len(kv); i += 2 {
			a[kv[i]] = kv[i+1]
		}
		return a
	}
	tests := []struct {
		name  string
		a     map[string]string
		check func(t *testing.T, c *cmapi.Certificate)
	}{
		{"issuer", issuer, func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, cmmeta.IssuerReference{Name: "ca", Kind: cmapi.IssuerKind, Group: "cert-manager.io"}, c.Spec.IssuerRef)
			assert.Equal(t, cmapi.DefaultKeyUsages(), c.Spec.Usages, "the default usages")
			assert.Empty(t, c.Annotations[cmacme.ACMECertificateHTTP01IngressNameOverride])
		}},
		{"cluster-issuer", map[string]string{cmapi.IngressClusterIssuerNameAnnotationKey: "ca"}, func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, cmmeta.IssuerReference{Name: "ca", Kind: cmapi.ClusterIssuerKind, Group: "cert-manager.io"}, c.Spec.IssuerRef)
		}},
		{"an external issuer", with(cmapi.IssuerKindAnnotationKey, "AWSPCAIssuer", cmapi.IssuerGroupAnnotationKey, "awspca.cert-manager.io"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, cmmeta.IssuerReference{Name: "ca", Kind: "AWSPCAIssuer", Group: "awspca.cert-manager.io"}, c.Spec.IssuerRef)
		}},
		{"common-name", with(cmapi.CommonNameAnnotationKey, "www.example"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, "www.example", c.Spec.CommonName)
		}},
		{"duration", with(cmapi.DurationAnnotationKey, "2160h"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &metav1.Duration{Duration: 2160 * time.Hour}, c.Spec.Duration)
		}},
		{"renew-before", with(cmapi.RenewBeforeAnnotationKey, "360h"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &metav1.Duration{Duration: 360 * time.Hour}, c.Spec.RenewBefore)
		}},
		{"renew-before-percentage", with(cmapi.RenewBeforePercentageAnnotationKey, "40"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, new(int32(40)), c.Spec.RenewBeforePercentage)
		}},
		{"usages", with(cmapi.UsagesAnnotationKey, "digital signature, key encipherment,server auth"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, []cmapi.KeyUsage{cmapi.UsageDigitalSignature, cmapi.UsageKeyEncipherment, cmapi.UsageServerAuth}, c.Spec.Usages)
		}},
		{"private-key-algorithm and -size", with(cmapi.PrivateKeyAlgorithmAnnotationKey, "ECDSA", cmapi.PrivateKeySizeAnnotationKey, "384"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 384}, c.Spec.PrivateKey)
		}},
		{"private-key-size alone is RSA's", with(cmapi.PrivateKeySizeAnnotationKey, "4096"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &cmapi.CertificatePrivateKey{Size: 4096}, c.Spec.PrivateKey)
		}},
		{"private-key-encoding", with(cmapi.PrivateKeyEncodingAnnotationKey, "PKCS8"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &cmapi.CertificatePrivateKey{Encoding: cmapi.PKCS8}, c.Spec.PrivateKey)
		}},
		{"private-key-rotation-policy", with(cmapi.PrivateKeyRotationPolicyAnnotationKey, "Never"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &cmapi.CertificatePrivateKey{RotationPolicy: cmapi.RotationPolicyNever}, c.Spec.PrivateKey)
		}},
		{"revision-history-limit", with(cmapi.RevisionHistoryLimitAnnotationKey, "3"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, new(int32(3)), c.Spec.RevisionHistoryLimit)
		}},
		{"email-sans", with(cmapi.EmailsAnnotationKey, "a@example.com,b@example.com"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, []string{"a@example.com", "b@example.com"}, c.Spec.EmailAddresses)
		}},
		{"alt-names and ip-sans", with(cmapi.AltNamesAnnotationKey, "alt.example", cmapi.IPSANAnnotationKey, "192.0.2.1"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, []string{c.Name + ".example", "alt.example"}, c.Spec.DNSNames)
			assert.Equal(t, []string{"192.0.2.1"}, c.Spec.IPAddresses)
		}},
		{"subject fields", with(
			cmapi.SubjectOrganizationsAnnotationKey, `"Acme, Inc.",Other`,
			cmapi.SubjectOrganizationalUnitsAnnotationKey, "Ops",
			cmapi.SubjectCountriesAnnotationKey, "FR,DE",
			cmapi.SubjectProvincesAnnotationKey, "Île-de-France",
			cmapi.SubjectLocalitiesAnnotationKey, "Paris",
			cmapi.SubjectPostalCodesAnnotationKey, "75001",
			cmapi.SubjectStreetAddressesAnnotationKey, "1 rue de Rivoli",
			cmapi.SubjectSerialNumberAnnotationKey, "42"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &cmapi.X509Subject{Organizations: []string{"Acme, Inc.", "Other"}, OrganizationalUnits: []string{"Ops"},
				Countries: []string{"FR", "DE"}, Provinces: []string{"Île-de-France"}, Localities: []string{"Paris"},
				PostalCodes: []string{"75001"}, StreetAddresses: []string{"1 rue de Rivoli"}, SerialNumber: "42"}, c.Spec.Subject)
		}},
		{"secret-template", with(cmapi.IngressSecretTemplate, `{"labels":{"team":"web"},"annotations":{"note":"x"}}`), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, &cmapi.CertificateSecretTemplate{Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"note": "x"}}, c.Spec.SecretTemplate)
		}},
		{"http01-edit-in-place", with(cmacme.IngressEditInPlaceAnnotationKey, "true"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, "ing-http01-edit-in-place", c.Annotations[cmacme.ACMECertificateHTTP01IngressNameOverride], "the Ingress to edit")
			assert.Equal(t, "true", c.Annotations[cmapi.IssueTemporaryCertificateAnnotation])
		}},
		{"http01-ingress-class", with(cmapi.IngressACMEIssuerHTTP01IngressClassAnnotationKey, "traefik"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, "traefik", c.Annotations[cmacme.ACMECertificateHTTP01IngressClassOverride])
		}},
		{"http01-ingress-ingressclassname", with(cmapi.IngressACMEIssuerHTTP01IngressClassNameAnnotationKey, "nginx"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, "nginx", c.Annotations[cmacme.ACMECertificateHTTP01IngressClassNameOverride])
		}},
		{"extra-certificate-annotations", with("example.com/team", "web", "example.com/other", "no"), func(t *testing.T, c *cmapi.Certificate) {
			assert.Equal(t, "web", c.Annotations["example.com/team"])
			assert.NotContains(t, c.Annotations, "example.com/other")
		}},
	}
	ingresses := map[string]*networkingv1.Ingress{}
	for _, tc := range tests {
		name := "ing-" + strings.ToLower(strings.NewReplacer(" ", "-", "'", "").Replace(tc.name))
		if len(name) > 40 {
			name = name[:40]
		}
		ing := h.ingress(name, tc.a, name+"-tls")
		ing.Labels = map[string]string{"app": name, "applyset.kubernetes.io/part-of": "set"}
		h.create(ing)
		ingresses[tc.name] = ing
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ing := ingresses[tc.name]
			c := h.certificateWhen(ing.Name+"-tls", "made", func(*cmapi.Certificate) bool { return true })
			assert.True(t, controlledBy(c, ing), "the Ingress controls its Certificate")
			assert.Equal(t, ing.Name+"-tls", c.Spec.SecretName)
			assert.Contains(t, c.Spec.DNSNames, ing.Name+"-tls.example")
			assert.Equal(t, map[string]string{"app": ing.Name}, c.Labels, "the Ingress's labels but kubectl's applyset label")
			tc.check(t, c)
		})
	}
}

// A value the shim cannot use gets a Warning Event naming the annotation
// and the value, and no Certificate; on an Ingress that has one, the
// Certificate stays as it is.
func TestShimIngressBadAnnotations(t *testing.T) {
	h := newHarness(t)
	h.start()
	tests := []struct {
		annotation, value string
		parts             []string
	}{
		{cmapi.DurationAnnotationKey, "90 days", nil},
		{cmapi.RenewBeforeAnnotationKey, "soon", nil},
		{cmapi.RenewBeforePercentageAnnotationKey, "half", nil},
		{cmapi.UsagesAnnotationKey, "digital signature,teleport", []string{`"teleport"`}},
		{cmapi.RevisionHistoryLimitAnnotationKey, "0", nil},
		{cmapi.PrivateKeyAlgorithmAnnotationKey, "DSA", nil},
		{cmapi.PrivateKeyEncodingAnnotationKey, "DER", nil},
		{cmapi.PrivateKeySizeAnnotationKey, "1024", []string{"RSA"}},
		{cmapi.PrivateKeyRotationPolicyAnnotationKey, "Sometimes", nil},
		{cmapi.SubjectOrganizationsAnnotationKey, `"unterminated`, nil},
		{cmapi.IPSANAnnotationKey, "192.0.2.300", nil},
		{cmapi.IngressSecretTemplate, `{"labels":`, nil},
		{cmapi.IngressSecretTemplate, `{"annotations":{"cert-manager.io/x":"y"}}`, []string{"cert-manager.io/x"}},
	}
	for i, tc := range tests {
		name := fmt.Sprintf("bad-%d", i)
		h.create(h.ingress(name, map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca", tc.annotation: tc.value}, name+"-tls"))
	}
	// An Ingress with a Certificate, then a bad value.
	good := h.ingress("good", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}, "good-tls")
	h.create(good)
	before := h.certificateWhen("good-tls", "made", func(*cmapi.Certificate) bool { return true })
	h.editObject(good, func() {
		good.Annotations[cmapi.DurationAnnotationKey] = "forever"
		good.Spec.TLS[0].Hosts = append(good.Spec.TLS[0].Hosts, "more.example")
	})

	for i, tc := range tests {
		t.Run(fmt.Sprintf("%s=%s", tc.annotation, tc.value), func(t *testing.T) {
			name := fmt.Sprintf("bad-%d", i)
			note := h.waitEvent("Ingress", name, operator.ReasonBadConfig, append([]string{tc.annotation, fmt.Sprintf("%q", tc.value)}, tc.parts...)...)
			t.Log(note)
			assert.True(t, apierrors.IsNotFound(k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name + "-tls"}, &cmapi.Certificate{})), "no Certificate")
		})
	}
	h.waitEvent("Ingress", "good", operator.ReasonBadConfig, cmapi.DurationAnnotationKey, `"forever"`, "left as they are")
	after := h.get("good-tls")
	assert.Equal(t, before.Spec, after.Spec, "the Certificate is left as it was")
}

// Annotations and TLS entries the shim cannot use as a whole: a Warning
// Event, and nothing made; an entry without hosts is skipped, the others
// served.
func TestShimIngressBadConfig(t *testing.T) {
	h := newHarness(t)
	h.start()
	both := h.ingress("both", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "a", cmapi.IngressClusterIssuerNameAnnotationKey: "b"}, "both-tls")
	h.create(both)
	acme := h.ingress("acme", map[string]string{"kubernetes.io/tls-acme": "true"}, "acme-tls")
	h.create(acme)
	dup := h.ingress("dup", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}, "dup-tls", "dup-tls")
	h.create(dup)
	partial := h.ingress("partial", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}, "ok-tls", "nohosts-tls")
	partial.Spec.TLS[1].Hosts = nil
	h.create(partial)

	h.waitEvent("Ingress", "both", operator.ReasonBadConfig, cmapi.IngressIssuerNameAnnotationKey, cmapi.IngressClusterIssuerNameAnnotationKey)
	h.waitEvent("Ingress", "acme", operator.ReasonBadConfig, "no issuer is named")
	h.waitEvent("Ingress", "dup", operator.ReasonBadConfig, "spec.tls[0].secretName", "dup-tls")
	h.waitEvent("Ingress", "partial", operator.ReasonBadConfig, "spec.tls[1].hosts")
	h.certificateWhen("ok-tls", "made", func(c *cmapi.Certificate) bool { return controlledBy(c, partial) })
	for _, name := range []string{"both-tls", "acme-tls", "dup-tls", "nohosts-tls"} {
		assert.True(t, apierrors.IsNotFound(k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &cmapi.Certificate{})), "no Certificate %s", name)
	}
}

// kubernetes.io/tls-acme asks for a certificate from the default issuer,
// when the operator has one.
func TestShimIngressTLSACMEWithDefaultIssuer(t *testing.T) {
	h := newHarness(t)
	h.start(func(_ *manager.Options, o *operator.Options) { o.Shim.DefaultIssuerName = "le" })
	h.create(h.ingress("acme", map[string]string{"kubernetes.io/tls-acme": "true"}, "acme-tls"))
	h.create(h.ingress("off", map[string]string{"kubernetes.io/tls-acme": "false"}, "off-tls"))
	c := h.certificateWhen("acme-tls", "made", func(*cmapi.Certificate) bool { return true })
	assert.Equal(t, cmmeta.IssuerReference{Name: "le", Kind: cmapi.IssuerKind, Group: "cert-manager.io"}, c.Spec.IssuerRef)
	// The one set to "false" asks for nothing: an Ingress made after it
	// is served, and it still has no Certificate.
	h.create(h.ingress("after", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "x"}, "after-tls"))
	h.certificateWhen("after-tls", "made", func(*cmapi.Certificate) bool { return true })
	assert.True(t, apierrors.IsNotFound(k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "off-tls"}, &cmapi.Certificate{})))
}

// The Certificates follow the Ingress: a host added or removed, a secret
// renamed, an issuer changed, an annotation removed (edit-in-place), the
// issuer annotation removed, the Ingress deleted.
func TestShimIngressUpdates(t *testing.T) {
	h := newHarness(t)
	h.start()
	ing := h.ingress("web", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca", cmacme.IngressEditInPlaceAnnotationKey: "true"}, "a-tls", "b-tls")
	h.create(ing)
	h.certificateWhen("a-tls", "made", func(c *cmapi.Certificate) bool {
		return c.Annotations[cmacme.ACMECertificateHTTP01IngressNameOverride] == "web"
	})
	h.certificateWhen("b-tls", "made", func(*cmapi.Certificate) bool { return true })

	h.editObject(ing, func() { ing.Spec.TLS[0].Hosts = append(ing.Spec.TLS[0].Hosts, "www.example") })
	h.certificateWhen("a-tls", "with the host added", func(c *cmapi.Certificate) bool {
		return strings.Join(c.Spec.DNSNames, ",") == "a-tls.example,www.example"
	})
	h.editObject(ing, func() { ing.Spec.TLS[0].Hosts = []string{"www.example"} })
	h.certificateWhen("a-tls", "with the host removed", func(c *cmapi.Certificate) bool {
		return strings.Join(c.Spec.DNSNames, ",") == "www.example"
	})
	h.editObject(ing, func() { ing.Spec.TLS[1].SecretName = "c-tls" })
	h.certificateWhen("c-tls", "made for the renamed secret", func(c *cmapi.Certificate) bool { return controlledBy(c, ing) })
	h.certificateGone("b-tls")
	h.editObject(ing, func() {
		ing.Annotations[cmapi.IngressIssuerNameAnnotationKey] = "other"
		delete(ing.Annotations, cmacme.IngressEditInPlaceAnnotationKey)
	})
	h.certificateWhen("a-tls", "from the other issuer, not edited in place", func(c *cmapi.Certificate) bool {
		_, inPlace := c.Annotations[cmacme.ACMECertificateHTTP01IngressNameOverride]
		_, temporary := c.Annotations[cmapi.IssueTemporaryCertificateAnnotation]
		return c.Spec.IssuerRef.Name == "other" && !inPlace && !temporary
	})
	h.editObject(ing, func() { delete(ing.Annotations, cmapi.IngressIssuerNameAnnotationKey) })
	h.certificateGone("a-tls")
	h.certificateGone("c-tls")

	h.editObject(ing, func() { ing.Annotations = map[string]string{cmapi.IngressClusterIssuerNameAnnotationKey: "ca"} })
	h.certificateWhen("a-tls", "made again", func(c *cmapi.Certificate) bool { return controlledBy(c, ing) })
	require.NoError(t, k8s.Delete(h.ctx, ing))
	h.certificateGone("a-tls") // envtest has no garbage collector: the shim's own doing
	h.certificateGone("c-tls")

	// Made again under the same name: a new owner, new Certificates.
	again := h.ingress("web", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}, "a-tls")
	h.create(again)
	h.certificateWhen("a-tls", "made for the new Ingress", func(c *cmapi.Certificate) bool { return controlledBy(c, again) })
}

// A Certificate of the name the shim would use that is not the
// Ingress's own — a user's, or another Ingress's — is left alone, with
// a Warning Event; once it is gone, the Ingress gets its own.
func TestShimLeavesCertificatesItDoesNotOwn(t *testing.T) {
	h := newHarness(t)
	r := h.start()
	users := h.certificate("mine", "ca", func(s *cmapi.CertificateSpec) { s.SecretName = "shared-tls" })
	users.Name = "shared-tls"
	h.create(users)
	first := h.ingress("first", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}, "first-tls")
	h.create(first)
	h.certificateWhen("first-tls", "made", func(*cmapi.Certificate) bool { return true })
	second := h.ingress("second", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "other"}, "first-tls", "shared-tls")
	h.create(second)

	h.waitEvent("Ingress", "second", operator.ReasonCertificateNotOwned, "shared-tls", "has no owner")
	h.waitEvent("Ingress", "second", operator.ReasonCertificateNotOwned, "first-tls", "owned by Ingress first")
	h.settle(r)
	assert.Equal(t, users.Spec.IssuerRef, h.get("shared-tls").Spec.IssuerRef, "the user's Certificate is as it was")
	assert.Empty(t, h.get("shared-tls").OwnerReferences)
	assert.True(t, controlledBy(h.get("first-tls"), first), "the first Ingress's Certificate is still its own")
	assert.Equal(t, "ca", h.get("first-tls").Spec.IssuerRef.Name)

	// The user's Certificate goes: the second Ingress's is made.
	require.NoError(t, k8s.Delete(h.ctx, users))
	h.certificateWhen("shared-tls", "made for the second Ingress", func(c *cmapi.Certificate) bool { return controlledBy(c, second) })
	// The second Ingress gives up first-tls: the first's stays.
	h.editObject(second, func() { second.Spec.TLS = second.Spec.TLS[1:] })
	h.settle(r)
	assert.True(t, controlledBy(h.get("first-tls"), first))
}

// The Certificate made from an Ingress is issued, end to end, by a CA
// issuer.
func TestShimIngressCertificateBecomesReady(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.caIssuer("ca")
	h.create(h.ingress("web", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca", cmapi.PrivateKeyAlgorithmAnnotationKey: "ECDSA"}, "web-tls"))
	h.waitReady("web-tls", 1)
	s, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.Contains(t, string(s.Data["tls.crt"]), "BEGIN CERTIFICATE")
}

// gateway is a Gateway annotated with a and listeners ls.
func (h *harness) gateway(name string, a map[string]string, ls ...gwapi.Listener) *gwapi.Gateway {
	return &gwapi.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Annotations: a},
		Spec: gwapi.GatewaySpec{GatewayClassName: "example", Listeners: ls}}
}

// listener is an HTTPS listener for hostname terminating TLS with the
// Secrets named.
func listener(name, hostname string, secrets ...string) gwapi.Listener {
	l := gwapi.Listener{Name: gwapi.SectionName(name), Port: 443, Protocol: gwapi.HTTPSProtocolType,
		TLS: &gwapi.ListenerTLSConfig{Mode: new(gwapi.TLSModeTerminate)}}
	if hostname != "" {
		l.Hostname = new(gwapi.Hostname(hostname))
	}
	for _, s := range secrets {
		l.TLS.CertificateRefs = append(l.TLS.CertificateRefs, gwapi.SecretObjectReference{Name: gwapi.ObjectName(s)})
	}
	return l
}

// The Gateway shim: one Certificate per Secret, for the hostnames of
// the listeners naming it; listeners it does not serve are passed over
// (Passthrough, HTTP, ignored) or skipped with an Event (no hostname, a
// Secret in another namespace); it follows the Gateway's changes and
// removal.
func TestShimGateway(t *testing.T) {
	h := newHarness(t)
	h.start()
	passthrough := listener("passthrough", "pass.example")
	passthrough.Protocol = gwapi.TLSProtocolType
	passthrough.TLS = &gwapi.ListenerTLSConfig{Mode: new(gwapi.TLSModePassthrough)}
	plain := gwapi.Listener{Name: "http", Port: 80, Protocol: gwapi.HTTPProtocolType, Hostname: new(gwapi.Hostname("plain.example"))}
	elsewhere := listener("elsewhere", "else.example", "else-tls")
	elsewhere.TLS.CertificateRefs[0].Namespace = new(gwapi.Namespace("kube-system"))
	gw := h.gateway("gw", map[string]string{cmapi.IngressClusterIssuerNameAnnotationKey: "ca", cmapi.CertificateIgnoreTLSListeners: "ignored",
		cmapi.DurationAnnotationKey: "720h"},
		listener("web", "web.example", "web-tls"),
		listener("www", "www.example", "web-tls"),
		listener("api", "api.example", "api-tls"),
		listener("ignored", "ignored.example", "ignored-tls"),
		listener("nohost", "", "nohost-tls"),
		passthrough, plain, elsewhere)
	h.create(gw)

	web := h.certificateWhen("web-tls", "made", func(*cmapi.Certificate) bool { return true })
	assert.True(t, controlledBy(web, gw), "the Gateway controls its Certificate")
	assert.Equal(t, []string{"web.example", "www.example"}, web.Spec.DNSNames, "the hostnames of the listeners naming the Secret")
	assert.Equal(t, cmmeta.IssuerReference{Name: "ca", Kind: cmapi.ClusterIssuerKind, Group: "cert-manager.io"}, web.Spec.IssuerRef)
	assert.Equal(t, &metav1.Duration{Duration: 720 * time.Hour}, web.Spec.Duration)
	assert.Equal(t, "Gateway", web.Annotations[cmacme.ACMECertificateHTTP01ParentRefKind])
	assert.Equal(t, "gw", web.Annotations[cmacme.ACMECertificateHTTP01ParentRefName])
	assert.Equal(t, []string{"api.example"}, h.certificateWhen("api-tls", "made", func(*cmapi.Certificate) bool { return true }).Spec.DNSNames)
	h.waitEvent("Gateway", "gw", operator.ReasonBadConfig, "spec.listeners[4].hostname")
	h.waitEvent("Gateway", "gw", operator.ReasonBadConfig, "spec.listeners[7].tls.certificateRefs[0].namespace")
	for _, name := range []string{"ignored-tls", "nohost-tls", "else-tls"} {
		assert.True(t, apierrors.IsNotFound(k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &cmapi.Certificate{})), "no Certificate %s", name)
	}

	// A hostname changed, a listener removed.
	h.editObject(gw, func() {
		gw.Spec.Listeners[1].Hostname = new(gwapi.Hostname("w3.example"))
		gw.Spec.Listeners = append(gw.Spec.Listeners[:2], gw.Spec.Listeners[3:]...) // api
	})
	h.certificateWhen("web-tls", "with the new hostname", func(c *cmapi.Certificate) bool {
		return strings.Join(c.Spec.DNSNames, ",") == "web.example,w3.example"
	})
	h.certificateGone("api-tls")
	// A bad annotation: nothing changes.
	h.editObject(gw, func() { gw.Annotations[cmapi.PrivateKeySizeAnnotationKey] = "big" })
	h.waitEvent("Gateway", "gw", operator.ReasonBadConfig, cmapi.PrivateKeySizeAnnotationKey, `"big"`)
	// Unannotated: its Certificates go.
	h.editObject(gw, func() {
		delete(gw.Annotations, cmapi.IngressClusterIssuerNameAnnotationKey)
		delete(gw.Annotations, cmapi.PrivateKeySizeAnnotationKey)
	})
	h.certificateGone("web-tls")
	h.editObject(gw, func() { gw.Annotations[cmapi.IngressIssuerNameAnnotationKey] = "ca" })
	h.certificateWhen("web-tls", "made again", func(c *cmapi.Certificate) bool { return c.Spec.IssuerRef.Kind == cmapi.IssuerKind })
	require.NoError(t, k8s.Delete(h.ctx, gw))
	h.certificateGone("web-tls")
}

// Options.Shim.DisableIngress turns the Ingress shim off, the Gateway
// one staying on: an annotated Gateway made after an annotated Ingress
// gets its Certificate, and the Ingress none.
func TestShimIngressDisabled(t *testing.T) {
	h := newHarness(t)
	r := h.start(func(_ *manager.Options, o *operator.Options) { o.Shim.DisableIngress = true })
	h.create(h.ingress("web", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}, "web-tls"))
	h.create(h.gateway("gw", map[string]string{cmapi.IngressIssuerNameAnnotationKey: "ca"}, listener("gw", "gw.example", "gw-tls")))
	h.certificateWhen("gw-tls", "made", func(*cmapi.Certificate) bool { return true })
	h.settle(r)
	assert.True(t, apierrors.IsNotFound(k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "web-tls"}, &cmapi.Certificate{})), "no Certificate from the Ingress")
}

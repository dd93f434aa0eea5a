package operator_test

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	cmutil "github.com/cert-manager/cert-manager/pkg/util"
	"github.com/cert-manager/cert-manager/pkg/util/pki"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// migrated is one Certificate as the reference operator leaves it.
type migrated struct {
	name     string
	encoding string // the PEM block type of tls.key
	key      []byte // tls.key as written
	request  bool   // its last revision's CertificateRequest is kept
}

// reference is what the reference operator leaves for one Certificate,
// made in memory before any of it is written (see referenceMake).
type reference struct {
	crt     *cmapi.Certificate        // the spec as the user wrote it
	status  cmapi.CertificateStatus   // as its controllers left it
	request *cmapi.CertificateRequest // its last revision's, issued; nil when gone
	secret  *corev1.Secret            // its Secret
	key     []byte                    // tls.key as written
}

// referenceMake makes, with the reference operator's own pki package, a
// Certificate's key, request and certificate from ca as its CA issuer
// does, and what the reference operator leaves after issuing them: the
// Secret (type kubernetes.io/tls, its label and annotations, tls.key in
// the encoding privateKey.encoding says: PKCS#1 by default, SEC1 for
// ECDSA, PKCS#8 when asked), the Certificate's status (Ready, revision,
// notBefore, notAfter, renewalTime) and, when keepRequest, the
// CertificateRequest of that revision (approved and issued). It talks to
// no API server; referenceWrite writes what it made.
func referenceMake(crt *cmapi.Certificate, ca *x509.Certificate, caKey crypto.Signer, revision int, keepRequest bool) (*reference, error) {
	key, err := pki.GeneratePrivateKeyForCertificate(crt)
	if err != nil {
		return nil, err
	}
	encoding := cmapi.PKCS1
	if crt.Spec.PrivateKey != nil && crt.Spec.PrivateKey.Encoding != "" {
		encoding = crt.Spec.PrivateKey.Encoding
	}
	keyPEM, err := pki.EncodePrivateKey(key, encoding)
	if err != nil {
		return nil, err
	}
	csr, err := pki.GenerateCSR(crt)
	if err != nil {
		return nil, err
	}
	csrDER, err := pki.EncodeCSR(csr, key)
	if err != nil {
		return nil, err
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})

	cr := &cmapi.CertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", crt.Name, revision),
			Annotations: map[string]string{
				cmapi.CertificateRequestRevisionAnnotationKey:   strconv.Itoa(revision),
				cmapi.CertificateRequestPrivateKeyAnnotationKey: crt.Name + "-x7k2p", // gone after the issuance
				cmapi.CertificateNameKey:                        crt.Name,
			}},
		Spec: cmapi.CertificateRequestSpec{Duration: crt.Spec.Duration, IssuerRef: crt.Spec.IssuerRef, Request: csrPEM,
			IsCA: crt.Spec.IsCA, Usages: crt.Spec.Usages},
	}
	tmpl, err := pki.CertificateTemplateFromCertificateRequest(cr)
	if err != nil {
		return nil, err
	}
	bundle, err := pki.SignCSRTemplate([]*x509.Certificate{ca}, caKey, tmpl)
	if err != nil {
		return nil, err
	}
	leaf, err := pki.DecodeX509CertificateBytes(bundle.ChainPEM)
	if err != nil {
		return nil, err
	}
	r := &reference{crt: crt, key: keyPEM}
	if keepRequest {
		now := metav1.NewTime(leaf.NotBefore)
		cr.Status = cmapi.CertificateRequestStatus{
			Conditions: []cmapi.CertificateRequestCondition{
				{Type: cmapi.CertificateRequestConditionApproved, Status: cmmeta.ConditionTrue, Reason: "cert-manager.io",
					Message: "Certificate request has been approved by cert-manager.io", LastTransitionTime: &now},
				{Type: cmapi.CertificateRequestConditionReady, Status: cmmeta.ConditionTrue, Reason: cmapi.CertificateRequestReasonIssued,
					Message: "Certificate fetched from issuer successfully", LastTransitionTime: &now},
			},
			Certificate: bundle.ChainPEM, CA: bundle.CAPEM,
		}
		r.request = cr
	}

	// The Secret as the reference operator's issuing controller writes
	// it: its certificate details, the request's issuerRef as written.
	annotations := map[string]string{
		cmapi.CommonNameAnnotationKey:  leaf.Subject.CommonName,
		cmapi.AltNamesAnnotationKey:    joinCSV(leaf.DNSNames),
		cmapi.IPSANAnnotationKey:       joinCSV(pki.IPAddressesToString(leaf.IPAddresses)),
		cmapi.URISANAnnotationKey:      joinCSV(pki.URLsToString(leaf.URIs)),
		cmapi.CertificateNameKey:       crt.Name,
		cmapi.IssuerNameAnnotationKey:  crt.Spec.IssuerRef.Name,
		cmapi.IssuerKindAnnotationKey:  crt.Spec.IssuerRef.Kind,
		cmapi.IssuerGroupAnnotationKey: crt.Spec.IssuerRef.Group,
	}
	if len(leaf.Subject.Organization) > 0 {
		annotations[cmapi.SubjectOrganizationsAnnotationKey] = joinCSV(leaf.Subject.Organization)
	}
	if len(leaf.EmailAddresses) > 0 {
		annotations[cmapi.EmailsAnnotationKey] = joinCSV(leaf.EmailAddresses)
	}
	r.secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: crt.Spec.SecretName, Annotations: annotations,
			Labels: map[string]string{cmapi.PartOfCertManagerControllerLabelKey: "true"}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: bundle.ChainPEM, corev1.TLSPrivateKeyKey: keyPEM, cmmeta.TLSCAKey: bundle.CAPEM},
	}

	renewal, err := pki.RenewalTime(leaf.NotBefore, leaf.NotAfter, crt.Spec.RenewBefore, crt.Spec.RenewBeforePercentage, crt.Spec.Renewal)
	if err != nil {
		return nil, err
	}
	ready := metav1.NewTime(leaf.NotBefore)
	r.status = cmapi.CertificateStatus{
		Conditions: []cmapi.CertificateCondition{{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue, Reason: "Ready",
			Message: referenceReadyMessage, LastTransitionTime: &ready}},
		NotBefore: &metav1.Time{Time: leaf.NotBefore}, NotAfter: &metav1.Time{Time: leaf.NotAfter}, RenewalTime: renewal,
		Revision: new(revision),
	}
	return r, nil
}

// referenceWrite writes what referenceMake made into the test's
// namespace: the Certificate and its status (observing the generation it
// was created at), the CertificateRequest (owned by the Certificate) and
// the Secret. It may run on many goroutines at once.
func (h *harness) referenceWrite(r *reference) error {
	crt := r.crt.DeepCopy()
	crt.Namespace = h.ns
	if err := k8s.Create(h.ctx, crt); err != nil {
		return fmt.Errorf("certificate %s: %w", crt.Name, err)
	}
	crt.Status = *r.status.DeepCopy()
	for i := range crt.Status.Conditions {
		crt.Status.Conditions[i].ObservedGeneration = crt.Generation
	}
	if err := k8s.Status().Update(h.ctx, crt); err != nil {
		return fmt.Errorf("certificate %s status: %w", crt.Name, err)
	}
	if r.request != nil {
		cr := r.request.DeepCopy()
		cr.Namespace = h.ns
		cr.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(crt, cmapi.SchemeGroupVersion.WithKind(cmapi.CertificateKind))}
		status := cr.Status
		if err := k8s.Create(h.ctx, cr); err != nil {
			return fmt.Errorf("request %s: %w", cr.Name, err)
		}
		cr.Status = status
		if err := k8s.Status().Update(h.ctx, cr); err != nil {
			return fmt.Errorf("request %s status: %w", cr.Name, err)
		}
	}
	s := r.secret.DeepCopy()
	s.Namespace = h.ns
	if err := k8s.Create(h.ctx, s); err != nil {
		return fmt.Errorf("secret %s: %w", s.Name, err)
	}
	return nil
}

// referenceIssue makes (referenceMake) and writes (referenceWrite) one
// Certificate as the reference operator leaves it.
func (h *harness) referenceIssue(crt *cmapi.Certificate, ca *x509.Certificate, caKey crypto.Signer, revision int, keepRequest bool) migrated {
	h.t.Helper()
	r, err := referenceMake(crt, ca, caKey, revision, keepRequest)
	require.NoError(h.t, err)
	require.NoError(h.t, h.referenceWrite(r))
	return r.migrated()
}

// migrated is what a test checks of a reference after the operator ran.
func (r *reference) migrated() migrated {
	block, _ := pem.Decode(r.key)
	m := migrated{name: r.crt.Name, key: r.key, request: r.request != nil}
	if block != nil {
		m.encoding = block.Type
	}
	return m
}

// referenceSpec is the spec of the i-th Certificate of a migration, made
// by the reference operator: issuerRefs with and without kind and group
// (every other one); keys RSA 2048 in PKCS#1 (the reference operator's
// default, no privateKey), ECDSA P-256 in SEC1 (its default encoding for
// ECDSA), ECDSA P-384 in PKCS#8, and RSA 2048 in PKCS#8 with a common
// name, an IP address, a URI and an organization, in turn. Without rsa,
// the two RSA kinds are ECDSA P-256 instead (the first with its default
// encoding, the second in PKCS#8), as cheap keys for a large fleet.
func referenceSpec(name string, i int, rsa bool) cmapi.CertificateSpec {
	spec := cmapi.CertificateSpec{SecretName: name + "-tls", DNSNames: []string{name + ".example"}, IssuerRef: cmmeta.IssuerReference{Name: "ca"}}
	if i%2 == 1 {
		spec.IssuerRef.Kind, spec.IssuerRef.Group = cmapi.IssuerKind, operator.GroupName
	}
	switch i % 4 {
	case 0: // the reference operator's default key: RSA 2048, PKCS#1
		if !rsa {
			spec.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256}
		}
	case 1:
		spec.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256}
	case 2:
		spec.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 384, Encoding: cmapi.PKCS8}
	case 3:
		spec.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.RSAKeyAlgorithm, Size: 2048, Encoding: cmapi.PKCS8}
		if !rsa {
			spec.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256, Encoding: cmapi.PKCS8}
		}
		spec.CommonName = name + ".example"
		spec.IPAddresses = []string{fmt.Sprintf("192.0.2.%d", i%256)}
		spec.URIs = []string{"spiffe://cluster.local/" + name}
		spec.Subject = &cmapi.X509Subject{Organizations: []string{"Example"}}
	}
	return spec
}

// A cluster moving from the reference operator keeps every valid
// certificate: 24 Certificates with their Secrets and status as the
// reference operator v1.21 leaves them — RSA keys in PKCS#1 (its
// default), ECDSA keys in SEC1, PKCS#8 where privateKey.encoding says so;
// issuerRefs with and without kind and group; revisions 1 to 3; the
// CertificateRequest of the last revision kept for some, gone for the
// others — are adopted when the operator starts: no CertificateRequest is
// created, no next private key made, and every Certificate is Ready. The
// Secrets as the reference operator left them are not written at all;
// four await a repair — two lost metadata (the managed label, the
// alt-names annotation), two hold a key in another encoding than the spec's (the
// user changed privateKey.encoding) — and each of those is written once,
// its key the same. No Certificate is written: certlife's status of a
// valid certificate is the reference operator's, Ready message included.
// The API server's watch counts every change of each Secret and every
// request created.
func TestMigrationFromTheReferenceOperator(t *testing.T) {
	h := newHarness(t)
	ca := h.caIssuer("ca")
	caKeyPEM, err := ca.KeyPEM()
	require.NoError(t, err)
	caKey, err := keys.DecodePrivateKey(caKeyPEM)
	require.NoError(t, err)

	const asLeft, n = 20, 24
	var certs []migrated
	for i := range n {
		name := fmt.Sprintf("m%02d", i)
		crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: referenceSpec(name, i, true)}
		certs = append(certs, h.referenceIssue(crt, ca.Certificate(), caKey.(crypto.Signer), 1+i%3, i%3 != 1))
	}
	encodings := map[string]int{}
	for _, c := range certs[:asLeft] {
		encodings[c.encoding]++
	}
	require.Equal(t, map[string]int{"RSA PRIVATE KEY": 5, "EC PRIVATE KEY": 5, "PRIVATE KEY": 10}, encodings, "each key encoding the reference operator writes")

	// The four that await a repair.
	h.editSecret(certs[20].name+"-tls", func(s *corev1.Secret) { delete(s.Labels, cmapi.PartOfCertManagerControllerLabelKey) })
	h.editSecret(certs[21].name+"-tls", func(s *corev1.Secret) { delete(s.Annotations, cmapi.AltNamesAnnotationKey) })
	for _, i := range []int{22, 23} { // PKCS#8 asked, PKCS#1 or SEC1 held
		h.editSecret(certs[i].name+"-tls", func(s *corev1.Secret) {
			key, err := keys.DecodePrivateKey(s.Data[corev1.TLSPrivateKeyKey])
			require.NoError(t, err)
			s.Data[corev1.TLSPrivateKeyKey], err = pki.EncodePrivateKey(key, cmapi.PKCS1)
			require.NoError(t, err)
			certs[i].key = s.Data[corev1.TLSPrivateKeyKey]
		})
	}

	// Every change the API server makes to a Secret or a request from
	// here on.
	changes := h.watchChanges()
	var history []func() []cmapi.Certificate
	for _, c := range certs[asLeft:] {
		history = append(history, h.watchCertificate(c.name))
	}
	op := h.start()
	h.eventually("every certificate decided on", func() bool {
		for _, c := range certs {
			if !op.passed.has(c.name) {
				return false
			}
		}
		return true
	})
	h.settle(op)

	secretWrites, requestsCreated := changes()
	for i, c := range certs {
		t.Run(c.name, func(t *testing.T) {
			crt := h.get(c.name)
			ready := condition(crt.Status.Conditions, certificate.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, cmmeta.ConditionTrue, ready.Status, "Ready: %s %s", ready.Reason, ready.Message)
			assert.Nil(t, crt.Status.NextPrivateKeySecretName, "no next private key")
			s, err := h.secret(c.name + "-tls")
			require.NoError(t, err)
			if i < asLeft {
				assert.Equal(t, string(c.key), string(s.Data[keys.SecretPrivateKey]), "tls.key as the reference operator wrote it")
				assert.Zero(t, secretWrites[s.Name], "the Secret is not written")
				return
			}
			assert.Equal(t, 1, secretWrites[s.Name], "the repair is one write")
			assert.Equal(t, "true", s.Labels[cmapi.PartOfCertManagerControllerLabelKey])
			assert.Equal(t, c.name+".example", s.Annotations[cmapi.AltNamesAnnotationKey])
			was, err := keys.DecodePrivateKey(c.key)
			require.NoError(t, err)
			now, err := keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
			require.NoError(t, err)
			assert.True(t, was.(interface{ Equal(crypto.PrivateKey) bool }).Equal(now), "the same key")
			if i >= 22 {
				block, _ := pem.Decode(s.Data[keys.SecretPrivateKey])
				require.NotNil(t, block)
				assert.Equal(t, "PRIVATE KEY", block.Type, "PKCS#8, as the spec says")
			}
		})
	}
	for _, seen := range history {
		for _, v := range seen() {
			ready := condition(v.Status.Conditions, certificate.ConditionReady)
			assert.True(t, ready != nil && ready.Status == cmmeta.ConditionTrue, "%s Ready while its Secret awaits the repair: %+v", v.Name, ready)
		}
	}
	assert.Empty(t, requestsCreated, "no CertificateRequest created")
	ok, _ := op.writes.take()
	assert.Zero(t, ok["create Secret"], "no Secret made (no next private key): %v", ok)
	assert.Zero(t, ok["create CertificateRequest"], "%v", ok)
	assert.Zero(t, ok["update/status Certificate"]+ok["patch Certificate"], "no Certificate written: %v", ok)
	t.Logf("writes on adoption of %d certificates: %v; Secrets written: %v", n, ok, secretWrites)
}

// editSecret changes a Secret as a user would.
func (h *harness) editSecret(name string, change func(*corev1.Secret)) {
	h.t.Helper()
	s, err := h.secret(name)
	require.NoError(h.t, err)
	change(s)
	require.NoError(h.t, k8s.Update(h.ctx, s))
}

// referenceReadyMessage is the message of the Ready condition the
// reference operator writes on a Certificate that is up to date.
const referenceReadyMessage = "Certificate is up to date and has not expired"

// watchChanges watches the test's namespace from now on, and returns a
// function that says how many times each Secret changed (modified or
// deleted) and which CertificateRequests were created.
func (h *harness) watchChanges() func() (secretWrites map[string]int, requestsCreated []string) {
	h.t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: operator.Scheme()})
	require.NoError(h.t, err)
	var sl corev1.SecretList
	require.NoError(h.t, k8s.List(h.ctx, &sl, client.InNamespace(h.ns)))
	var rl cmapi.CertificateRequestList
	require.NoError(h.t, k8s.List(h.ctx, &rl, client.InNamespace(h.ns)))
	sw, err := wc.Watch(h.ctx, &corev1.SecretList{}, &client.ListOptions{Namespace: h.ns, Raw: &metav1.ListOptions{ResourceVersion: sl.ResourceVersion}})
	require.NoError(h.t, err)
	rw, err := wc.Watch(h.ctx, &cmapi.CertificateRequestList{}, &client.ListOptions{Namespace: h.ns, Raw: &metav1.ListOptions{ResourceVersion: rl.ResourceVersion}})
	require.NoError(h.t, err)
	h.t.Cleanup(sw.Stop)
	h.t.Cleanup(rw.Stop)
	var (
		mu      sync.Mutex
		writes  = map[string]int{}
		created []string
	)
	go func() {
		for ev := range sw.ResultChan() {
			if s, ok := ev.Object.(*corev1.Secret); ok && ev.Type != watch.Bookmark {
				mu.Lock()
				writes[s.Name]++
				mu.Unlock()
			}
		}
	}()
	go func() {
		for ev := range rw.ResultChan() {
			if r, ok := ev.Object.(*cmapi.CertificateRequest); ok && ev.Type == watch.Added {
				mu.Lock()
				created = append(created, r.Name)
				mu.Unlock()
			}
		}
	}()
	return func() (map[string]int, []string) {
		time.Sleep(200 * time.Millisecond) // the last events arrive
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range writes {
			out[k] = v
		}
		return out, append([]string(nil), created...)
	}
}

// joinCSV joins values as the reference operator writes them in its
// annotations.
func joinCSV(values []string) string {
	s, err := cmutil.JoinWithEscapeCSV(values)
	if err != nil {
		panic(err)
	}
	return s
}

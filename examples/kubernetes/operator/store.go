package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
)

// store is certlife's host.Store over the Kubernetes API: Certificates,
// Secrets and CertificateRequests of cert-manager.io/v1, converted to and
// from certlife's types (convert.go).
//
// It reads the controller-runtime cache; a Secret the cache does not hold
// (it holds only those labelled LabelManaged) is read from the API server,
// and one the API server does not have either is missing for certain
// (host.ErrAbsenceConfirmed). It writes to the API server with the
// resource version read, so a write over a newer object is a conflict
// (host.ErrConflict) and the loop decides again on fresh state. It
// reports the writes its informers see (host.Watcher, through the
// controllers' event handlers, which call changed); it is not
// host.Authoritative, since the cache lags, and the reconciler reads it
// through host.ReadYourWrites. An update at a version newer than the
// cache's (the operator's own last write, read back) is checked against
// the API server before it is refused.
type store struct {
	client client.Client // writes
	cache  client.Reader // reads
	api    client.Reader // reads that must not lag the API server
	// ownerRefs makes each Certificate the owner of its Secret, so that
	// deleting the Certificate deletes the Secret
	// (--enable-certificate-owner-ref).
	ownerRefs bool

	mu       sync.Mutex
	watchers []func(host.Change)
	// echoes are the writes whose watch events need not queue the
	// Certificate whose pass wrote them.
	echoes echoes
}

var (
	_ host.Store   = (*store)(nil)
	_ host.Watcher = (*store)(nil)
)

func (s *store) Certificates() host.Collection[*certificate.Certificate] { return certificates{s} }
func (s *store) Secrets() host.Collection[*certificate.Secret]           { return secrets{s} }
func (s *store) Requests() host.Collection[*certificate.CertificateRequest] {
	return requests{s}
}

// Watch implements host.Watcher.
func (s *store) Watch(f func(host.Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, f)
}

// changed reports a write the cache saw to the watchers.
func (s *store) changed(kind host.Kind, obj client.Object, deleted bool) {
	ch := host.Change{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Deleted: deleted,
		Meta: certificate.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion()}}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		ch.Meta.OwnerUID = string(ref.UID)
	}
	s.mu.Lock()
	ws := s.watchers
	s.mu.Unlock()
	for _, f := range ws {
		f(ch)
	}
}

// unchanged reports a write that changed nothing, which the API server
// neither versions nor sends a watch event for: the loop waiting for its
// write to show sees it shown.
func (s *store) unchanged(kind host.Kind, obj client.Object) { s.changed(kind, obj, false) }

// storeError maps the API server's errors onto the loop's.
func storeError(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: %w (%w)", what, err, host.ErrNotFound)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s: %w (%w)", what, err, host.ErrConflict)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s: %w (%w)", what, err, host.ErrAlreadyExists)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func describe(kind host.Kind, namespace, name string) string {
	return string(kind) + " " + namespace + "/" + name
}

// secret reads a Secret from the cache, else from the API server. A
// Secret neither has is host.ErrNotFound and host.ErrAbsenceConfirmed.
func (s *store) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := checkNames(host.KindSecret, namespace, name); err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: namespace, Name: name}
	var sec corev1.Secret
	// Without the cache's deep copy: what is read here is converted or
	// copied before anything changes it, and a miss leaves sec as it was.
	err := s.cache.Get(ctx, key, &sec, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		err = s.api.Get(ctx, key, &sec)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s: %w (%w, %w)", describe(host.KindSecret, namespace, name), err, host.ErrNotFound, host.ErrAbsenceConfirmed)
		}
	}
	if err != nil {
		return nil, storeError(describe(host.KindSecret, namespace, name), err)
	}
	return &sec, nil
}

// checkNames refuses a namespace or name no Kubernetes object can have
// before anything is read: the informer cache keys an object
// "namespace/name", and the name alone in the namespace "", so a Get of
// "team-b/db-tls" in the namespace "" would find team-b's db-tls there.
func checkNames(kind host.Kind, namespace, name string) error {
	if err := certificate.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("operator: %s: metadata.namespace: %w", kind, err)
	}
	if err := certificate.ValidateObjectName(name); err != nil {
		return fmt.Errorf("operator: %s: metadata.name: %w", kind, err)
	}
	return nil
}

// passwords reads the keystore passwords spec.keystores names in Secrets.
func (s *store) passwords(ctx context.Context, c *cmapi.Certificate) (Passwords, error) {
	return KeystorePasswords(c, func(name string) (*corev1.Secret, error) {
		sec, err := s.secret(ctx, c.Namespace, name)
		if errors.Is(err, host.ErrNotFound) {
			return nil, nil
		}
		return sec, err
	})
}

// KeystorePasswords reads the keystore passwords c's spec.keystores
// names by passwordSecretRef, through get, which returns a Secret of c's
// namespace by name (nil, nil when there is none): the passwords the
// operator checks and writes keystores with. A missing Secret or key is
// an error naming the field. A password is never part of an error.
func KeystorePasswords(c *cmapi.Certificate, get func(name string) (*corev1.Secret, error)) (Passwords, error) {
	var pw Passwords
	k := c.Spec.Keystores
	if k == nil {
		return pw, nil
	}
	read := func(field string, ref string, key string) (keys.Password, error) {
		if ref == "" {
			return "", nil // the literal password, if any
		}
		sec, err := get(ref)
		if err != nil {
			return "", err
		}
		if sec == nil {
			return "", fmt.Errorf("spec.keystores.%s.passwordSecretRef: secret %s does not exist", field, ref)
		}
		v, ok := sec.Data[key]
		if !ok || len(v) == 0 {
			return "", fmt.Errorf("spec.keystores.%s.passwordSecretRef: secret %s has no key %q", field, ref, key)
		}
		return keys.Password(v), nil
	}
	var err error
	if p := k.PKCS12; p != nil && p.Create {
		if pw.PKCS12, err = read("pkcs12", p.PasswordSecretRef.Name, p.PasswordSecretRef.Key); err != nil {
			return pw, err
		}
	}
	if j := k.JKS; j != nil && j.Create {
		if pw.JKS, err = read("jks", j.PasswordSecretRef.Name, j.PasswordSecretRef.Key); err != nil {
			return pw, err
		}
	}
	return pw, nil
}

// mergePatch is a JSON merge patch from the object as read, which the API
// server applies only while the object is at the version read.
func mergePatch(read client.Object) client.Patch {
	return client.MergeFromWithOptions(read, client.MergeFromWithOptimisticLock{})
}

type certificates struct{ s *store }

// Get reads a Certificate from the cache, with its keystore passwords.
func (c certificates) Get(ctx context.Context, namespace, name string) (*certificate.Certificate, error) {
	if err := checkNames(host.KindCertificate, namespace, name); err != nil {
		return nil, err
	}
	var crt cmapi.Certificate
	// Without the cache's deep copy: CertificateToCore copies what it
	// keeps.
	if err := c.s.cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &crt, client.UnsafeDisableDeepCopy); err != nil {
		return nil, storeError(describe(host.KindCertificate, namespace, name), err)
	}
	pw, err := c.s.passwords(ctx, &crt)
	if err != nil {
		return nil, err
	}
	return CertificateToCore(&crt, pw), nil
}

// List reads Certificates from the cache (without their keystore
// passwords, which only the certificate decided on needs).
func (c certificates) List(ctx context.Context, opts host.ListOptions) ([]*certificate.Certificate, error) {
	var list cmapi.CertificateList
	lo := []client.ListOption{client.InNamespace(opts.Namespace), client.UnsafeDisableDeepCopy}
	if opts.SecretName != "" && opts.Namespace != "" {
		lo = append(lo, client.MatchingFields{indexSecretName: opts.SecretName})
	}
	if err := c.s.cache.List(ctx, &list, lo...); err != nil {
		return nil, err
	}
	out := make([]*certificate.Certificate, 0, len(list.Items))
	for i := range list.Items {
		if core := CertificateToCore(&list.Items[i], Passwords{}); opts.Matches(core) {
			out = append(out, core)
		}
	}
	return out, nil
}

// Create is not the loop's: users create Certificates.
func (c certificates) Create(context.Context, *certificate.Certificate) (*certificate.Certificate, error) {
	return nil, errors.New("operator: Certificates are created by users, not by the loop")
}

// Update writes obj's status (the loop changes nothing else of a
// certificate) over the version obj was read at: what cert-manager's
// status has fields for to the status subresource, then the rest to the
// Certificate's annotations (a merge patch at the version the status
// write left), so that no version shows the annotations of a status not
// written yet.
func (c certificates) Update(ctx context.Context, obj *certificate.Certificate) (*certificate.Certificate, error) {
	if err := checkNames(host.KindCertificate, obj.Namespace, obj.Name); err != nil {
		return nil, err
	}
	what := describe(host.KindCertificate, obj.Namespace, obj.Name)
	var cur cmapi.Certificate
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	if err := c.s.cache.Get(ctx, key, &cur); err != nil {
		return nil, storeError(what, err)
	}
	if cur.ResourceVersion != obj.ResourceVersion {
		// The cache may only be behind a write of the operator's own that
		// the pass read back (host.ReadYourWrites): the API server says
		// which.
		if err := c.s.api.Get(ctx, key, &cur); err != nil {
			return nil, storeError(what, err)
		}
	}
	if cur.ResourceVersion != obj.ResourceVersion {
		return nil, fmt.Errorf("%s is at version %s, not %s: %w", what, cur.ResourceVersion, obj.ResourceVersion, host.ErrConflict)
	}
	want := cur.DeepCopy()
	spec := specToCore(&cur, Passwords{})
	CertificateStatusFromCore(want, obj.Status, &spec)
	wrote := false
	at := cur.DeepCopy()
	if !equality.Semantic.DeepEqual(want.Status, cur.Status) {
		at.Status = want.Status
		f := c.s.echoes.send(host.KindCertificate, at.Namespace, at.Name, at.Name)
		err := c.s.client.Status().Update(ctx, at)
		c.s.echoes.landed(f, at, false, err == nil, true)
		if err != nil {
			return nil, storeError(what, err)
		}
		wrote = true
	}
	if !maps.Equal(want.Annotations, at.Annotations) {
		patched := at.DeepCopy()
		patched.Annotations = want.Annotations
		f := c.s.echoes.send(host.KindCertificate, at.Namespace, at.Name, at.Name)
		err := c.s.client.Patch(ctx, patched, mergePatch(at))
		// After a status write, the pass after this one may read that
		// version (ReadYourWrites takes it for this one's): the patch's
		// event brings the pass that reads the annotations.
		c.s.echoes.landed(f, patched, false, err == nil, !wrote)
		if err != nil {
			return nil, storeError(what, err)
		}
		at = patched
		wrote = true
	}
	if !wrote {
		c.s.unchanged(host.KindCertificate, at)
	}
	return CertificateToCore(at, Passwords{}), nil
}

// Delete deletes a Certificate.
func (c certificates) Delete(ctx context.Context, namespace, name string) error {
	if err := checkNames(host.KindCertificate, namespace, name); err != nil {
		return err
	}
	err := c.s.client.Delete(ctx, &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	return storeError(describe(host.KindCertificate, namespace, name), err)
}

type secrets struct{ s *store }

// Get reads a Secret from the cache, else from the API server.
func (c secrets) Get(ctx context.Context, namespace, name string) (*certificate.Secret, error) {
	sec, err := c.s.secret(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return SecretToCore(sec), nil
}

// List reads the cached Secrets (those labelled LabelManaged).
func (c secrets) List(ctx context.Context, opts host.ListOptions) ([]*certificate.Secret, error) {
	var list corev1.SecretList
	// Without the cache's deep copy: a Secret's data is shared with the
	// cache, as host.Collection allows (the loop never changes it).
	lo := []client.ListOption{client.InNamespace(opts.Namespace), client.UnsafeDisableDeepCopy}
	if opts.OwnerUID != "" && opts.Namespace != "" {
		lo = append(lo, client.MatchingFields{indexOwner: opts.OwnerUID})
	}
	if len(opts.Labels) > 0 {
		// The cache selects before it copies: a certificate's own Secret,
		// with its key and chain, is not copied to be dropped. The
		// selector names cert-manager's labels, as the Secrets carry them.
		lo = append(lo, client.MatchingLabels(keysFromCore(opts.Labels, certificateLabels)))
	}
	if err := c.s.cache.List(ctx, &list, lo...); err != nil {
		return nil, err
	}
	out := make([]*certificate.Secret, 0, len(list.Items))
	for i := range list.Items {
		if core := SecretToCore(&list.Items[i]); opts.Matches(core) {
			out = append(out, core)
		}
	}
	return out, nil
}

// isNextKey reports a next-private-key secret.
func isNextKey(s *certificate.Secret) bool {
	return s.Labels[certificate.LabelNextPrivateKey] == "true"
}

// Create makes a Secret labelled LabelManaged: a next private key
// (Opaque, owned by its Certificate), or a target (kubernetes.io/tls,
// owned by its Certificate only with ownerRefs).
func (c secrets) Create(ctx context.Context, obj *certificate.Secret) (*certificate.Secret, error) {
	if err := checkNames(host.KindSecret, obj.Namespace, obj.Name); err != nil {
		return nil, err
	}
	sec := SecretFromCore(obj)
	sec.Labels = withManaged(sec.Labels)
	sec.Type = corev1.SecretTypeTLS
	if isNextKey(obj) {
		sec.Type = corev1.SecretTypeOpaque
	} else if !c.s.ownerRefs {
		sec.OwnerReferences = nil
	}
	sec.ResourceVersion, sec.UID = "", ""
	f := c.s.echoes.send(host.KindSecret, sec.Namespace, sec.Name, writerOf(host.KindSecret, sec))
	err := c.s.client.Create(ctx, sec)
	c.s.echoes.landed(f, sec, false, err == nil, true)
	if err != nil {
		return nil, storeError(describe(host.KindSecret, obj.Namespace, obj.Name), err)
	}
	return SecretToCore(sec), nil
}

func withManaged(labels map[string]string) map[string]string {
	if labels[LabelManaged] == "true" {
		return labels
	}
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManaged] = "true"
	return labels
}

// Update writes obj's data, labels and annotations (what the loop
// changes of a Secret) over the version it was read at, as a merge patch
// that leaves the Secret's type and anything else alone. The Certificate
// is made the Secret's controller with ownerRefs; without, a controller
// reference to it goes.
func (c secrets) Update(ctx context.Context, obj *certificate.Secret) (*certificate.Secret, error) {
	what := describe(host.KindSecret, obj.Namespace, obj.Name)
	cur, err := c.s.secret(ctx, obj.Namespace, obj.Name)
	if err != nil {
		return nil, err
	}
	if cur.ResourceVersion != obj.ResourceVersion {
		// The cache may only be behind a write of the operator's own.
		var fresh corev1.Secret
		if err := c.s.api.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, &fresh); err != nil {
			return nil, storeError(what, err)
		}
		cur = &fresh
	}
	if cur.ResourceVersion != obj.ResourceVersion {
		return nil, fmt.Errorf("%s is at version %s, not %s: %w", what, cur.ResourceVersion, obj.ResourceVersion, host.ErrConflict)
	}
	from := SecretFromCore(obj)
	upd := cur.DeepCopy()
	upd.Data = obj.Data
	upd.Labels = withManaged(from.Labels)
	upd.Annotations = from.Annotations
	if obj.OwnerUID != "" {
		upd.OwnerReferences = ownedBy(upd.OwnerReferences, from.OwnerReferences[0], isNextKey(obj) || c.s.ownerRefs)
	}
	f := c.s.echoes.send(host.KindSecret, upd.Namespace, upd.Name, writerOf(host.KindSecret, upd))
	err = c.s.client.Patch(ctx, upd, mergePatch(cur))
	c.s.echoes.landed(f, upd, false, err == nil, true)
	if err != nil {
		return nil, storeError(what, err)
	}
	if upd.ResourceVersion == cur.ResourceVersion {
		c.s.unchanged(host.KindSecret, upd)
	}
	return SecretToCore(upd), nil
}

// ownedBy sets (own) or removes (!own) the controller reference ref among
// refs. Another owner's reference stays; when ref becomes the controller,
// another controller's stays as a plain owner reference, since an object
// has one controller at most (the API server refuses two).
func ownedBy(refs []metav1.OwnerReference, ref metav1.OwnerReference, own bool) []metav1.OwnerReference {
	out := refs[:0:0]
	for _, r := range refs {
		if r.UID == ref.UID {
			continue
		}
		if own && r.Controller != nil && *r.Controller {
			r.Controller = nil
		}
		out = append(out, r)
	}
	if own {
		out = append(out, ref)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Delete deletes the Secret the cache (or the API server) holds by that
// name, only while it is that object (its UID): a newer Secret of the
// same name is left alone, and the one meant is gone (host.ErrNotFound).
func (c secrets) Delete(ctx context.Context, namespace, name string) error {
	cur, err := c.s.secret(ctx, namespace, name)
	if err != nil {
		return err
	}
	return c.s.deleteUID(ctx, host.KindSecret, cur)
}

// deleteUID deletes obj with its UID as precondition.
func (s *store) deleteUID(ctx context.Context, kind host.Kind, obj client.Object) error {
	uid := obj.GetUID()
	f := s.echoes.send(kind, obj.GetNamespace(), obj.GetName(), writerOf(kind, obj))
	err := s.client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	s.echoes.landed(f, obj, true, err == nil, true)
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%s: a newer object of the name is there: %w", describe(kind, obj.GetNamespace(), obj.GetName()), host.ErrNotFound)
	}
	return storeError(describe(kind, obj.GetNamespace(), obj.GetName()), err)
}

type requests struct{ s *store }

// Get reads a CertificateRequest from the cache.
func (c requests) Get(ctx context.Context, namespace, name string) (*certificate.CertificateRequest, error) {
	if err := checkNames(host.KindRequest, namespace, name); err != nil {
		return nil, err
	}
	var r cmapi.CertificateRequest
	// Without the cache's deep copy: the request's CSR and certificate
	// are shared with the cache, as host.Collection allows.
	if err := c.s.cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &r, client.UnsafeDisableDeepCopy); err != nil {
		return nil, storeError(describe(host.KindRequest, namespace, name), err)
	}
	return RequestToCore(&r), nil
}

// List reads CertificateRequests from the cache.
func (c requests) List(ctx context.Context, opts host.ListOptions) ([]*certificate.CertificateRequest, error) {
	var list cmapi.CertificateRequestList
	lo := []client.ListOption{client.InNamespace(opts.Namespace), client.UnsafeDisableDeepCopy}
	if opts.OwnerUID != "" && opts.Namespace != "" {
		lo = append(lo, client.MatchingFields{indexOwner: opts.OwnerUID})
	}
	if err := c.s.cache.List(ctx, &list, lo...); err != nil {
		return nil, err
	}
	out := make([]*certificate.CertificateRequest, 0, len(list.Items))
	for i := range list.Items {
		if core := RequestToCore(&list.Items[i]); opts.Matches(core) {
			out = append(out, core)
		}
	}
	return out, nil
}

// copiedAnnotationPrefixes are the annotations of a Certificate that do
// not go to its requests: kubectl's, Flux's and Argo CD's (as the
// reference operator leaves them out), and the operator's own.
var copiedAnnotationPrefixes = []string{"kubectl.kubernetes.io/", "fluxcd.io/", "argocd.argoproj.io/", "certlife.dev/"}

// Create makes a CertificateRequest owned by its Certificate, with the
// Certificate's labels and annotations as the reference operator copies
// them (an ACME solver's matchLabels select by them; external issuers
// read them), and certlife's own annotations over them.
func (c requests) Create(ctx context.Context, obj *certificate.CertificateRequest) (*certificate.CertificateRequest, error) {
	if err := checkNames(host.KindRequest, obj.Namespace, obj.Name); err != nil {
		return nil, err
	}
	r := RequestFromCore(obj)
	r.Status = cmapi.CertificateRequestStatus{}
	r.ResourceVersion, r.UID = "", ""
	if name := obj.Annotations[certificate.AnnotationCertificateName]; name != "" {
		var crt cmapi.Certificate
		if err := c.s.cache.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, &crt); err == nil && string(crt.UID) == obj.OwnerUID {
			labels := maps.Clone(crt.Labels)
			maps.Copy(labels, r.Labels)
			r.Labels = labels
			annotations := map[string]string{}
			for k, v := range crt.Annotations {
				if !hasAnyPrefix(k, copiedAnnotationPrefixes) {
					annotations[k] = v
				}
			}
			maps.Copy(annotations, r.Annotations)
			r.Annotations = annotations
		}
	}
	f := c.s.echoes.send(host.KindRequest, r.Namespace, r.Name, writerOf(host.KindRequest, r))
	err := c.s.client.Create(ctx, r)
	c.s.echoes.landed(f, r, false, err == nil, true)
	if err != nil {
		return nil, storeError(describe(host.KindRequest, obj.Namespace, obj.Name), err)
	}
	return RequestToCore(r), nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Update writes an issuer's answer — the status, and the retry-after
// annotation first when it changes — over the version read.
func (c requests) Update(ctx context.Context, obj *certificate.CertificateRequest) (*certificate.CertificateRequest, error) {
	if err := checkNames(host.KindRequest, obj.Namespace, obj.Name); err != nil {
		return nil, err
	}
	what := describe(host.KindRequest, obj.Namespace, obj.Name)
	var cur cmapi.CertificateRequest
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	if err := c.s.cache.Get(ctx, key, &cur); err != nil {
		return nil, storeError(what, err)
	}
	if cur.ResourceVersion != obj.ResourceVersion {
		// The cache may only be behind a write of the operator's own.
		if err := c.s.api.Get(ctx, key, &cur); err != nil {
			return nil, storeError(what, err)
		}
	}
	if cur.ResourceVersion != obj.ResourceVersion {
		return nil, fmt.Errorf("%s is at version %s, not %s: %w", what, cur.ResourceVersion, obj.ResourceVersion, host.ErrConflict)
	}
	want := cur.DeepCopy()
	RequestStatusFromCore(want, obj.Status)
	if !maps.Equal(want.Annotations, cur.Annotations) {
		patched := cur.DeepCopy()
		patched.Annotations = want.Annotations
		if err := c.s.client.Patch(ctx, patched, mergePatch(&cur)); err != nil {
			return nil, storeError(what, err)
		}
		want.ObjectMeta = patched.ObjectMeta
	}
	if !equality.Semantic.DeepEqual(want.Status, cur.Status) {
		if err := c.s.client.Status().Update(ctx, want); err != nil {
			return nil, storeError(what, err)
		}
	}
	return RequestToCore(want), nil
}

// Delete deletes the CertificateRequest of that name the cache holds,
// only while it is that object (its UID).
func (c requests) Delete(ctx context.Context, namespace, name string) error {
	if err := checkNames(host.KindRequest, namespace, name); err != nil {
		return err
	}
	var cur cmapi.CertificateRequest
	if err := c.s.cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &cur); err != nil {
		return storeError(describe(host.KindRequest, namespace, name), err)
	}
	return c.s.deleteUID(ctx, host.KindRequest, &cur)
}

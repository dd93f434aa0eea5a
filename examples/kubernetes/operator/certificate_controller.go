package operator

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// conflictRetry is when a pass that met a conflict looks again, should
// the watch event of the newer object not bring it back first.
const conflictRetry = time.Second

// CertificateReconciler is the Certificate controller: one pass gathers a
// snapshot, calls certificate.Reconcile, carries out the actions in order
// and requeues at the result's RequeueAt.
type CertificateReconciler struct {
	// Client writes; Gatherer reads.
	Client   client.Client
	Gatherer Gatherer
	// Clock gives every decision its now.
	Clock clock.PassiveClock
	// Config is passed to every decision.
	Config certificate.Config
	// Rand is the randomness for keys, CSRs and keystores.
	Rand     io.Reader
	Recorder events.EventRecorder
	Metrics  *Metrics
	// Issuers, when set, tells ACME issuers apart, whose renewal requests
	// name the certificate they replace.
	Issuers *Issuers

	// replaced holds, per certificate, the resourceVersion its last
	// status write replaced, until the cache shows a newer one: a pass
	// on that version would decide on the state before its own write.
	replaced sync.Map // types.NamespacedName → string
}

// +kubebuilder:rbac:groups=certlife.dev,resources=certificates,verbs=get;list;watch
// +kubebuilder:rbac:groups=certlife.dev,resources=certificates/status,verbs=update
// +kubebuilder:rbac:groups=certlife.dev,resources=certificaterequests,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile is one pass for one Certificate.
func (r *CertificateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var crt v1alpha1.Certificate
	if err := r.Gatherer.Cache.Get(ctx, req.NamespacedName, &crt); err != nil {
		if apierrors.IsNotFound(err) {
			r.replaced.Delete(req.NamespacedName)
			return ctrl.Result{}, nil // its Secrets and requests go with it (owner references)
		}
		return ctrl.Result{}, err
	}
	if crt.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if rv, ok := r.replaced.Load(req.NamespacedName); ok {
		if rv == crt.ResourceVersion {
			// The cache has not caught up with this operator's last status
			// write; its watch event brings the next pass.
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		r.replaced.Delete(req.NamespacedName)
	}

	// 1. Gather.
	g, err := r.Gatherer.gather(ctx, &crt)
	if err != nil {
		r.event(&crt, corev1.EventTypeWarning, "GatherFailed", "Gather", err.Error())
		return ctrl.Result{}, err
	}
	// 2. Decide.
	now := r.Clock.Now()
	res := certificate.Reconcile(g.snap, now, r.Config)
	if res.Err != nil {
		// Only a certificate without a name or UID gets here, which the
		// API server never serves.
		logger.Error(res.Err, "no decision can be made")
		return ctrl.Result{}, nil
	}
	// 3. Carry out, in order, stopping at the first error.
	before := crt.Status.DeepCopy()
	backoff := backoffOf(res)
	var done []certificate.Action
	wroteStatus := false
	for _, a := range res.Actions {
		if _, ok := a.(certificate.UpdateStatus); ok {
			wroteStatus = true
		}
		if err = r.carryOut(ctx, &crt, g, a, backoff, now); err != nil {
			err = fmt.Errorf("%v: %w", a, err)
			break
		}
		done = append(done, a)
	}
	// The backoff is the operator's addition to the status: written with
	// certlife's status, or alone when only it changed.
	if err == nil && !wroteStatus && !equality.Semantic.DeepEqual(crt.Status.Backoff, backoff) {
		st := *crt.Status.DeepCopy()
		st.Backoff = backoff
		err = r.writeStatus(ctx, &crt, st)
	}

	logger.V(1).Info(res.Message, "stage", res.Stage, "reason", res.Reason, "issuing", res.IssuanceReason,
		"actions", len(res.Actions), "done", len(done), "requeueAt", res.RequeueAt)
	if len(done) > 0 && !quietReasons[res.Reason] {
		note := res.Message
		if c := condition(before.Conditions, certificate.ConditionIssuing); res.Reason == certificate.ReasonIssued && c != nil && c.Status == metav1.ConditionTrue {
			note += "; issued because " + issuedBecause(c)
		}
		r.event(&crt, eventType(res.Reason), res.Reason, string(res.Stage), note)
	}
	issued := before.Revision == nil && crt.Status.Revision != nil ||
		before.Revision != nil && crt.Status.Revision != nil && *crt.Status.Revision > *before.Revision
	r.Metrics.observe(&crt, before, &crt.Status, issued, failureOf(before, &crt.Status))

	// 4. Requeue.
	var out ctrl.Result
	if !res.RequeueAt.IsZero() {
		out.RequeueAfter = max(res.RequeueAt.Sub(now), time.Millisecond)
	}
	switch {
	case err == nil:
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, errGone):
		// Someone changed what the decision read: decide again on fresh
		// state, never overwrite.
		logger.V(1).Info("conflict; looking again", "error", err.Error())
		if out.RequeueAfter == 0 || out.RequeueAfter > conflictRetry {
			out.RequeueAfter = conflictRetry
		}
	default:
		r.event(&crt, corev1.EventTypeWarning, "ActionFailed", string(res.Stage), err.Error())
		return ctrl.Result{}, err
	}
	return out, nil
}

// errGone: an object the decision read at a version is gone.
var errGone = errors.New("the object the decision read is gone")

// carryOut does what an action's doc in package certificate says.
func (r *CertificateReconciler) carryOut(ctx context.Context, crt *v1alpha1.Certificate, g *gathered, a certificate.Action, backoff *v1alpha1.BackoffStatus, now time.Time) error {
	switch a := a.(type) {
	case certificate.GenerateKey:
		return r.generateKey(ctx, crt, g, a)

	case certificate.CreateRequest:
		key, err := r.privateKey(ctx, crt.Namespace, g, a.KeySecretName)
		if err != nil {
			return err
		}
		req := a.Request
		if req.Spec.Request, err = keys.BuildCSR(r.Rand, a.Template, key); err != nil {
			return err
		}
		obj := RequestFromCore(&req, crt)
		obj.CreationTimestamp = metav1.Time{}
		obj.Namespace = crt.Namespace
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err // AlreadyExists: made by an earlier pass, seen by a stale cache
		}
		return nil

	case certificate.DeleteRequest:
		obj := &v1alpha1.CertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: crt.Namespace}}
		return r.delete(ctx, obj, uidOf(g.requests, a.Name))

	case certificate.DeleteSecret:
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: crt.Namespace}}
		return r.delete(ctx, obj, uidOf(g.nextKeys, a.Name))

	case certificate.WriteSecret:
		return r.writeSecret(ctx, crt, g, a)

	case certificate.UpdateStatus:
		st := StatusFromCore(a.Status)
		st.Backoff = backoff
		return r.writeStatus(ctx, crt, st)
	}
	return fmt.Errorf("unknown action %T", a)
}

// generateKey creates the next-private-key Secret: labelled, owned by the
// certificate, tls.key in PKCS#8 — a new key, or a copy of ReuseFrom's.
func (r *CertificateReconciler) generateKey(ctx context.Context, crt *v1alpha1.Certificate, g *gathered, a certificate.GenerateKey) error {
	var pemKey []byte
	if a.ReuseFrom != "" {
		from := g.target
		if from == nil || from.Name != a.ReuseFrom {
			var err error
			if from, err = r.Gatherer.secret(ctx, crt.Namespace, a.ReuseFrom); err != nil {
				return err
			}
		}
		if from == nil || len(from.Data[keys.SecretPrivateKey]) == 0 {
			return fmt.Errorf("secret %s holds no key to reuse", a.ReuseFrom)
		}
		pemKey = from.Data[keys.SecretPrivateKey]
	} else {
		key, err := keys.Generate(r.Rand, a.Spec)
		if err != nil {
			return err
		}
		if pemKey, err = keys.EncodePrivateKey(key, keys.EncodingPKCS8); err != nil {
			return err
		}
	}
	s := SecretFromCore(&certificate.Secret{
		ObjectMeta: certificate.ObjectMeta{Name: a.SecretName, Namespace: crt.Namespace, OwnerUID: a.OwnerUID,
			Labels: map[string]string{certificate.LabelNextPrivateKey: "true", LabelManaged: "true"}},
		Data: map[string][]byte{keys.SecretPrivateKey: pemKey},
	}, crt)
	s.Type = corev1.SecretTypeOpaque
	if err := r.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return err // AlreadyExists: an earlier pass made it
	}
	return nil
}

// writeSecret writes the data keys.SecretData makes into the Secret,
// merging labels and annotations and making the certificate its
// controller — over the version the decision read, or, when the decision
// saw no Secret, into a new one (or whatever is there by now).
func (r *CertificateReconciler) writeSecret(ctx context.Context, crt *v1alpha1.Certificate, g *gathered, a certificate.WriteSecret) error {
	key, err := r.privateKey(ctx, crt.Namespace, g, a.KeySecretName)
	if err != nil {
		return err
	}
	data, err := keys.SecretData(r.Rand, key, a.Chain, a.CA, a.Output)
	if err != nil {
		return err
	}
	var s *corev1.Secret
	switch {
	case a.ResourceVersion != "":
		if g.target == nil || g.target.ResourceVersion != a.ResourceVersion {
			return fmt.Errorf("secret %s: %w", a.Name, errGone)
		}
		s = g.target.DeepCopy()
	default:
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: crt.Namespace}, Type: corev1.SecretTypeTLS}
	}
	fill := func(s *corev1.Secret) error {
		s.Labels = mergeInto(s.Labels, a.Labels)
		s.Annotations = mergeInto(s.Annotations, a.Annotations)
		s.Data = data
		if a.OwnerUID == string(crt.UID) {
			return setController(s, crt)
		}
		return nil
	}
	if err := fill(s); err != nil {
		return err
	}
	if s.ResourceVersion != "" {
		return r.Client.Update(ctx, s) // precondition: the version read
	}
	err = r.Client.Create(ctx, s)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The decision saw no Secret; one is there now: update whatever is
	// there, at the version just read.
	s = &corev1.Secret{}
	if err := r.Gatherer.API.Get(ctx, types.NamespacedName{Namespace: crt.Namespace, Name: a.Name}, s); err != nil {
		return err
	}
	if err := fill(s); err != nil {
		return err
	}
	return r.Client.Update(ctx, s)
}

// writeStatus writes st as crt's status at the version read, unless it is
// what is stored. crt takes the new version.
func (r *CertificateReconciler) writeStatus(ctx context.Context, crt *v1alpha1.Certificate, st v1alpha1.CertificateStatus) error {
	if equality.Semantic.DeepEqual(crt.Status, st) {
		return nil
	}
	upd := crt.DeepCopy()
	upd.Status = st
	if err := r.Client.Status().Update(ctx, upd); err != nil {
		return err
	}
	r.replaced.Store(client.ObjectKeyFromObject(crt), crt.ResourceVersion)
	*crt = *upd
	return nil
}

// delete deletes obj, only while it is the object the decision read (its
// UID, when known): a newer object of the same name is left alone. NotFound
// is success, and so is a newer object: the one meant is gone.
func (r *CertificateReconciler) delete(ctx context.Context, obj client.Object, uid types.UID) error {
	var opts []client.DeleteOption
	if uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	err := r.Client.Delete(ctx, obj, opts...)
	if apierrors.IsNotFound(err) || uid != "" && apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// privateKey decodes tls.key of a Secret the snapshot holds (the target or
// a next private key), else of one read now.
func (r *CertificateReconciler) privateKey(ctx context.Context, namespace string, g *gathered, name string) (crypto.Signer, error) {
	s := g.nextKeys[name]
	if s == nil && g.target != nil && g.target.Name == name {
		s = g.target
	}
	if s == nil {
		var err error
		if s, err = r.Gatherer.secret(ctx, namespace, name); err != nil {
			return nil, err
		}
		if s == nil {
			return nil, fmt.Errorf("secret %s: %w", name, errGone)
		}
	}
	key, err := keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return key, nil
}

// setController makes crt the controller of s. A Secret controlled by
// another Certificate (one that gave it up) is taken over; one controlled
// by anything else is left alone, with an error.
func setController(s *corev1.Secret, crt *v1alpha1.Certificate) error {
	refs := s.OwnerReferences[:0:0]
	for _, ref := range s.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller || ref.UID == crt.UID {
			refs = append(refs, ref)
			continue
		}
		if ref.Kind != "Certificate" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			return fmt.Errorf("secret %s is controlled by %s %s, not by a Certificate: refusing to write it", s.Name, ref.Kind, ref.Name)
		}
	}
	for i := range refs {
		if refs[i].UID == crt.UID {
			refs[i] = ownerReference(crt)
			s.OwnerReferences = refs
			return nil
		}
	}
	s.OwnerReferences = append(refs, ownerReference(crt))
	return nil
}

// backoffOf is the operator's record of a backoff: the trigger's word and
// deadline while it holds issuance back, nil otherwise.
func backoffOf(res certificate.Result) *v1alpha1.BackoffStatus {
	for _, s := range res.Steps {
		if s.Stage == certificate.StageTrigger && s.Reason == certificate.ReasonBackoff && !s.RequeueAt.IsZero() {
			return &v1alpha1.BackoffStatus{NextAttemptTime: metav1.NewTime(s.RequeueAt.Truncate(time.Second)), Message: s.Message}
		}
	}
	return nil
}

// failureOf is the reason of a failure the status newly records, "" for
// none.
func failureOf(before, after *v1alpha1.CertificateStatus) string {
	if after.LastFailureTime == nil || before.LastFailureTime != nil && before.LastFailureTime.Equal(after.LastFailureTime) {
		return ""
	}
	for _, c := range after.Conditions {
		if c.Type == certificate.ConditionIssuing && c.Status == metav1.ConditionFalse {
			return c.Reason
		}
	}
	return "Unknown"
}

// issuedBecause says why an issuance began, from its Issuing condition:
// the reason and the trigger's words, which certlife keeps at the head of
// the message while it adds what the issuance waits for ("secret web-tls
// does not exist; request web-1 is waiting for the issuer: …").
func issuedBecause(issuing *metav1.Condition) string {
	why := issuing.Message
	for _, sep := range []string{"; request ", "; no issuer has answered request "} {
		if i := strings.Index(why, sep); i >= 0 {
			why = why[:i]
		}
	}
	if why == "" {
		return issuing.Reason
	}
	return issuing.Reason + ": " + why
}

// quietReasons are the steps of an issuance no Event reports: an Event
// says how an issuance ended — Issued (with why it was issued), or the
// failure — and the Issuing condition shows it while it runs.
var quietReasons = map[string]bool{
	certificate.ReasonWaitingForKey: true, certificate.ReasonKeyReady: true, certificate.ReasonRequestCreated: true,
	certificate.ReasonRequestPending: true, certificate.ReasonNotIssuing: true, certificate.ReasonRevisionHistory: true,
}

// warningReasons are the reasons an Event reports as a warning.
var warningReasons = map[string]bool{
	certificate.ReasonDenied: true, certificate.ReasonInvalidRequest: true, certificate.ReasonFailed: true,
	certificate.ReasonIssuedUndecodable: true, certificate.ReasonIssuedWrongKey: true, certificate.ReasonIssuedExpired: true,
	certificate.ReasonIssuedOtherNames: true, certificate.ReasonInvalidSpec: true, certificate.ReasonSecretInUse: true,
	certificate.ReasonExpired: true, certificate.ReasonBackoff: true,
	certificate.ReasonIssuerNotAnswering: true,
}

func eventType(reason string) string {
	if warningReasons[reason] {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// event records an Event on crt; a note is at most 1 KiB.
func (r *CertificateReconciler) event(crt *v1alpha1.Certificate, typ, reason, action, note string) {
	if r.Recorder == nil {
		return
	}
	if len(note) > 1000 {
		note = note[:1000] + "…"
	}
	r.Recorder.Eventf(crt, nil, typ, reason, action, "%s", note)
}

func mergeInto(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

func condition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// uidOf is the UID of the object of that name the snapshot holds, "" for
// none.
func uidOf[T client.Object](objs map[string]T, name string) types.UID {
	if o, ok := objs[name]; ok {
		return o.GetUID()
	}
	return ""
}

package operator

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// CertificateReconciler is the Certificate controller: each pass is one
// host.Reconciler.Certificate — gather from the Kubernetes store, decide
// with certificate.Reconcile, carry out the actions in order — and the
// work queue looks again when the pass says (Event.Next) or, when the
// pass failed, as its rate limiter says. A Certificate that asks for what
// the operator does not serve (NotServed) is not passed to the
// reconciler: its Ready condition says InvalidSpec and names the fields.
type CertificateReconciler struct {
	Reconciler *host.Reconciler
	// Cache reads the Certificate; Client writes a NotServed status.
	Cache  client.Reader
	Client client.Client
	// Clock is the loop's.
	Clock    clock.PassiveClock
	Recorder events.EventRecorder
	Metrics  *Metrics

	// gone are the UIDs of Certificates deleted since the controller
	// last looked at them (types.NamespacedName → types.UID).
	gone sync.Map
	// echoes, when set, are the store's record of the passes' writes
	// whose events will not queue their Certificate again.
	echoes *echoes
}

// deleted keeps a deleted Certificate's UID for the pass that removes
// what it owned.
func (r *CertificateReconciler) deleted(crt *cmapi.Certificate) {
	r.gone.Store(types.NamespacedName{Namespace: crt.Namespace, Name: crt.Name}, crt.UID)
}

// The Certificate controller's writes, through the store.
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates/status,verbs=update
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificaterequests,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile is one pass for one Certificate.
func (r *CertificateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var crt cmapi.Certificate
	if err := r.Cache.Get(ctx, req.NamespacedName, &crt); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Gone: what it owned goes — its requests (whose deletions reach
		// their issuers through the CertificateRequest controller) and
		// its next private keys — without waiting for the garbage
		// collector. Its Secret stays, unless the Certificate owns it
		// (EnableCertificateOwnerRef) and the garbage collector takes it.
		if uid, ok := r.gone.LoadAndDelete(req.NamespacedName); ok {
			if err := r.Reconciler.RemoveOwned(ctx, req.Namespace, string(uid.(types.UID))); err != nil {
				r.gone.LoadOrStore(req.NamespacedName, uid)
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}
	if crt.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if problems := NotServed(&crt); len(problems) > 0 {
		return r.notServed(ctx, &crt, problems)
	}
	ev, err := r.Reconciler.Certificate(ctx, req.Namespace, req.Name)
	if err != nil && r.echoes != nil {
		// The work queue retries after its delay: the events of the
		// pass's writes, which show the store catching up, may come
		// first and bring the retry sooner.
		r.echoes.forgetWriter(req.Namespace, req.Name)
	}
	if ev.Result != nil || err != nil {
		// What the pass changed is judged against the status it read,
		// which shows the operator's own last writes, not against the
		// cache's copy, which may not yet.
		var before certificate.Status
		if ev.Certificate != nil {
			before = ev.Certificate.Status
		} else {
			spec := specToCore(&crt, Passwords{})
			before = statusToCore(&crt, &spec)
		}
		r.report(ctx, &crt, &before, ev)
	}
	return requeue(ev.Next, r.Clock.Now(), err)
}

// requeue is the work queue's answer to a pass: an error goes back to the
// queue, which retries it after its rate limiter's delay (and counts it);
// otherwise the key is looked at again at next — at once when that is now
// (the pass wrote, and the next pass reads what it wrote) — or only when
// a watch event brings it when next is zero.
func requeue(next, now time.Time, err error) (ctrl.Result, error) {
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case next.IsZero():
		return ctrl.Result{}, nil
	case !next.After(now):
		return ctrl.Result{RequeueAfter: time.Nanosecond}, nil
	}
	return ctrl.Result{RequeueAfter: next.Sub(now)}, nil
}

// report logs a pass, records its Event and counts its metrics.
func (r *CertificateReconciler) report(ctx context.Context, crt *cmapi.Certificate, before *certificate.Status, ev host.Event) {
	logger := log.FromContext(ctx)
	res := ev.Result
	if res == nil {
		// The store could not be read: the work queue tries again.
		logger.Info("the pass could not gather what it decides on", "error", ev.Err.Error(), "next", ev.Next)
		r.event(crt, corev1.EventTypeWarning, "GatherFailed", "Gather", ev.Err.Error())
		return
	}
	logger.V(1).Info(res.Message, "stage", res.Stage, "reason", res.Reason, "issuing", res.IssuanceReason,
		"actions", len(res.Actions), "done", len(ev.Done), "next", ev.Next)
	switch {
	case ev.Err == nil:
	case errors.Is(ev.Err, host.ErrConflict) || errors.Is(ev.Err, host.ErrAlreadyExists):
		// Someone changed what the decision read: the loop decides again
		// on fresh state, never overwrites.
		logger.V(1).Info("conflict; looking again", "error", ev.Err.Error())
	default:
		r.event(crt, corev1.EventTypeWarning, "ActionFailed", string(res.Stage), ev.Err.Error())
	}
	if len(ev.Done) > 0 && !quietReasons[res.Reason] {
		note := res.Message
		if c := before.Condition(certificate.ConditionIssuing); res.Reason == certificate.ReasonIssued && c != nil && c.Status == certificate.StatusTrue {
			note += "; issued because " + issuedBecause(c)
		}
		r.event(crt, eventType(res.Reason), res.Reason, string(res.Stage), note)
	}
	after := before
	for _, a := range ev.Done {
		if u, ok := a.(certificate.UpdateStatus); ok {
			after = &u.Status
		}
	}
	issued := after.Revision != nil && (before.Revision == nil || *after.Revision > *before.Revision)
	r.Metrics.observe(crt, before, after, issued, failureOf(before, after))
}

// notServed says on the Certificate's Ready condition that its spec asks
// for what the operator does not serve, naming each field, as certlife
// says of any invalid spec; nothing is issued until it is changed.
func (r *CertificateReconciler) notServed(ctx context.Context, crt *cmapi.Certificate, problems []*certificate.FieldError) (ctrl.Result, error) {
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	ready := cmapi.CertificateCondition{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionFalse, Reason: certificate.ReasonInvalidSpec,
		Message: "the spec is invalid: " + errors.Join(errs...).Error(), ObservedGeneration: crt.Generation}
	upd := crt.DeepCopy()
	i := slicesIndex(upd.Status.Conditions, cmapi.CertificateConditionReady)
	switch {
	case i < 0:
		ready.LastTransitionTime = &metav1.Time{Time: r.Clock.Now().Truncate(time.Second)}
		upd.Status.Conditions = append(upd.Status.Conditions, ready)
	case upd.Status.Conditions[i].Reason == ready.Reason && upd.Status.Conditions[i].Message == ready.Message && upd.Status.Conditions[i].ObservedGeneration == ready.ObservedGeneration:
		return ctrl.Result{}, nil // said already
	default:
		ready.LastTransitionTime = upd.Status.Conditions[i].LastTransitionTime
		if upd.Status.Conditions[i].Status != ready.Status || ready.LastTransitionTime == nil {
			ready.LastTransitionTime = &metav1.Time{Time: r.Clock.Now().Truncate(time.Second)}
		}
		upd.Status.Conditions[i] = ready
	}
	if err := r.Client.Status().Update(ctx, upd); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	r.event(crt, corev1.EventTypeWarning, certificate.ReasonInvalidSpec, "Validate", ready.Message)
	return ctrl.Result{}, nil
}

func slicesIndex(cs []cmapi.CertificateCondition, t cmapi.CertificateConditionType) int {
	for i := range cs {
		if cs[i].Type == t {
			return i
		}
	}
	return -1
}

// failureOf is the reason of a failure the status newly records, "" for
// none.
func failureOf(before, after *certificate.Status) string {
	if after.LastFailureTime == nil || before.LastFailureTime != nil && before.LastFailureTime.Equal(*after.LastFailureTime) {
		return ""
	}
	if c := after.Condition(certificate.ConditionIssuing); c != nil && c.Status == certificate.StatusFalse {
		return c.Reason
	}
	return "Unknown"
}

// issuedBecause says why an issuance began, from its Issuing condition:
// the reason and the trigger's words, which certlife keeps at the head of
// the message while it adds what the issuance waits for ("secret web-tls
// does not exist; request web-1 is waiting for the issuer: …").
func issuedBecause(issuing *certificate.Condition) string {
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
	certificate.ReasonIssuedOtherNames: true, certificate.ReasonInvalidSpec: true, certificate.ReasonSecretInUse: true, certificate.ReasonSecretNotOwned: true,
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
func (r *CertificateReconciler) event(crt runtime.Object, typ, reason, action, note string) {
	recordEvent(r.Recorder, crt, nil, typ, reason, action, note)
}

func recordEvent(rec events.EventRecorder, regarding, related runtime.Object, typ, reason, action, note string) {
	if rec == nil {
		return
	}
	if len(note) > 1000 {
		note = note[:1000] + "…"
	}
	rec.Eventf(regarding, related, typ, reason, action, "%s", note)
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

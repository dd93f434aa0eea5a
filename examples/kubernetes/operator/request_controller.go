package operator

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// RequestReconciler is the CertificateRequest controller. A request of
// an issuer the operator serves (an Issuer or ClusterIssuer of
// cert-manager.io) is answered by host.Loop.Answer: approved, then
// signed, failed or left Pending with the reason through certlife's
// issuer contract, its status written back. A request for any other
// group is left to that group's controller, as cert-manager's
// external-issuer contract says; the operator only approves it (unless
// its approver is off), as the reference operator's approver does, so
// that the external issuer will sign it.
type RequestReconciler struct {
	Reconciler *host.Reconciler
	// Cache reads requests; Client writes an external request's approval.
	Cache  client.Reader
	Client client.Client
	// Clock is the loop's.
	Clock    clock.PassiveClock
	Recorder events.EventRecorder
	Metrics  *Metrics
	// Approve: the operator approves requests.
	Approve bool

	// gone are the issuers of requests deleted since the controller last
	// looked at them (types.NamespacedName → certificate.IssuerRef): the
	// next pass tells the issuer, whoever deleted the request.
	gone sync.Map
}

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificaterequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificaterequests/status,verbs=update
// +kubebuilder:rbac:groups=cert-manager.io,resources=signers,verbs=approve,resourceNames=issuers.cert-manager.io/*;clusterissuers.cert-manager.io/*
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers;clusterissuers,verbs=get;list;watch
// +kubebuilder:rbac:groups=acme.cert-manager.io,resources=orders;challenges,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=acme.cert-manager.io,resources=orders/status;challenges/status,verbs=update

// Reconcile answers one request, once.
func (r *RequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cr cmapi.CertificateRequest
	if err := r.Cache.Get(ctx, req.NamespacedName, &cr); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if ref, ok := r.gone.LoadAndDelete(req.NamespacedName); ok {
			// Deleted: nothing its issuer keeps for it may outlive it.
			if err := r.Reconciler.Forget(ctx, ref.(certificate.IssuerRef), req.Namespace, req.Name); err != nil {
				r.gone.LoadOrStore(req.NamespacedName, ref)
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}
	before := RequestToCore(&cr)
	if certificate.Answered(before) || cr.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // final: the certificate stages replace it when they need another
	}
	if !served(before.Spec.IssuerRef) {
		return r.approveExternal(ctx, &cr, before)
	}
	ev, err := r.Reconciler.Request(ctx, cr.Namespace, cr.Name)
	now := r.Clock.Now()
	if err != nil {
		if !ev.Next.IsZero() && !errors.Is(err, host.ErrConflict) {
			// The issuer named its own retry time.
			log.FromContext(ctx).Info("answering the request failed; trying again", "error", err.Error(), "next", ev.Next)
			return requeue(ev.Next, now, nil)
		}
		return ctrl.Result{}, err
	}
	logger := log.FromContext(ctx)
	after := ev.Request
	if after == nil {
		return requeue(ev.Next, now, nil)
	}
	ready := after.Condition(certificate.RequestConditionReady)
	if certificate.Answered(after) {
		answer := answerOf(after)
		r.Metrics.answered(cr.Namespace, before.Spec.IssuerRef.Kind, cr.Spec.IssuerRef.Name, answer)
		typ := corev1.EventTypeNormal
		if answer != certificate.RequestReasonIssued {
			typ = corev1.EventTypeWarning
		}
		msg := ""
		if ready != nil {
			msg = ready.Message
		}
		recordEvent(r.Recorder, &cr, nil, typ, answer, "Sign", msg)
		logger.V(1).Info("answered", "answer", answer, "message", msg)
	} else if ready != nil && ready.Reason == certificate.RequestReasonPending && strings.HasPrefix(ready.Message, notReadyPrefix) {
		if was := before.Condition(certificate.RequestConditionReady); was == nil || was.Message != ready.Message {
			r.issuerNotReady(&cr, ready.Message)
		}
	}
	if !approved(before) && approved(after) {
		recordEvent(r.Recorder, &cr, nil, corev1.EventTypeNormal, ReasonApproved, "Approve", MessageApproved)
	}
	return requeue(ev.Next, now, nil)
}

// events queues a request for each change of it, as controller-runtime's
// handler for the controller's own kind does, and first keeps the issuer
// of a deleted one for the pass that tells it.
func (r *RequestReconciler) events() handler.TypedEventHandler[client.Object, reconcile.Request] {
	key := func(obj client.Object) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key(e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if cr, ok := e.Object.(*cmapi.CertificateRequest); ok && served(issuerRefToCore(cr.Spec.IssuerRef)) {
				r.gone.Store(key(cr).NamespacedName, issuerRefToCore(cr.Spec.IssuerRef))
			}
			q.Add(key(e.Object))
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key(e.Object))
		},
	}
}

// approveExternal approves a request of another group's issuer that has
// neither an Approved nor a Denied condition, as the reference operator's
// approver does; the issuer of that group answers it.
func (r *RequestReconciler) approveExternal(ctx context.Context, cr *cmapi.CertificateRequest, core *certificate.CertificateRequest) (ctrl.Result, error) {
	if !r.Approve || approvalDecided(core) {
		return ctrl.Result{}, nil
	}
	upd := cr.DeepCopy()
	upd.Status.Conditions = append(upd.Status.Conditions, cmapi.CertificateRequestCondition{
		Type: cmapi.CertificateRequestConditionApproved, Status: cmmeta.ConditionTrue, Reason: ReasonApproved, Message: MessageApproved,
		LastTransitionTime: &metav1.Time{Time: r.Clock.Now().Truncate(time.Second)},
	})
	if err := r.Client.Status().Update(ctx, upd); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	recordEvent(r.Recorder, cr, nil, corev1.EventTypeNormal, ReasonApproved, "Approve", MessageApproved)
	return ctrl.Result{}, nil
}

// issuerNotReady records, on the Certificate that owns cr, that cr waits
// for an issuer that cannot sign yet, and why: where `kubectl describe
// certificate` shows it. One Event each time the request's reason
// changes.
func (r *RequestReconciler) issuerNotReady(cr *cmapi.CertificateRequest, message string) {
	ref := metav1.GetControllerOfNoCopy(cr)
	if ref == nil || ref.Kind != cmapi.CertificateKind || ref.APIVersion != cmapi.SchemeGroupVersion.String() {
		return
	}
	crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: cr.Namespace, UID: ref.UID}}
	recordEvent(r.Recorder, crt, cr, corev1.EventTypeWarning, ReasonIssuerNotReady, "Sign", "request "+cr.Name+" is waiting: "+message)
}

// answerOf names an answered request's answer.
func answerOf(r *certificate.CertificateRequest) string {
	for _, t := range []string{certificate.RequestConditionDenied, certificate.RequestConditionInvalidRequest} {
		if c := r.Condition(t); c != nil && c.Status == certificate.StatusTrue {
			return t
		}
	}
	if c := r.Condition(certificate.RequestConditionReady); c != nil {
		return c.Reason
	}
	return "Unknown"
}

// ReasonIssuerNotReady is the reason of the Warning Event on a
// Certificate whose request waits for an issuer that cannot sign yet: the
// issuer does not exist, its CA Secret is missing or holds no usable CA,
// its ACME account cannot be used, it configures what this operator does
// not serve. The request stays Pending with the reason (no failure, no
// backoff) and is answered once the issuer is fixed.
const ReasonIssuerNotReady = "IssuerNotReady"

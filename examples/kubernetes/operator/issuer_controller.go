package operator

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// Issuers is what the issuer controllers share: where they read, and
// where a ClusterIssuer's Secrets live.
type Issuers struct {
	Gatherer Gatherer
	// ClusterResourceNamespace holds the Secrets ClusterIssuers name.
	ClusterResourceNamespace string
}

// errNoIssuer: the issuer a request names does not exist (yet).
type errNoIssuer struct{ kind, name string }

func (e errNoIssuer) Error() string { return fmt.Sprintf("%s %s does not exist", e.kind, e.name) }

// lookup returns the spec of the issuer ref names, for a request in
// namespace, and the namespace its Secrets live in; ok is false for an
// issuer of another group, which another controller answers.
func (is Issuers) lookup(ctx context.Context, namespace string, ref v1alpha1.IssuerReference) (spec *v1alpha1.IssuerSpec, secretsNS string, ok bool, err error) {
	if ref.Group != "" && ref.Group != v1alpha1.GroupVersion.Group {
		return nil, "", false, nil
	}
	switch ref.Kind {
	case "", "Issuer":
		var iss v1alpha1.Issuer
		err = is.Gatherer.Cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &iss)
		spec, secretsNS = &iss.Spec, namespace
	case "ClusterIssuer":
		var iss v1alpha1.ClusterIssuer
		err = is.Gatherer.Cache.Get(ctx, types.NamespacedName{Name: ref.Name}, &iss)
		spec, secretsNS = &iss.Spec, is.ClusterResourceNamespace
	default:
		return nil, "", false, nil
	}
	if apierrors.IsNotFound(err) {
		kind := ref.Kind
		if kind == "" {
			kind = "Issuer"
		}
		return nil, "", true, errNoIssuer{kind, ref.Name}
	}
	return spec, secretsNS, err == nil, err
}

// errNoCASecret: the CA Secret an issuer names does not exist (yet).
type errNoCASecret struct{ namespace, name string }

func (e errNoCASecret) Error() string {
	return fmt.Sprintf("the CA secret %s/%s does not exist", e.namespace, e.name)
}

// coreSecret reads a Secret for package certificate/localca (a
// localca.SecretGetter): from the cache, else from the API server; an
// error when it does not exist.
func (is Issuers) coreSecret(ctx context.Context, namespace, name string) (*certificate.Secret, error) {
	s, err := is.Gatherer.secret(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, errors.New("it does not exist")
	}
	return SecretToCore(s), nil
}

// loadCA reads a CA key pair from a Secret (tls.crt, tls.key).
func (is Issuers) loadCA(ctx context.Context, namespace, name string) (*localca.CA, error) {
	s, err := is.Gatherer.secret(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, errNoCASecret{namespace, name}
	}
	ca, err := localca.FromPEM(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	if err != nil {
		return nil, fmt.Errorf("the CA secret %s/%s cannot be used: %w", namespace, name, err)
	}
	return ca, nil
}

// RequestReconciler answers CertificateRequests through certlife's issuer
// contract: for CA and SelfSigned issuers with package
// certificate/localca, at once; for ACME issuers with an
// acmeclient.Issuer, one Step per pass, its order and challenges kept in
// Order and Challenge resources.
type RequestReconciler struct {
	Client  client.Client
	Issuers Issuers
	// ACME answers the requests of ACME issuers.
	ACME  *acmeIssuers
	Clock clock.PassiveClock
	// Rand is the randomness for serial numbers and signatures.
	Rand     io.Reader
	Recorder events.EventRecorder
	Metrics  *Metrics
}

// +kubebuilder:rbac:groups=certlife.dev,resources=certificaterequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certlife.dev,resources=certificaterequests/status,verbs=update
// +kubebuilder:rbac:groups=certlife.dev,resources=issuers;clusterissuers,verbs=get;list;watch
// +kubebuilder:rbac:groups=certlife.dev,resources=orders;challenges,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=certlife.dev,resources=orders/status;challenges/status,verbs=update

// Reconcile answers one request, once.
func (r *RequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cr v1alpha1.CertificateRequest
	if err := r.Issuers.Gatherer.Cache.Get(ctx, req.NamespacedName, &cr); err != nil {
		if apierrors.IsNotFound(err) && r.ACME != nil {
			// Deleted before its order ended: take down what its
			// challenges present and remove its order.
			return ctrl.Result{}, r.ACME.forgetRequest(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	core := RequestToCore(&cr)
	if certificate.Answered(core) || cr.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // final: the certificate stages replace it when they need another
	}
	now := r.Clock.Now()
	var (
		out ctrl.Result
		// notReady: the request waits because its issuer cannot sign
		// yet, which is worth an Event on its certificate.
		notReady bool
	)
	spec, secretsNS, ours, err := r.Issuers.lookup(ctx, cr.Namespace, cr.Spec.IssuerRef)
	switch {
	case !ours:
		return ctrl.Result{}, err
	case err != nil:
		if _, missing := err.(errNoIssuer); !missing {
			return ctrl.Result{}, err
		}
		// The Issuer's creation brings the request back (watch); the
		// recheck too.
		certificate.SetPending(core, "the issuer is not ready: "+err.Error(), now)
		out.RequeueAfter, notReady = localca.NotReadyRecheck, true
	case spec.CA != nil:
		// Not a failure while the CA Secret is missing or holds no CA
		// and its key: the CA may be on its way (a Certificate being
		// issued), or being fixed. The request stays Pending with the
		// reason, looked at again after localca.NotReadyRecheck, and when
		// the Issuer turns Ready (watch).
		at, err := localca.FromSecret(r.Issuers.coreSecret, secretsNS, spec.CA.SecretName, r.Rand).Answer(ctx, core, now)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !at.IsZero() {
			out.RequeueAfter, notReady = max(at.Sub(now), time.Millisecond), true
		}
	case spec.SelfSigned != nil:
		if err := r.selfSign(ctx, core, now); err != nil {
			return ctrl.Result{}, err
		}
	case spec.ACME != nil:
		kind := cr.Spec.IssuerRef.Kind
		if kind == "" {
			kind = "Issuer"
		}
		out.RequeueAfter, notReady = r.stepACME(ctx, &cr, core, kind, spec.ACME, secretsNS, now)
	}

	st := RequestStatusFromCore(core.Status)
	if equality.Semantic.DeepEqual(cr.Status, st) {
		return out, nil
	}
	upd := cr.DeepCopy()
	upd.Status = st
	if err := r.Client.Status().Update(ctx, upd); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	if certificate.Answered(core) {
		kind := cr.Spec.IssuerRef.Kind
		if kind == "" {
			kind = "Issuer"
		}
		ready := core.Condition(certificate.RequestConditionReady)
		answer := answerOf(core)
		r.Metrics.answered(cr.Namespace, kind, cr.Spec.IssuerRef.Name, answer)
		if r.Recorder != nil {
			typ := corev1.EventTypeNormal
			if answer != certificate.RequestReasonIssued {
				typ = corev1.EventTypeWarning
			}
			r.Recorder.Eventf(upd, nil, typ, answer, "Sign", "%s", ready.Message)
		}
		log.FromContext(ctx).V(1).Info("answered", "answer", answer, "message", ready.Message)
	}
	if notReady {
		r.issuerNotReady(upd, core.Condition(certificate.RequestConditionReady).Message)
	}
	return out, nil
}

// issuerNotReady records, on the Certificate that owns cr, that cr waits
// for an issuer that cannot sign yet, and why: where `kubectl describe
// certificate` shows it. One Event each time the request's reason
// changes (its status is written only then).
func (r *RequestReconciler) issuerNotReady(cr *v1alpha1.CertificateRequest, message string) {
	ref := metav1.GetControllerOfNoCopy(cr)
	if r.Recorder == nil || ref == nil || ref.Kind != "Certificate" || ref.APIVersion != v1alpha1.GroupVersion.String() {
		return
	}
	crt := &v1alpha1.Certificate{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: cr.Namespace, UID: ref.UID}}
	r.Recorder.Eventf(crt, cr, corev1.EventTypeWarning, ReasonIssuerNotReady, "Sign", "request %s is waiting: %s", cr.Name, message)
}

// stepACME does one Step of an ACME request's order and says when to step
// again. A request whose issuer cannot be used yet (its account key
// Secret is being made, its configuration is wrong) waits Pending with
// the reason (notReady), and is brought back by the issuer's next change
// or the recheck.
func (r *RequestReconciler) stepACME(ctx context.Context, cr *v1alpha1.CertificateRequest, core *certificate.CertificateRequest, kind string, spec *v1alpha1.ACMEIssuer, secretsNS string, now time.Time) (again time.Duration, notReady bool) {
	if r.ACME == nil {
		certificate.SetPending(core, "the issuer is not ready: this operator was started without ACME", now)
		return 0, true
	}
	rt, err := r.ACME.get(ctx, kind, cr.Namespace, cr.Spec.IssuerRef.Name, spec, secretsNS)
	if err != nil {
		pendingIfChanged(core, "the issuer is not ready: "+err.Error(), now)
		return pendingRecheck, true
	}
	res, err := rt.issuer.Step(withRequest(ctx, cr), core)
	logger := log.FromContext(ctx)
	if err != nil {
		// The store failed (a conflict, or the API server): a fresh read
		// on the next step.
		logger.V(1).Info("ACME step failed; stepping again", "error", err.Error(), "requeueAt", res.RequeueAt)
	} else if res.Err != nil {
		logger.Info("ACME request failed; the order retries it", "reason", res.Reason, "error", res.Err.Error(), "requeueAt", res.RequeueAt)
	}
	if !res.Answered && err == nil && res.Message != "" {
		pendingIfChanged(core, res.Reason+": "+res.Message, now)
	}
	if res.RequeueAt.IsZero() {
		return 0, false
	}
	return max(res.RequeueAt.Sub(r.Clock.Now()), time.Millisecond), false
}

// pendingIfChanged marks r Pending with message unless it says that
// already.
func pendingIfChanged(r *certificate.CertificateRequest, message string, now time.Time) {
	if c := r.Condition(certificate.RequestConditionReady); c != nil && c.Reason == certificate.RequestReasonPending && c.Message == message {
		return
	}
	certificate.SetPending(r, message, now)
}

// answerOf names an answered request's answer.
func answerOf(r *certificate.CertificateRequest) string {
	for _, t := range []string{certificate.RequestConditionDenied, certificate.RequestConditionInvalidRequest} {
		if c := r.Condition(t); c != nil && c.Status == certificate.StatusTrue {
			return t
		}
	}
	return r.Condition(certificate.RequestConditionReady).Reason
}

// selfSign signs r with its own key, read from the Secret its
// AnnotationPrivateKeySecretName names.
func (r *RequestReconciler) selfSign(ctx context.Context, cr *certificate.CertificateRequest, now time.Time) error {
	name := cr.Annotations[certificate.AnnotationPrivateKeySecretName]
	if name == "" {
		certificate.SetInvalid(cr, "the request names no private key secret ("+certificate.AnnotationPrivateKeySecretName+")", now)
		return nil
	}
	s, err := r.Issuers.Gatherer.secret(ctx, cr.Namespace, name)
	if err != nil {
		return err
	}
	if s == nil {
		certificate.SetInvalid(cr, "the private key secret "+name+" does not exist", now)
		return nil
	}
	key, err := keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
	if err != nil {
		certificate.SetInvalid(cr, "the private key in secret "+name+" cannot be decoded", now)
		return nil
	}
	return localca.SelfSign(r.Rand, cr, key, now)
}

// ReasonIssuerNotReady is the reason of the Warning Event on a
// Certificate whose request waits for an issuer that cannot sign yet: the
// issuer does not exist, its CA Secret is missing or holds no usable CA,
// its ACME account cannot be used. The request stays Pending with the
// reason (no failure, no backoff) and is answered once the issuer is
// fixed.
const ReasonIssuerNotReady = "IssuerNotReady"

// Issuer condition reasons.
const (
	ReasonIssuerReady      = "Ready"
	ReasonCAUnusable       = "CAUnusable"
	ReasonCAExpired        = "CAExpired"
	ReasonACMENotAvailable = "ACMENotAvailable"
	// ReasonACMEAccountKey: the account key Secret cannot be made.
	ReasonACMEAccountKey = "ACMEAccountKey"
	// ReasonACMEConfig: the issuer's ACME settings cannot be used.
	ReasonACMEConfig = "ACMEConfig"
	// ReasonACMEAccountFailed: the server refused to register the account,
	// or could not be reached.
	ReasonACMEAccountFailed = "ACMEAccountFailed"
)

// issuerRecheck is how often a Ready issuer is looked at again without a
// change to it or its CA Secret (a CA Secret the operator does not manage
// is not watched); pendingRecheck is how often a request or an issuer
// waiting for a CA Secret to exist looks again.
const (
	issuerRecheck  = time.Hour
	pendingRecheck = 30 * time.Second
)

// IssuerReconciler keeps an Issuer's or a ClusterIssuer's Ready condition.
type IssuerReconciler struct {
	Client  client.Client
	Issuers Issuers
	ACME    *acmeIssuers
	Clock   clock.PassiveClock
	// Rand is the randomness of ACME account keys.
	Rand io.Reader
	// Cluster is true for ClusterIssuers.
	Cluster bool
}

// +kubebuilder:rbac:groups=certlife.dev,resources=issuers/status;clusterissuers/status,verbs=update

// Reconcile looks at one issuer.
func (r *IssuerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var (
		obj       client.Object
		spec      *v1alpha1.IssuerSpec
		status    *v1alpha1.IssuerStatus
		secretsNS = req.Namespace
	)
	if r.Cluster {
		iss := &v1alpha1.ClusterIssuer{}
		obj, spec, status, secretsNS = iss, &iss.Spec, &iss.Status, r.Issuers.ClusterResourceNamespace
	} else {
		iss := &v1alpha1.Issuer{}
		obj, spec, status = iss, &iss.Spec, &iss.Status
	}
	if err := r.Issuers.Gatherer.Cache.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) && r.ACME != nil {
			kind := "Issuer"
			if r.Cluster {
				kind = "ClusterIssuer"
			}
			r.ACME.drop(issuerID(kind, req.Namespace, req.Name))
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()
	cond := metav1.Condition{Type: "Ready", ObservedGeneration: obj.GetGeneration()}
	var out ctrl.Result
	switch {
	case spec.CA != nil:
		out.RequeueAfter = issuerRecheck
		ca, err := r.Issuers.loadCA(ctx, secretsNS, spec.CA.SecretName)
		switch {
		case err != nil:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonCAUnusable, err.Error()
			out.RequeueAfter = pendingRecheck
		case !now.Before(ca.Certificate().NotAfter):
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonCAExpired, "the CA certificate "+describeCA(ca.Certificate())+" has expired"
		default:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonIssuerReady, "signing with the CA "+describeCA(ca.Certificate())
			if d := ca.Certificate().NotAfter.Sub(now); d < out.RequeueAfter {
				out.RequeueAfter = d + time.Second
			}
		}
	case spec.SelfSigned != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonIssuerReady, "signing each certificate with its own key"
	case spec.ACME != nil:
		kind := "Issuer"
		if r.Cluster {
			kind = "ClusterIssuer"
		}
		out.RequeueAfter = r.account(ctx, kind, obj, spec.ACME, status, secretsNS, &cond)
	}
	before := status.DeepCopy()
	cond.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second)) // kept unless the status changes
	if !meta.SetStatusCondition(&status.Conditions, cond) || equality.Semantic.DeepEqual(before, status) {
		return out, nil
	}
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	return out, nil
}

// account makes sure an ACME issuer has its account key Secret and a
// registered account, and says so in cond and status.acme.
func (r *IssuerReconciler) account(ctx context.Context, kind string, obj client.Object, spec *v1alpha1.ACMEIssuer, status *v1alpha1.IssuerStatus, secretsNS string, cond *metav1.Condition) time.Duration {
	fail := func(reason, message string, retry time.Duration) time.Duration {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, message
		return retry
	}
	if r.ACME == nil {
		return fail(ReasonACMENotAvailable, "this operator was started without ACME", 0)
	}
	if err := r.ACME.ensureAccountKey(ctx, spec, secretsNS, r.Rand); err != nil {
		return fail(ReasonACMEAccountKey, "the account key secret "+secretsNS+"/"+spec.PrivateKeySecretRef.Name+": "+err.Error(), pendingRecheck)
	}
	rt, err := r.ACME.get(ctx, kind, obj.GetNamespace(), obj.GetName(), spec, secretsNS)
	if err != nil {
		return fail(ReasonACMEConfig, err.Error(), pendingRecheck)
	}
	if rt.registered != "" && status.ACME != nil && status.ACME.URI == rt.registered && status.ACME.LastRegisteredEmail == spec.Email {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonIssuerReady, "the ACME account "+rt.registered+" is registered at "+spec.Server
		return issuerRecheck
	}
	acct, err := rt.client.EnsureAccount(ctx, rt.account)
	if err != nil {
		retry := time.Minute
		if at, ok := acmeclient.RetryAfter(err); ok {
			retry = max(at.Sub(r.Clock.Now()), time.Second)
		}
		return fail(ReasonACMEAccountFailed, "registering the ACME account at "+spec.Server+": "+err.Error(), retry)
	}
	rt.registered = acct.URL
	status.ACME = &v1alpha1.ACMEIssuerStatus{URI: acct.URL, LastRegisteredEmail: spec.Email}
	cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonIssuerReady, "the ACME account "+acct.URL+" is registered at "+spec.Server
	return issuerRecheck
}

func describeCA(c *x509.Certificate) string {
	return fmt.Sprintf("%q (valid until %s)", c.Subject.String(), c.NotAfter.UTC().Format(time.RFC3339))
}

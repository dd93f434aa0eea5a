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

// RequestReconciler answers CertificateRequests for CA and SelfSigned
// issuers through certlife's issuer contract (package
// certificate/localca), and leaves ACME requests to the ACME controllers.
type RequestReconciler struct {
	Client  client.Client
	Issuers Issuers
	Clock   clock.PassiveClock
	// Rand is the randomness for serial numbers and signatures.
	Rand     io.Reader
	Recorder events.EventRecorder
	Metrics  *Metrics
}

// +kubebuilder:rbac:groups=certlife.dev,resources=certificaterequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certlife.dev,resources=certificaterequests/status,verbs=update
// +kubebuilder:rbac:groups=certlife.dev,resources=issuers;clusterissuers,verbs=get;list;watch

// Reconcile answers one request, once.
func (r *RequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cr v1alpha1.CertificateRequest
	if err := r.Issuers.Gatherer.Cache.Get(ctx, req.NamespacedName, &cr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	core := RequestToCore(&cr)
	if certificate.Answered(core) || cr.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // final: the certificate stages replace it when they need another
	}
	now := r.Clock.Now()
	var out ctrl.Result
	spec, secretsNS, ours, err := r.Issuers.lookup(ctx, cr.Namespace, cr.Spec.IssuerRef)
	switch {
	case !ours:
		return ctrl.Result{}, err
	case err != nil:
		if _, missing := err.(errNoIssuer); !missing {
			return ctrl.Result{}, err
		}
		// The Issuer's creation brings the request back (watch).
		certificate.SetPending(core, "waiting for "+err.Error(), now)
	case spec.CA != nil:
		ca, err := r.Issuers.loadCA(ctx, secretsNS, spec.CA.SecretName)
		var missing errNoCASecret
		switch {
		case errors.As(err, &missing):
			// Not a failure: the CA may be on its way (a Certificate
			// being issued). The Issuer turning Ready brings the request
			// back; so does the recheck.
			certificate.SetPending(core, "waiting: "+err.Error(), now)
			out.RequeueAfter = pendingRecheck
		case err != nil:
			certificate.SetFailed(core, err.Error(), now, time.Time{})
		default:
			if err := ca.Issue(r.Rand, core, now); err != nil {
				return ctrl.Result{}, err
			}
		}
	case spec.SelfSigned != nil:
		if err := r.selfSign(ctx, core, now); err != nil {
			return ctrl.Result{}, err
		}
	case spec.ACME != nil:
		certificate.SetPending(core, "ACME issuers are answered by the ACME controllers, which this operator does not run yet", now)
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
	return out, nil
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

// Issuer condition reasons.
const (
	ReasonIssuerReady      = "Ready"
	ReasonCAUnusable       = "CAUnusable"
	ReasonCAExpired        = "CAExpired"
	ReasonACMENotAvailable = "ACMENotAvailable"
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
	Clock   clock.PassiveClock
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
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, ReasonACMENotAvailable, "ACME issuers are answered by the ACME controllers, which this operator does not run yet"
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

func describeCA(c *x509.Certificate) string {
	return fmt.Sprintf("%q (valid until %s)", c.Subject.String(), c.NotAfter.UTC().Format(time.RFC3339))
}

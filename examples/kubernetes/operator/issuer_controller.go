package operator

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// Issuer condition reasons.
const (
	ReasonIssuerReady      = "Ready"
	ReasonCAUnusable       = "CAUnusable"
	ReasonCAExpired        = "CAExpired"
	ReasonACMENotAvailable = "ACMENotAvailable"
	// ReasonACMEAccountKey: the account key Secret cannot be made, or is
	// missing while spec.acme.disableAccountKeyGeneration is set.
	ReasonACMEAccountKey = "ACMEAccountKey"
	// ReasonACMEConfig: the issuer's ACME settings cannot be used.
	ReasonACMEConfig = "ACMEConfig"
	// ReasonACMEAccountFailed: the server refused to register the account,
	// or could not be reached.
	ReasonACMEAccountFailed = "ACMEAccountFailed"
	// ReasonNotServed: the issuer configures what this operator does not
	// serve (an issuer type other than ca, selfSigned and acme, or a field
	// of theirs); its requests wait Pending, saying so.
	ReasonNotServed = "NotServed"
)

// issuerRecheck is how often a Ready issuer is looked at again without a
// change to it or its CA Secret (a CA Secret the operator does not manage
// is not watched).
const issuerRecheck = time.Hour

// IssuerReconciler keeps an Issuer's or a ClusterIssuer's Ready
// condition, registers ACME accounts, and sweeps what an ACME issuer
// keeps for requests that are gone.
type IssuerReconciler struct {
	Client  client.Client
	Issuers *issuers
	Clock   clock.PassiveClock
	// Rand is the randomness of ACME account keys.
	Rand io.Reader
	// Cluster is true for ClusterIssuers.
	Cluster bool
}

// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers/status;clusterissuers/status,verbs=update

// Reconcile looks at one issuer.
func (r *IssuerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var (
		iss       cmapi.GenericIssuer = &cmapi.Issuer{}
		kind                          = cmapi.IssuerKind
		secretsNS                     = req.Namespace
	)
	if r.Cluster {
		iss, kind, secretsNS = &cmapi.ClusterIssuer{}, cmapi.ClusterIssuerKind, r.Issuers.clusterNS
	}
	if err := r.Issuers.cache.Get(ctx, req.NamespacedName, iss); err != nil {
		if apierrors.IsNotFound(err) {
			r.Issuers.acme.drop(issuerID(kind, req.Namespace, req.Name))
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	spec, status := iss.GetSpec(), iss.GetStatus()
	if r.Issuers.leaves(spec) {
		return ctrl.Result{}, nil // another controller keeps its status
	}
	now := r.Clock.Now()
	cond := cmapi.IssuerCondition{Type: cmapi.IssuerConditionReady, ObservedGeneration: iss.GetGeneration()}
	ready := func(reason, message string) {
		cond.Status, cond.Reason, cond.Message = cmmeta.ConditionTrue, reason, message
	}
	notReady := func(reason, message string) {
		cond.Status, cond.Reason, cond.Message = cmmeta.ConditionFalse, reason, message
	}
	out := ctrl.Result{RequeueAfter: issuerRecheck}
	switch problems := append(issuerNotServed(spec), ambientNotAllowed(kind, spec)...); { // ambient: dns01providers.go
	case len(problems) > 0:
		notReady(ReasonNotServed, strings.Join(problems, "; "))
		out.RequeueAfter = 0 // a change to the issuer brings it back
	case spec.CA != nil:
		ca, err := r.loadCA(ctx, secretsNS, spec.CA.SecretName)
		switch {
		case err != nil:
			notReady(ReasonCAUnusable, err.Error())
			out.RequeueAfter = pendingRecheck
		case !now.Before(ca.Certificate().NotAfter):
			notReady(ReasonCAExpired, "the CA certificate "+describeCA(ca.Certificate())+" has expired")
		default:
			ready(ReasonIssuerReady, "signing with the CA "+describeCA(ca.Certificate()))
			if d := ca.Certificate().NotAfter.Sub(now); d < out.RequeueAfter {
				out.RequeueAfter = d + time.Second
			}
		}
	case spec.SelfSigned != nil:
		ready(ReasonIssuerReady, "signing each certificate with its own key")
	case spec.ACME != nil:
		out.RequeueAfter = r.account(ctx, kind, iss, spec.ACME, status, secretsNS, &cond)
		if cond.Status == cmmeta.ConditionTrue {
			if note := http01Note(spec.ACME, r.Issuers.acme.http01Service()); note != "" {
				cond.Message += "; " + note
			}
			// What the issuer keeps for requests that went without
			// telling it goes on time.
			if rt := r.Issuers.acme.existing(issuerID(kind, iss.GetNamespace(), iss.GetName())); rt != nil {
				if next, err := rt.issuer.Sweep(ctx, now); err == nil && !next.IsZero() && next.Sub(now) < out.RequeueAfter {
					out.RequeueAfter = max(next.Sub(now), time.Second)
				}
			}
		}
	}
	before := status.DeepCopy()
	setIssuerCondition(status, cond, now)
	if equality.Semantic.DeepEqual(before, status) {
		return out, nil
	}
	if err := r.Client.Status().Update(ctx, iss); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	return out, nil
}

// setIssuerCondition sets c, keeping the transition time while the
// status stays.
func setIssuerCondition(st *cmapi.IssuerStatus, c cmapi.IssuerCondition, now time.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type != c.Type {
			continue
		}
		c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		if st.Conditions[i].Status != c.Status || c.LastTransitionTime == nil {
			c.LastTransitionTime = &metav1.Time{Time: now.Truncate(time.Second)}
		}
		st.Conditions[i] = c
		return
	}
	c.LastTransitionTime = &metav1.Time{Time: now.Truncate(time.Second)}
	st.Conditions = append(st.Conditions, c)
}

// loadCA reads a CA key pair from a Secret (tls.crt, tls.key).
func (r *IssuerReconciler) loadCA(ctx context.Context, namespace, name string) (*localca.CA, error) {
	s, err := r.Issuers.store.secret(ctx, namespace, name)
	if errors.Is(err, host.ErrNotFound) {
		return nil, fmt.Errorf("the CA secret %s/%s does not exist", namespace, name)
	}
	if err != nil {
		return nil, err
	}
	ca, err := localca.FromPEM(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	if err != nil {
		return nil, fmt.Errorf("the CA secret %s/%s cannot be used: %w", namespace, name, err)
	}
	return ca, nil
}

// account makes sure an ACME issuer has its account key Secret and a
// registered account, and says so in cond and status.acme.
func (r *IssuerReconciler) account(ctx context.Context, kind string, iss cmapi.GenericIssuer, spec *cmacme.ACMEIssuer, status *cmapi.IssuerStatus, secretsNS string, cond *cmapi.IssuerCondition) time.Duration {
	fail := func(reason, message string, retry time.Duration) time.Duration {
		cond.Status, cond.Reason, cond.Message = cmmeta.ConditionFalse, reason, message
		return retry
	}
	a := r.Issuers.acme
	keyRef := accountKeyRef(spec)
	if err := a.ensureAccountKey(ctx, spec, secretsNS, r.Rand); err != nil {
		return fail(ReasonACMEAccountKey, "the account key secret "+secretsNS+"/"+keyRef.Name+": "+err.Error(), pendingRecheck)
	}
	rt, err := a.get(ctx, kind, iss.GetNamespace(), iss.GetName(), spec, secretsNS)
	if err != nil {
		return fail(ReasonACMEConfig, err.Error(), pendingRecheck)
	}
	if rt.registered != "" && status.ACME != nil && status.ACME.URI == rt.registered && status.ACME.LastRegisteredEmail == spec.Email {
		cond.Status, cond.Reason, cond.Message = cmmeta.ConditionTrue, ReasonIssuerReady, "the ACME account "+rt.registered+" is registered at "+spec.Server
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
	status.ACME = &cmacme.ACMEIssuerStatus{URI: acct.URL, LastRegisteredEmail: spec.Email, LastPrivateKeyHash: rt.keyHash}
	cond.Status, cond.Reason, cond.Message = cmmeta.ConditionTrue, ReasonIssuerReady, "the ACME account "+acct.URL+" is registered at "+spec.Server
	return issuerRecheck
}

func describeCA(c *x509.Certificate) string {
	return fmt.Sprintf("%q (valid until %s)", c.Subject.String(), c.NotAfter.UTC().Format(time.RFC3339))
}

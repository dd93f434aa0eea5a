package operator

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/renewal"
)

// issuers serves the issuers of group cert-manager.io — Issuer and
// ClusterIssuer resources with a ca, selfSigned or acme configuration —
// to the host loop (host.Config.IssuerFor): each request of theirs is
// approved (unless the approver is off), then answered through certlife's
// issuer contract by the issuer its issuerRef names, looked up at each
// answer.
type issuers struct {
	cache client.Reader
	store *store
	acme  *acmeIssuers
	rand  io.Reader
	// clusterNS holds the Secrets ClusterIssuers name.
	clusterNS string
	// approve: the operator approves requests (Options.DisableApprover
	// unset).
	approve bool
	// disabled: the issuer types left to another controller
	// (Options.DisabledIssuerTypes).
	disabled map[string]bool
}

// The issuer types, as the reference operator names them
// (Options.DisabledIssuerTypes).
const (
	issuerTypeCA         = "ca"
	issuerTypeSelfSigned = "selfsigned"
	issuerTypeACME       = "acme"
)

// issuerTypes is the set of the types named, or an error naming one that
// is not an issuer type.
func issuerTypes(names []string) (map[string]bool, error) {
	var out map[string]bool
	for _, n := range names {
		switch n {
		case issuerTypeCA, issuerTypeSelfSigned, issuerTypeACME:
		default:
			return nil, fmt.Errorf("operator: options.disabledIssuerTypes: %q is not an issuer type this operator serves (ca, selfsigned, acme)", n)
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[n] = true
	}
	return out, nil
}

// leaves reports an issuer of a type left to another controller. An
// issuer's type is the first of acme, ca, selfSigned it configures, in
// the order the reference operator reads them.
func (is *issuers) leaves(spec *cmapi.IssuerSpec) bool {
	switch {
	case len(is.disabled) == 0:
		return false
	case spec.ACME != nil:
		return is.disabled[issuerTypeACME]
	case spec.CA != nil:
		return is.disabled[issuerTypeCA]
	case spec.SelfSigned != nil:
		return is.disabled[issuerTypeSelfSigned]
	}
	return false
}

// issuerFor gives the loop the issuer of a request whose issuerRef names
// an Issuer or ClusterIssuer of cert-manager.io; nil for any other, which
// its own controller answers.
func (is *issuers) issuerFor(ref certificate.IssuerRef) certificate.Issuer {
	if !served(ref) {
		return nil
	}
	return issuerOf{is, ref}
}

// served reports an issuerRef (with its defaults) the operator answers.
func served(ref certificate.IssuerRef) bool {
	return ref.Group == GroupName && (ref.Kind == cmapi.IssuerKind || ref.Kind == cmapi.ClusterIssuerKind)
}

// errNoIssuer: the issuer a request names does not exist (yet).
type errNoIssuer struct{ kind, name string }

func (e errNoIssuer) Error() string { return fmt.Sprintf("%s %s does not exist", e.kind, e.name) }

// lookup returns the spec of the issuer ref names, for a request in
// namespace, and the namespace its Secrets live in.
func (is *issuers) lookup(ctx context.Context, namespace string, ref certificate.IssuerRef) (spec *cmapi.IssuerSpec, secretsNS string, err error) {
	var iss cmapi.GenericIssuer
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	secretsNS = namespace
	if ref.Kind == cmapi.ClusterIssuerKind {
		iss, key.Namespace, secretsNS = &cmapi.ClusterIssuer{}, "", is.clusterNS
	} else {
		iss = &cmapi.Issuer{}
	}
	if err := is.cache.Get(ctx, key, iss); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", errNoIssuer{ref.Kind, ref.Name}
		}
		return nil, "", err
	}
	return iss.GetSpec(), secretsNS, nil
}

// secret reads a Secret for package certificate/localca (a
// localca.SecretGetter): from the cache, else from the API server.
func (is *issuers) secret(ctx context.Context, namespace, name string) (*certificate.Secret, error) {
	s, err := is.store.secret(ctx, namespace, name)
	if errors.Is(err, host.ErrNotFound) {
		return nil, errors.New("it does not exist")
	}
	if err != nil {
		return nil, err
	}
	return SecretToCore(s), nil
}

// The approval the operator gives a request, as the reference operator's
// approver gives it.
const (
	ConditionApproved = string(cmapi.CertificateRequestConditionApproved)
	ReasonApproved    = "cert-manager.io"
	MessageApproved   = "Certificate request has been approved by cert-manager.io"
)

// approvalDecided reports a request that has an Approved or Denied
// condition (of any status).
func approvalDecided(r *certificate.CertificateRequest) bool {
	return r.Condition(ConditionApproved) != nil || r.Condition(certificate.RequestConditionDenied) != nil
}

func approved(r *certificate.CertificateRequest) bool {
	c := r.Condition(ConditionApproved)
	return c != nil && c.Status == certificate.StatusTrue
}

// approve sets the Approved condition.
func approve(r *certificate.CertificateRequest, now time.Time) {
	r.Status.Conditions = append(r.Status.Conditions, certificate.Condition{Type: ConditionApproved, Status: certificate.StatusTrue,
		Reason: ReasonApproved, Message: MessageApproved, LastTransitionTime: now})
}

// waitingForApproval is the Pending message of a request the operator's
// issuers wait to see approved.
const waitingForApproval = "waiting for approval: the request has no Approved condition yet (this operator's approver is off; an approver such as approver-policy decides)"

// notReadyPrefix begins the Pending message of a request whose issuer
// cannot sign yet (as package localca's do).
const notReadyPrefix = "the issuer is not ready: "

// pendingRecheck is how soon a request waiting for an issuer that cannot
// be used yet is answered again (besides when the issuer changes).
const pendingRecheck = 30 * time.Second

// issuerOf is the certificate.Issuer of one issuerRef; it forgets for
// its ACME issuers.
type issuerOf struct {
	is  *issuers
	ref certificate.IssuerRef
}

var (
	_ certificate.Issuer         = issuerOf{}
	_ certificate.Forgetter      = issuerOf{}
	_ certificate.RenewalAdvisor = issuerOf{}
)

// RenewalWindow asks an ACME issuer's CA for its suggested renewal window
// of leaf, c's certificate (ACME Renewal Information, RFC 9773), at most
// as often as the CA asks; CA and SelfSigned issuers, an ACME issuer left
// to another controller, and one that cannot be used give none. The
// window moves the renewal time, and the status records it
// (status.acme.ari).
func (i issuerOf) RenewalWindow(ctx context.Context, c *certificate.Certificate, leaf *x509.Certificate, now time.Time) (*renewal.ARIWindow, time.Time, error) {
	spec, secretsNS, err := i.is.lookup(ctx, c.Namespace, i.ref)
	if err != nil || spec.ACME == nil || len(issuerNotServed(spec)) > 0 || i.is.leaves(spec) {
		return nil, time.Time{}, nil
	}
	rt, err := i.is.acme.get(ctx, i.ref.Kind, c.Namespace, i.ref.Name, spec.ACME, secretsNS)
	if err != nil {
		return nil, time.Time{}, nil
	}
	return rt.issuer.RenewalWindow(ctx, c, leaf, now)
}

// Answer approves r (unless the approver is off: then an unapproved r
// waits), then answers it with the issuer its issuerRef names: a ca
// issuer signs with the CA in its Secret, a selfSigned one with the
// request's own key, an acme one steps the request's ACME order. An
// issuer that does not exist, or cannot be used yet, leaves r Pending
// with the reason — no failure — and is asked again. An issuer of a type
// left to another controller (Options.DisabledIssuerTypes) gets r
// approved and nothing more: that controller answers it.
func (i issuerOf) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	if len(i.is.disabled) > 0 {
		if spec, _, err := i.is.lookup(ctx, r.Namespace, i.ref); err == nil && i.is.leaves(spec) {
			if i.is.approve && !approvalDecided(r) {
				approve(r, now)
			}
			return time.Time{}, nil // the other controller's answer is a change, which queues it
		}
	}
	if !approved(r) {
		if !i.is.approve || approvalDecided(r) {
			pendingIfChanged(r, waitingForApproval, now)
			return time.Time{}, nil // its approval is a change, which queues it
		}
		approve(r, now)
	}
	spec, secretsNS, err := i.is.lookup(ctx, r.Namespace, i.ref)
	var missing errNoIssuer
	switch {
	case errors.As(err, &missing):
		// The issuer's creation brings the request back; the recheck too.
		pendingIfChanged(r, notReadyPrefix+err.Error(), now)
		return now.Add(localca.NotReadyRecheck), nil
	case err != nil:
		return time.Time{}, err
	}
	if problems := append(issuerNotServed(spec), ambientNotAllowed(i.ref.Kind, spec)...); len(problems) > 0 { // ambient: dns01providers.go
		pendingIfChanged(r, notReadyPrefix+strings.Join(problems, "; "), now)
		return now.Add(localca.NotReadyRecheck), nil
	}
	switch {
	case spec.CA != nil:
		return localca.FromSecret(i.is.secret, secretsNS, spec.CA.SecretName, i.is.rand, caOptions(spec)...).Answer(ctx, r, now)
	case spec.SelfSigned != nil:
		return localca.SelfSigned(i.is.secret, i.is.rand, caOptions(spec)...).Answer(ctx, r, now)
	}
	rt, err := i.is.acme.get(ctx, i.ref.Kind, r.Namespace, i.ref.Name, spec.ACME, secretsNS)
	if err != nil {
		pendingIfChanged(r, notReadyPrefix+err.Error(), now)
		return now.Add(pendingRecheck), nil
	}
	return rt.issuer.Answer(ctx, r, now)
}

// Forget tells an ACME issuer that the request namespace/name is gone:
// it takes down what the request's challenges present and deletes its
// Order and Challenges. Its CA and SelfSigned issuers keep nothing. The
// loop never calls it while it answers the request, nor answers the
// request after.
func (i issuerOf) Forget(ctx context.Context, namespace, name string) error {
	spec, secretsNS, err := i.is.lookup(ctx, namespace, i.ref)
	if err == nil && spec.ACME != nil && len(issuerNotServed(spec)) == 0 && !i.is.leaves(spec) {
		if rt, err := i.is.acme.get(ctx, i.ref.Kind, namespace, i.ref.Name, spec.ACME, secretsNS); err == nil {
			return rt.issuer.Forget(ctx, namespace, name)
		}
	}
	// No ACME issuer to tell (gone, or not usable): remove what the
	// request's order left, as well as can be done without it.
	return i.is.acme.forgetRequest(ctx, namespace, name)
}

// caOptions are what a CA or SelfSigned issuer puts into every
// certificate it signs: its CRL distribution points, and a CA issuer's
// OCSP servers and issuing-certificate URLs (the authority information
// access extension), as the reference operator's issuers put them.
func caOptions(spec *cmapi.IssuerSpec) []localca.Option {
	var out []localca.Option
	switch {
	case spec.CA != nil:
		ca := spec.CA
		if len(ca.CRLDistributionPoints) > 0 {
			out = append(out, localca.CRLDistributionPoints(ca.CRLDistributionPoints...))
		}
		if len(ca.OCSPServers) > 0 {
			out = append(out, localca.OCSPServers(ca.OCSPServers...))
		}
		if len(ca.IssuingCertificateURLs) > 0 {
			out = append(out, localca.IssuingCertificateURLs(ca.IssuingCertificateURLs...))
		}
	case spec.SelfSigned != nil && len(spec.SelfSigned.CRLDistributionPoints) > 0:
		out = append(out, localca.CRLDistributionPoints(spec.SelfSigned.CRLDistributionPoints...))
	}
	return out
}

// splitJoined lists the messages of errors.Join's errors, one per line.
func splitJoined(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// pendingIfChanged marks r Pending with message unless it says that
// already.
func pendingIfChanged(r *certificate.CertificateRequest, message string, now time.Time) {
	if c := r.Condition(certificate.RequestConditionReady); c != nil && c.Reason == certificate.RequestReasonPending && c.Message == message {
		return
	}
	certificate.SetPending(r, message, now)
}

// issuerNotServed names what an issuer's spec configures that this
// operator does not serve: issuer types other than ca, selfSigned and
// acme, and their fields certlife has no counterpart for. Each is
// "spec.<path>: why".
func issuerNotServed(spec *cmapi.IssuerSpec) []string {
	var out []string
	add := func(path, why string) {
		if path != "" {
			path = "." + path
		}
		out = append(out, "spec"+path+": "+why)
	}
	const notServed = "is not served by this operator"
	if spec.Vault != nil {
		add("vault", notServed+" (it serves ca, selfSigned and acme)")
	}
	if spec.Venafi != nil {
		add("venafi", notServed+" (it serves ca, selfSigned and acme)")
	}
	n := 0
	for _, set := range []bool{spec.CA != nil, spec.SelfSigned != nil, spec.ACME != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0 && len(out) == 0:
		add("", "configures no issuer: set one of ca, selfSigned, acme")
	case n > 1:
		add("", "configures more than one of ca, selfSigned, acme")
	}
	if spec.CA != nil || spec.SelfSigned != nil {
		field := "ca"
		if spec.CA == nil {
			field = "selfSigned"
		}
		for _, e := range splitJoined(localca.ValidateOptions(caOptions(spec)...)) {
			// "spec.ca.ocspServers[0]: "x" is not an absolute URL in ASCII"
			out = append(out, "spec."+field+"."+strings.TrimPrefix(e, localca.ErrInvalidOption.Error()+": "))
		}
	}
	if a := spec.ACME; a != nil {
		out = append(out, acmeNotServed(a)...)
	}
	return out
}

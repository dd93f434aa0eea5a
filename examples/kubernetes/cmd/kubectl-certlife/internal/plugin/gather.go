package plugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/renewal"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// DefaultConfig is the decision's configuration the operator runs with
// when its Options.Config is left at its zero value, as the operator's
// own command does: certlife's defaults, and a secret another
// certificate holds looked at again every operator.SecretRecheck.
func DefaultConfig() certificate.Config {
	return certificate.Config{SecretInUseRecheck: operator.SecretRecheck}
}

// gathered is what status reads about one Certificate: the objects as the
// API server has them, and the snapshot the controller's decision reads,
// built from them with the operator's own conversions.
type gathered struct {
	crt *cmapi.Certificate
	// secret is spec.secretName; nil when it does not exist (or the name
	// is not a valid one).
	secret *corev1.Secret
	// requests are the CertificateRequests the Certificate controls,
	// oldest revision first.
	requests []cmapi.CertificateRequest
	// orders are the Orders each request controls, by the request's UID;
	// challenges the Challenges each Order controls, by the Order's UID.
	orders     map[types.UID][]cmacme.Order
	challenges map[types.UID][]cmacme.Challenge
	// nextKeys are the names of the next-private-key Secrets the
	// Certificate controls.
	nextKeys []string
	// notServed is what the operator refuses in the spec (NotServed): the
	// operator then decides nothing and says InvalidSpec.
	notServed []*certificate.FieldError
	snap      *certificate.Snapshot
}

// gather reads what the Certificate controller's pass reads for the
// Certificate namespace/name — its Secret (from the API server, so a
// missing one is missing for certain), the next-private-key Secrets and
// CertificateRequests it controls, the other Certificates that name the
// same Secret, and the CA's suggested renewal window recorded in its
// status — and, for the display only, the ACME Orders and Challenges its
// requests control. It writes nothing.
func gather(ctx context.Context, c client.Reader, namespace, name string) (*gathered, error) {
	if err := certificate.ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("namespace %q: %w", namespace, err)
	}
	if err := certificate.ValidateObjectName(name); err != nil {
		return nil, fmt.Errorf("certificate name %q: %w", name, err)
	}
	g := &gathered{crt: &cmapi.Certificate{}, orders: map[types.UID][]cmacme.Order{}, challenges: map[types.UID][]cmacme.Challenge{}}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, g.crt); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("certificate %s/%s does not exist", namespace, name)
		}
		return nil, fmt.Errorf("reading certificate %s/%s: %w", namespace, name, err)
	}
	crt := g.crt
	g.notServed = operator.NotServed(crt)
	pw, err := passwords(ctx, c, crt)
	if err != nil {
		return nil, err
	}
	core := operator.CertificateToCore(crt, pw)
	snap := &certificate.Snapshot{Certificate: core}
	g.snap = snap

	if certificate.ValidateObjectName(crt.Spec.SecretName) == nil {
		sec, err := getSecret(ctx, c, namespace, crt.Spec.SecretName)
		switch {
		case err != nil:
			return nil, err
		case sec == nil:
			snap.SecretAbsenceConfirmed = true
		default:
			g.secret = sec
			snap.Secret = operator.SecretToCore(sec)
		}
	}

	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(namespace), client.MatchingLabels{cmapi.IsNextPrivateKeySecretLabelKey: "true"}); err != nil {
		return nil, fmt.Errorf("listing next private keys in %s: %w", namespace, err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if controlledBy(s, crt.UID) {
			snap.NextPrivateKeySecrets = append(snap.NextPrivateKeySecrets, operator.SecretToCore(s))
			g.nextKeys = append(g.nextKeys, s.Name)
		}
	}
	slices.Sort(g.nextKeys)

	var reqs cmapi.CertificateRequestList
	if err := c.List(ctx, &reqs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing certificaterequests in %s: %w", namespace, err)
	}
	for i := range reqs.Items {
		if r := &reqs.Items[i]; controlledBy(r, crt.UID) {
			g.requests = append(g.requests, *r)
			snap.Requests = append(snap.Requests, operator.RequestToCore(r))
		}
	}
	slices.SortFunc(g.requests, func(a, b cmapi.CertificateRequest) int {
		return cmp.Or(cmp.Compare(revisionOf(&a), revisionOf(&b)), cmp.Compare(a.Name, b.Name))
	})

	if crt.Spec.SecretName != "" {
		var crts cmapi.CertificateList
		if err := c.List(ctx, &crts, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing certificates in %s: %w", namespace, err)
		}
		for i := range crts.Items {
			if o := &crts.Items[i]; o.Name != crt.Name && o.Spec.SecretName == crt.Spec.SecretName {
				snap.OtherOwners = append(snap.OtherOwners, operator.CertificateToCore(o, operator.Passwords{}))
			}
		}
	}
	snap.ARI = ariWindow(crt)

	if len(g.requests) > 0 {
		if err := g.gatherACME(ctx, c, namespace); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// gatherACME reads the Orders the requests control and the Challenges
// those Orders control. A cluster without the acme.cert-manager.io
// resources has none.
func (g *gathered) gatherACME(ctx context.Context, c client.Reader, namespace string) error {
	var orders cmacme.OrderList
	if err := c.List(ctx, &orders, client.InNamespace(namespace)); err != nil {
		if noResource(err) {
			return nil
		}
		return fmt.Errorf("listing orders in %s: %w", namespace, err)
	}
	owners := map[types.UID]bool{}
	for i := range g.requests {
		owners[g.requests[i].UID] = true
	}
	orderUIDs := map[types.UID]bool{}
	for _, o := range orders.Items {
		if ref := metav1.GetControllerOfNoCopy(&o); ref != nil && owners[ref.UID] {
			g.orders[ref.UID] = append(g.orders[ref.UID], o)
			orderUIDs[o.UID] = true
		}
	}
	if len(orderUIDs) == 0 {
		return nil
	}
	var chs cmacme.ChallengeList
	if err := c.List(ctx, &chs, client.InNamespace(namespace)); err != nil {
		if noResource(err) {
			return nil
		}
		return fmt.Errorf("listing challenges in %s: %w", namespace, err)
	}
	for _, ch := range chs.Items {
		if ref := metav1.GetControllerOfNoCopy(&ch); ref != nil && orderUIDs[ref.UID] {
			g.challenges[ref.UID] = append(g.challenges[ref.UID], ch)
		}
	}
	for k := range g.orders {
		slices.SortFunc(g.orders[k], func(a, b cmacme.Order) int { return cmp.Compare(a.Name, b.Name) })
	}
	for k := range g.challenges {
		slices.SortFunc(g.challenges[k], func(a, b cmacme.Challenge) int {
			return cmp.Or(cmp.Compare(a.Spec.DNSName, b.Spec.DNSName), cmp.Compare(a.Spec.Type, b.Spec.Type), cmp.Compare(a.Name, b.Name))
		})
	}
	return nil
}

// noResource reports an API server that does not serve a kind.
func noResource(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

// getSecret reads a Secret; nil, nil when it does not exist. Its values
// beyond keys.MaxSecretValueBytes are not parsed by anything that reads
// it.
func getSecret(ctx context.Context, c client.Reader, namespace, name string) (*corev1.Secret, error) {
	var sec corev1.Secret
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &sec)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	return &sec, nil
}

// passwords reads the keystore passwords spec.keystores names, as the
// operator does (operator.KeystorePasswords): the decision checks the
// keystores in the Secret with them. They are never printed.
func passwords(ctx context.Context, c client.Reader, crt *cmapi.Certificate) (operator.Passwords, error) {
	return operator.KeystorePasswords(crt, func(name string) (*corev1.Secret, error) {
		return getSecret(ctx, c, crt.Namespace, name)
	})
}

// ariWindow is the CA's suggested renewal window the status records
// (status.acme.ari.suggestedWindow, as cert-manager writes it); nil for
// none.
func ariWindow(crt *cmapi.Certificate) *renewal.ARIWindow {
	a := crt.Status.ACME
	if a == nil || a.ARI == nil || a.ARI.SuggestedWindow == nil {
		return nil
	}
	w := a.ARI.SuggestedWindow
	if w.Start == nil || w.End == nil {
		return nil
	}
	return &renewal.ARIWindow{Start: w.Start.Time, End: w.End.Time, ExplanationURL: a.ARI.ExplanationURL}
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == uid && ref.Kind == cmapi.CertificateKind
}

// revisionOf is a request's revision annotation; 0 for none.
func revisionOf(r *cmapi.CertificateRequest) int {
	var n int
	if _, err := fmt.Sscan(r.Annotations[cmapi.CertificateRequestRevisionAnnotationKey], &n); err != nil {
		return 0
	}
	return n
}

// decide runs the Certificate controller's decision on the snapshot at
// now.
func (g *gathered) decide(now time.Time, cfg certificate.Config) certificate.Result {
	return certificate.Reconcile(g.snap, now, cfg)
}

package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Issuing condition renew sets: cert-manager's own manual trigger, as
// its cmctl renew writes it, which certlife's controller honours as it
// honours any Issuing=True (the trigger and the backoff stand aside).
const (
	ReasonManuallyTriggered  = "ManuallyTriggered"
	MessageManuallyTriggered = "Certificate re-issuance manually triggered"
)

// errAlreadyIssuing: renew refused, an issuance runs already.
var errAlreadyIssuing = errors.New("already issuing")

// renew sets Issuing=True (ManuallyTriggered) on the Certificate, through
// the status subresource and over the version read, so a concurrent
// change of the status is a conflict, not overwritten. A Certificate whose
// Issuing condition is True already is refused (errAlreadyIssuing): its
// issuance runs, and a second trigger would change nothing.
func renew(ctx context.Context, c client.Client, crt *cmapi.Certificate, now time.Time) error {
	if cond := findCondition(crt, cmapi.CertificateConditionIssuing); cond != nil && cond.Status == cmmeta.ConditionTrue {
		since := ""
		if cond.LastTransitionTime != nil {
			since = " since " + stamp(cond.LastTransitionTime.Time, now)
		}
		return fmt.Errorf("certificate %s/%s is already issuing (%s)%s: %w", crt.Namespace, crt.Name, cond.Reason, since, errAlreadyIssuing)
	}
	upd := crt.DeepCopy()
	issuing := cmapi.CertificateCondition{
		Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionTrue,
		Reason: ReasonManuallyTriggered, Message: MessageManuallyTriggered,
		LastTransitionTime: &metav1.Time{Time: now.Truncate(time.Second)}, ObservedGeneration: crt.Generation,
	}
	if i := conditionIndex(upd, cmapi.CertificateConditionIssuing); i >= 0 {
		upd.Status.Conditions[i] = issuing
	} else {
		upd.Status.Conditions = append(upd.Status.Conditions, issuing)
	}
	if err := c.Status().Update(ctx, upd); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("certificate %s/%s changed while it was being renewed; run renew again: %w", crt.Namespace, crt.Name, err)
		}
		return fmt.Errorf("failed to trigger issuance of certificate %s/%s: %w", crt.Namespace, crt.Name, err)
	}
	return nil
}

func conditionIndex(crt *cmapi.Certificate, t cmapi.CertificateConditionType) int {
	for i := range crt.Status.Conditions {
		if crt.Status.Conditions[i].Type == t {
			return i
		}
	}
	return -1
}

// renewOptions are renew's arguments: names in namespace, or --all in
// namespace ("" with allNamespaces), optionally narrowed by a label
// selector.
type renewOptions struct {
	names         []string
	namespace     string
	all           bool
	allNamespaces bool
	selector      string
}

func (o renewOptions) validate() error {
	switch {
	case len(o.names) > 0 && (o.all || o.allNamespaces || o.selector != ""):
		return errors.New("renew: name certificates, or use --all, -A or -l, not both")
	case len(o.names) == 0 && !o.all && o.selector == "":
		return errors.New("renew: name one or more certificates, or use --all (with -A for every namespace) or -l SELECTOR")
	}
	return nil
}

// runRenew renews what o names: each named certificate (refusing one
// that is already issuing), or every certificate --all or the selector
// finds (skipping, and saying so, those already issuing). It reports each
// on out.
func runRenew(ctx context.Context, c client.Client, o renewOptions, now time.Time, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	var crts []cmapi.Certificate
	if len(o.names) > 0 {
		for _, n := range o.names {
			var crt cmapi.Certificate
			if err := c.Get(ctx, types.NamespacedName{Namespace: o.namespace, Name: n}, &crt); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("certificate %s/%s does not exist", o.namespace, n)
				}
				return err
			}
			crts = append(crts, crt)
		}
	} else {
		var list cmapi.CertificateList
		opts := []client.ListOption{}
		if !o.allNamespaces {
			opts = append(opts, client.InNamespace(o.namespace))
		}
		if o.selector != "" {
			sel, err := parseSelector(o.selector)
			if err != nil {
				return err
			}
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		if err := c.List(ctx, &list, opts...); err != nil {
			return err
		}
		crts = list.Items
		if len(crts) == 0 {
			where := "in namespace " + o.namespace
			if o.allNamespaces {
				where = "in any namespace"
			}
			_, err := fmt.Fprintf(out, "No certificates found %s.\n", where)
			return err
		}
	}
	var errs []error
	for i := range crts {
		crt := &crts[i]
		err := renew(ctx, c, crt, now)
		switch {
		case err == nil:
			fmt.Fprintf(out, "Manually triggered issuance of certificate %s/%s\n", crt.Namespace, crt.Name)
		case errors.Is(err, errAlreadyIssuing) && len(o.names) == 0:
			fmt.Fprintf(out, "Skipped %s/%s: %v\n", crt.Namespace, crt.Name, err)
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

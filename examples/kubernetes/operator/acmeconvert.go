package operator

import (
	"encoding/pem"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// The conversions between certlife's ACME order and challenge and the
// Order and Challenge resources, both ways, field for field. Times keep
// microseconds (metav1.MicroTime); the creation time is the one certlife
// gave the order (on the clock its decisions run on), kept in the
// certificate.AnnotationCreatedAt annotation, since the API server's
// metadata.creationTimestamp has only seconds and its own clock.

func microFromCore(t *time.Time) *metav1.MicroTime {
	if t == nil {
		return nil
	}
	m := metav1.NewMicroTime(*t)
	return &m
}

func microToCore(t *metav1.MicroTime) *time.Time {
	if t == nil {
		return nil
	}
	c := t.Time
	return &c
}

// createdAtFromCore records a creation time in meta's annotations.
func createdAtFromCore(meta *metav1.ObjectMeta, t time.Time) {
	if t.IsZero() {
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[certificate.AnnotationCreatedAt] = t.UTC().Format(time.RFC3339Nano)
}

// createdAtToCore is the creation time createdAtFromCore recorded, else
// the API server's.
func createdAtToCore(meta *metav1.ObjectMeta) time.Time {
	if at, ok := meta.Annotations[certificate.AnnotationCreatedAt]; ok {
		if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
			return t
		}
	}
	return meta.CreationTimestamp.Time
}

func solverFromCore(s challenge.Solver) v1alpha1.ChallengeSolver {
	var out v1alpha1.ChallengeSolver
	if s.HTTP01 != nil {
		out.HTTP01 = &v1alpha1.ChallengeHTTP01Solver{Options: s.HTTP01.Options}
	}
	if s.DNS01 != nil {
		out.DNS01 = &v1alpha1.ChallengeDNS01Solver{Provider: s.DNS01.Provider, Config: s.DNS01.Config}
	}
	return out
}

func solverToCore(s v1alpha1.ChallengeSolver) challenge.Solver {
	var out challenge.Solver
	if s.HTTP01 != nil {
		out.HTTP01 = &challenge.HTTP01Solver{Options: s.HTTP01.Options}
	}
	if s.DNS01 != nil {
		out.DNS01 = &challenge.DNS01Solver{Provider: s.DNS01.Provider, Config: s.DNS01.Config}
	}
	return out
}

func acmeIssuerFromCore(i challenge.Issuer) v1alpha1.IssuerReference {
	return v1alpha1.IssuerReference{Name: i.Name, Kind: i.Kind, Group: i.Group}
}

func acmeIssuerToCore(i v1alpha1.IssuerReference) challenge.Issuer {
	return challenge.Issuer{Name: i.Name, Kind: i.Kind, Group: i.Group}
}

// OrderFromCore converts an order into an Order resource: name,
// namespace, labels, creation time, spec and status. Owner references and
// the store's own labels are the caller's.
func OrderFromCore(o *order.Order) *v1alpha1.Order {
	out := &v1alpha1.Order{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: maps.Clone(o.Labels)},
		Spec: v1alpha1.OrderSpec{
			Request:        string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: o.Spec.CSR})),
			IssuerRef:      acmeIssuerFromCore(o.Spec.Issuer),
			Account:        o.Spec.Account,
			CommonName:     o.Spec.CommonName,
			DNSNames:       o.Spec.DNSNames,
			IPAddresses:    o.Spec.IPAddresses,
			Profile:        o.Spec.Profile,
			NotBefore:      microFromCore(o.Spec.NotBefore),
			NotAfter:       microFromCore(o.Spec.NotAfter),
			Replaces:       o.Spec.Replaces,
			PreferredChain: o.Spec.PreferredChain,
		},
		Status: OrderStatusFromCore(o.Status),
	}
	createdAtFromCore(&out.ObjectMeta, o.CreationTimestamp)
	if o.Spec.Solvers != nil {
		out.Spec.Solvers = make([]v1alpha1.OrderSolver, len(o.Spec.Solvers))
	}
	for i, s := range o.Spec.Solvers {
		out.Spec.Solvers[i].Solver = solverFromCore(s.Solver)
		if s.Selector != nil {
			out.Spec.Solvers[i].Selector = &v1alpha1.ACMESolverSelector{DNSNames: s.Selector.DNSNames, DNSZones: s.Selector.DNSZones, MatchLabels: s.Selector.MatchLabels}
		}
	}
	return out
}

// OrderStatusFromCore converts an order's status.
func OrderStatusFromCore(s order.Status) v1alpha1.OrderStatus {
	out := v1alpha1.OrderStatus{
		URL:               s.URL,
		FinalizeURL:       s.FinalizeURL,
		CertificateURL:    s.CertificateURL,
		State:             v1alpha1.OrderState(s.State),
		Reason:            s.Reason,
		Certificate:       s.Certificate,
		FailureTime:       microFromCore(s.FailureTime),
		SyncedAt:          microFromCore(s.SyncedAt),
		ChangedAt:         microFromCore(s.ChangedAt),
		Expires:           microFromCore(s.Expires),
		SpecHash:          s.SpecHash,
		LastError:         s.LastError,
		Transient:         s.Transient,
		LastErrorTime:     microFromCore(s.LastErrorTime),
		FailedAttempts:    s.FailedAttempts,
		RetryAfter:        microFromCore(s.RetryAfter),
		KeyAuthorizations: s.KeyAuthorizations,
		ReplacesRefused:   s.ReplacesRefused,
		ReadFirst:         s.ReadFirst,
		BadCertificate:    s.BadCertificate,
	}
	for _, a := range s.Authorizations {
		oa := v1alpha1.ACMEAuthorization{URL: a.URL, Identifier: a.Identifier, Wildcard: a.Wildcard, InitialState: string(a.InitialState), FetchedAt: microFromCore(a.FetchedAt)}
		for _, c := range a.Challenges {
			oa.Challenges = append(oa.Challenges, v1alpha1.ACMEOfferedChallenge{Type: string(c.Type), URL: c.URL, Token: c.Token})
		}
		out.Authorizations = append(out.Authorizations, oa)
	}
	return out
}

// OrderToCore converts an Order resource back. labels, when set, are
// left out of the order's labels (the store's own).
func OrderToCore(o *v1alpha1.Order, storeLabels ...string) order.Order {
	out := order.Order{
		Name:              o.Name,
		Namespace:         o.Namespace,
		UID:               string(o.UID),
		CreationTimestamp: createdAtToCore(&o.ObjectMeta),
		Labels:            maps.Clone(o.Labels),
		Spec: order.Spec{
			CSR:            csrDER(o.Spec.Request),
			Issuer:         acmeIssuerToCore(o.Spec.IssuerRef),
			Account:        o.Spec.Account,
			CommonName:     o.Spec.CommonName,
			DNSNames:       o.Spec.DNSNames,
			IPAddresses:    o.Spec.IPAddresses,
			Profile:        o.Spec.Profile,
			NotBefore:      microToCore(o.Spec.NotBefore),
			NotAfter:       microToCore(o.Spec.NotAfter),
			Replaces:       o.Spec.Replaces,
			PreferredChain: o.Spec.PreferredChain,
		},
		Status: OrderStatusToCore(o.Status),
	}
	for _, l := range storeLabels {
		delete(out.Labels, l)
	}
	if len(out.Labels) == 0 {
		out.Labels = nil
	}
	if o.Spec.Solvers != nil {
		out.Spec.Solvers = make([]order.SolverConfig, len(o.Spec.Solvers))
	}
	for i, s := range o.Spec.Solvers {
		out.Spec.Solvers[i].Solver = solverToCore(s.Solver)
		if s.Selector != nil {
			out.Spec.Solvers[i].Selector = &order.Selector{DNSNames: s.Selector.DNSNames, DNSZones: s.Selector.DNSZones, MatchLabels: s.Selector.MatchLabels}
		}
	}
	return out
}

// OrderStatusToCore converts an Order's status back.
func OrderStatusToCore(s v1alpha1.OrderStatus) order.Status {
	out := order.Status{
		URL:               s.URL,
		FinalizeURL:       s.FinalizeURL,
		CertificateURL:    s.CertificateURL,
		State:             order.State(s.State),
		Reason:            s.Reason,
		Certificate:       s.Certificate,
		FailureTime:       microToCore(s.FailureTime),
		SyncedAt:          microToCore(s.SyncedAt),
		ChangedAt:         microToCore(s.ChangedAt),
		Expires:           microToCore(s.Expires),
		SpecHash:          s.SpecHash,
		Attempts:          attemptsToCore(s.LastError, s.Transient, s.LastErrorTime, s.FailedAttempts, s.RetryAfter),
		KeyAuthorizations: s.KeyAuthorizations,
		ReplacesRefused:   s.ReplacesRefused,
		ReadFirst:         s.ReadFirst,
		BadCertificate:    s.BadCertificate,
	}
	for _, a := range s.Authorizations {
		ca := order.Authorization{URL: a.URL, Identifier: a.Identifier, Wildcard: a.Wildcard, InitialState: order.State(a.InitialState), FetchedAt: microToCore(a.FetchedAt)}
		for _, c := range a.Challenges {
			ca.Challenges = append(ca.Challenges, order.OfferedChallenge{Type: challenge.Type(c.Type), URL: c.URL, Token: c.Token})
		}
		out.Authorizations = append(out.Authorizations, ca)
	}
	return out
}

// ChallengeFromCore converts a challenge into a Challenge resource.
func ChallengeFromCore(c *challenge.Challenge) *v1alpha1.Challenge {
	out := &v1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace},
		Spec: v1alpha1.ChallengeSpec{
			AuthorizationURL: c.Spec.AuthorizationURL,
			URL:              c.Spec.URL,
			Type:             string(c.Spec.Type),
			DNSName:          c.Spec.DNSName,
			Token:            c.Spec.Token,
			Key:              c.Spec.Key,
			Wildcard:         c.Spec.Wildcard,
			Solver:           solverFromCore(c.Spec.Solver),
			IssuerRef:        acmeIssuerFromCore(c.Spec.Issuer),
			Account:          c.Spec.Account,
			Expires:          microFromCore(c.Spec.Expires),
		},
		Status: ChallengeStatusFromCore(c.Status),
	}
	createdAtFromCore(&out.ObjectMeta, c.CreationTimestamp)
	return out
}

// ChallengeStatusFromCore converts a challenge's status.
func ChallengeStatusFromCore(s challenge.Status) v1alpha1.ChallengeStatus {
	return v1alpha1.ChallengeStatus{
		Processing:      s.Processing,
		Presented:       s.Presented,
		PresentedAt:     microFromCore(s.PresentedAt),
		State:           string(s.State),
		Reason:          s.Reason,
		SyncedAt:        microFromCore(s.SyncedAt),
		ChangedAt:       microFromCore(s.ChangedAt),
		SelfCheckAt:     microFromCore(s.SelfCheckAt),
		SelfCheckPassed: s.SelfCheckPassed,
		Accepted:        s.Accepted,
		LastError:       s.LastError,
		Transient:       s.Transient,
		RetryAfter:      microFromCore(s.RetryAfter),
		LastErrorTime:   microFromCore(s.LastErrorTime),
		FailedAttempts:  s.FailedAttempts,
		NextAttemptAt:   microFromCore(s.NextAttemptAt),
	}
}

// ChallengeToCore converts a Challenge resource back.
func ChallengeToCore(c *v1alpha1.Challenge) challenge.Challenge {
	return challenge.Challenge{
		Name:              c.Name,
		Namespace:         c.Namespace,
		UID:               string(c.UID),
		CreationTimestamp: createdAtToCore(&c.ObjectMeta),
		Spec: challenge.Spec{
			AuthorizationURL: c.Spec.AuthorizationURL,
			URL:              c.Spec.URL,
			Type:             challenge.Type(c.Spec.Type),
			DNSName:          c.Spec.DNSName,
			Token:            c.Spec.Token,
			Key:              c.Spec.Key,
			Wildcard:         c.Spec.Wildcard,
			Solver:           solverToCore(c.Spec.Solver),
			Issuer:           acmeIssuerToCore(c.Spec.IssuerRef),
			Account:          c.Spec.Account,
			Expires:          microToCore(c.Spec.Expires),
		},
		Status: ChallengeStatusToCore(c.Status),
	}
}

// ChallengeStatusToCore converts a Challenge's status back.
func ChallengeStatusToCore(s v1alpha1.ChallengeStatus) challenge.Status {
	return challenge.Status{
		Processing:      s.Processing,
		Presented:       s.Presented,
		PresentedAt:     microToCore(s.PresentedAt),
		State:           challenge.State(s.State),
		Reason:          s.Reason,
		SyncedAt:        microToCore(s.SyncedAt),
		ChangedAt:       microToCore(s.ChangedAt),
		SelfCheckAt:     microToCore(s.SelfCheckAt),
		SelfCheckPassed: s.SelfCheckPassed,
		Accepted:        s.Accepted,
		Attempts:        attemptsToCore(s.LastError, s.Transient, s.LastErrorTime, s.FailedAttempts, s.RetryAfter),
		NextAttemptAt:   microToCore(s.NextAttemptAt),
	}
}

// attemptsToCore converts the failed-call record both statuses share.
func attemptsToCore(lastError string, transient bool, lastErrorTime *metav1.MicroTime, failedAttempts int, retryAfter *metav1.MicroTime) retry.Attempts {
	return retry.Attempts{LastError: lastError, Transient: transient, LastErrorTime: microToCore(lastErrorTime),
		FailedAttempts: failedAttempts, RetryAfter: microToCore(retryAfter)}
}

// csrDER is the DER of a PEM certificate signing request; nil when it is
// not one (the order then fails as it would with a bad CSR).
func csrDER(s string) []byte {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return nil
	}
	return b.Bytes
}

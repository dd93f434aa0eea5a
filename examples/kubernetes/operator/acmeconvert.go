package operator

import (
	"encoding/json"
	"encoding/pem"
	"maps"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// The conversions between certlife's ACME order and challenge and
// cert-manager's acme.cert-manager.io/v1 Order and Challenge. certlife's
// order or challenge travels whole — spec and status, times to the
// nanosecond, the creation time certlife gave it — as JSON in the
// AnnotationACMEState annotation, which is what the operator reads back;
// cert-manager's fields (spec.request, dnsNames, status.url, state,
// reason, authorizations, certificate; a Challenge's type, token, key,
// presented, processing, state) are filled from it, so that `kubectl get
// orders,challenges` reads as it does with the reference operator.

// AnnotationACMEState on an Order or a Challenge: certlife's order or
// challenge, spec and status, as JSON.
const AnnotationACMEState = "certlife.dev/acme-state"

// orderState is what AnnotationACMEState holds on an Order.
type orderState struct {
	CreationTimestamp time.Time             `json:"creationTimestamp"`
	Spec              order.Spec            `json:"spec"`
	Status            order.Status          `json:"status"`
	AnsweredAt        *time.Time            `json:"answeredAt,omitempty"`
	Request           acmeclient.RequestRef `json:"request,omitzero"`
	SteppedAt         *time.Time            `json:"steppedAt,omitempty"`
	OrderRequestedAt  *time.Time            `json:"orderRequestedAt,omitempty"`
}

// challengeState is what AnnotationACMEState holds on a Challenge.
type challengeState struct {
	CreationTimestamp time.Time        `json:"creationTimestamp"`
	Spec              challenge.Spec   `json:"spec"`
	Status            challenge.Status `json:"status"`
}

// OrderFromCore converts the order of an ACME issuer's state (its
// challenges aside) into an Order: name, namespace, labels, the state in
// AnnotationACMEState, and cert-manager's spec and status filled from it.
// Owner references and the store's own labels are the caller's.
func OrderFromCore(st *acmeclient.State) *cmacme.Order {
	o := &st.Order
	b, _ := json.Marshal(orderState{CreationTimestamp: o.CreationTimestamp, Spec: o.Spec, Status: o.Status, AnsweredAt: st.AnsweredAt, Request: st.Request,
		SteppedAt: st.SteppedAt, OrderRequestedAt: st.OrderRequestedAt})
	out := &cmacme.Order{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: maps.Clone(o.Labels),
			Annotations: map[string]string{AnnotationACMEState: string(b)}},
		Spec: cmacme.OrderSpec{
			IssuerRef:   issuerRefFromCore(acmeIssuerToRef(o.Spec.Issuer)),
			CommonName:  o.Spec.CommonName,
			DNSNames:    o.Spec.DNSNames,
			IPAddresses: o.Spec.IPAddresses,
			Profile:     o.Spec.Profile,
			Replaces:    o.Spec.Replaces,
		},
		Status: cmacme.OrderStatus{
			URL:         o.Status.URL,
			FinalizeURL: o.Status.FinalizeURL,
			Certificate: o.Status.Certificate,
			State:       cmacme.State(o.Status.State),
			Reason:      o.Status.Reason,
			FailureTime: timeFromCore(o.Status.FailureTime),
		},
	}
	if len(o.Spec.CSR) > 0 {
		out.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: o.Spec.CSR})
	}
	if nb, na := o.Spec.NotBefore, o.Spec.NotAfter; nb != nil && na != nil {
		out.Spec.Duration = &metav1.Duration{Duration: na.Sub(*nb)}
	}
	for _, a := range o.Status.Authorizations {
		ca := cmacme.ACMEAuthorization{URL: a.URL, Identifier: a.Identifier, InitialState: cmacme.State(a.InitialState)}
		if a.Wildcard {
			ca.Wildcard = new(true)
		}
		for _, c := range a.Challenges {
			ca.Challenges = append(ca.Challenges, cmacme.ACMEChallenge{URL: c.URL, Token: c.Token, Type: string(c.Type)})
		}
		out.Status.Authorizations = append(out.Status.Authorizations, ca)
	}
	return out
}

// OrderToCore reads an ACME issuer's state (its challenges aside) back
// from an Order: from AnnotationACMEState, or — for an Order without it,
// such as the reference operator's — as well as cert-manager's fields
// say. storeLabels are left out of the order's labels (the store's own).
func OrderToCore(o *cmacme.Order, storeLabels ...string) acmeclient.State {
	st := acmeclient.State{Order: order.Order{Name: o.Name, Namespace: o.Namespace, UID: string(o.UID), Labels: maps.Clone(o.Labels)}}
	for _, l := range storeLabels {
		delete(st.Order.Labels, l)
	}
	if len(st.Order.Labels) == 0 {
		st.Order.Labels = nil
	}
	var saved orderState
	if raw, ok := o.Annotations[AnnotationACMEState]; ok && json.Unmarshal([]byte(raw), &saved) == nil {
		st.Order.CreationTimestamp, st.Order.Spec, st.Order.Status = saved.CreationTimestamp, saved.Spec, saved.Status
		st.AnsweredAt, st.Request = saved.AnsweredAt, saved.Request
		st.SteppedAt, st.OrderRequestedAt = saved.SteppedAt, saved.OrderRequestedAt
		return st
	}
	st.Order.CreationTimestamp = o.CreationTimestamp.Time
	st.Order.Spec = order.Spec{CSR: csrDER(o.Spec.Request), Issuer: acmeIssuerFromRef(issuerRefToCore(o.Spec.IssuerRef)),
		CommonName: o.Spec.CommonName, DNSNames: o.Spec.DNSNames, IPAddresses: o.Spec.IPAddresses, Profile: o.Spec.Profile, Replaces: o.Spec.Replaces}
	st.Order.Status = order.Status{URL: o.Status.URL, FinalizeURL: o.Status.FinalizeURL, Certificate: o.Status.Certificate,
		State: order.State(o.Status.State), Reason: o.Status.Reason, FailureTime: timeToCore(o.Status.FailureTime)}
	for _, a := range o.Status.Authorizations {
		ca := order.Authorization{URL: a.URL, Identifier: a.Identifier, Wildcard: a.Wildcard != nil && *a.Wildcard, InitialState: order.State(a.InitialState)}
		for _, c := range a.Challenges {
			ca.Challenges = append(ca.Challenges, order.OfferedChallenge{Type: challenge.Type(c.Type), URL: c.URL, Token: c.Token})
		}
		st.Order.Status.Authorizations = append(st.Order.Status.Authorizations, ca)
	}
	return st
}

// challengeTypes maps certlife's challenge types to cert-manager's.
var challengeTypes = map[challenge.Type]cmacme.ACMEChallengeType{
	challenge.TypeHTTP01: cmacme.ACMEChallengeTypeHTTP01,
	challenge.TypeDNS01:  cmacme.ACMEChallengeTypeDNS01,
}

// ChallengeFromCore converts a challenge into a Challenge: the challenge
// in AnnotationACMEState, and cert-manager's spec and status filled from
// it (the states certlife has that cert-manager's schema does not,
// deactivated and revoked, show as invalid; a status without a reason
// shows the last failed call's error as its reason, as cert-manager's
// does).
func ChallengeFromCore(c *challenge.Challenge) *cmacme.Challenge {
	b, _ := json.Marshal(challengeState{CreationTimestamp: c.CreationTimestamp, Spec: c.Spec, Status: c.Status})
	out := &cmacme.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Annotations: map[string]string{AnnotationACMEState: string(b)}},
		Spec: cmacme.ChallengeSpec{
			URL:              c.Spec.URL,
			AuthorizationURL: c.Spec.AuthorizationURL,
			DNSName:          c.Spec.DNSName,
			Wildcard:         c.Spec.Wildcard,
			Type:             challengeTypes[c.Spec.Type],
			Token:            c.Spec.Token,
			Key:              c.Spec.Key,
			Solver:           solverFromCore(c.Spec.Solver),
			IssuerRef:        issuerRefFromCore(acmeIssuerToRef(c.Spec.Issuer)),
		},
		Status: cmacme.ChallengeStatus{
			Processing:  c.Status.Processing,
			Presented:   c.Status.Presented,
			PresentedAt: timeFromCore(c.Status.PresentedAt),
			Reason:      c.Status.Reason,
			State:       cmacme.State(c.Status.State),
		},
	}
	if out.Status.Reason == "" {
		// As cert-manager does, status.reason says why the last call
		// (presenting, cleaning up) failed, until one succeeds.
		out.Status.Reason = c.Status.LastError
	}
	if s := c.Status.State; s == challenge.StateDeactivated || s == challenge.StateRevoked {
		out.Status.State = cmacme.Invalid
	}
	return out
}

// ChallengeToCore reads a challenge back from a Challenge: from
// AnnotationACMEState, or — for a Challenge without it, such as the
// reference operator's — as well as cert-manager's fields say.
func ChallengeToCore(c *cmacme.Challenge) challenge.Challenge {
	out := challenge.Challenge{Name: c.Name, Namespace: c.Namespace, UID: string(c.UID)}
	var saved challengeState
	if raw, ok := c.Annotations[AnnotationACMEState]; ok && json.Unmarshal([]byte(raw), &saved) == nil {
		out.CreationTimestamp, out.Spec, out.Status = saved.CreationTimestamp, saved.Spec, saved.Status
		return out
	}
	out.CreationTimestamp = c.CreationTimestamp.Time
	typ := challenge.Type("")
	for t, theirs := range challengeTypes {
		if theirs == c.Spec.Type {
			typ = t
		}
	}
	out.Spec = challenge.Spec{AuthorizationURL: c.Spec.AuthorizationURL, URL: c.Spec.URL, Type: typ, DNSName: c.Spec.DNSName,
		Token: c.Spec.Token, Key: c.Spec.Key, Wildcard: c.Spec.Wildcard, Solver: solverToCore(c.Spec.Solver),
		Issuer: acmeIssuerFromRef(issuerRefToCore(c.Spec.IssuerRef))}
	out.Status = challenge.Status{Processing: c.Status.Processing, Presented: c.Status.Presented, PresentedAt: timeToCore(c.Status.PresentedAt),
		Reason: c.Status.Reason, State: challenge.State(c.Status.State)}
	return out
}

// solverFromCore shows certlife's solver as cert-manager's: HTTP-01, or
// DNS-01 over RFC 2136, Cloudflare, Route 53 or a webhook solver, with its settings.
func solverFromCore(s challenge.Solver) cmacme.ACMEChallengeSolver {
	var out cmacme.ACMEChallengeSolver
	if s.HTTP01 != nil {
		out.HTTP01 = http01SolverFromCore(s.HTTP01)
	}
	if d := s.DNS01; d != nil {
		out.DNS01 = &cmacme.ACMEChallengeSolverDNS01{}
		if d.Provider == "rfc2136" {
			out.DNS01.RFC2136 = rfc2136FromConfig(d.Config)
		}
		if d.Provider == webhookProvider {
			out.DNS01.Webhook = webhookFromConfig(d.Config)
		}
		libdnsFromConfig(d, out.DNS01) // cloudflare, route53 (dns01providers.go)
	}
	return out
}

// solverToCore reads cert-manager's solver as certlife's.
func solverToCore(s cmacme.ACMEChallengeSolver) challenge.Solver {
	var out challenge.Solver
	if s.HTTP01 != nil {
		out.HTTP01 = http01SolverToCore(s.HTTP01)
	}
	if d := s.DNS01; d != nil {
		out.DNS01 = &challenge.DNS01Solver{}
		if d.RFC2136 != nil {
			out.DNS01 = dns01Config(d.RFC2136)
		}
		if d.Webhook != nil {
			out.DNS01 = webhookDNS01Config(d.Webhook)
		}
		if c := libdnsConfig(d); c != nil { // cloudflare, route53 (dns01providers.go)
			out.DNS01 = c
		}
	}
	return out
}

// The HTTP-01 solver options that carry an issuer's http01.ingress and
// http01.gatewayHTTPRoute settings, as JSON, from the issuer to each
// Challenge, where the router reads them: a Challenge keeps the settings
// it was presented with, so it is cleaned up as it was routed even when
// the issuer changes meanwhile (as cert-manager's Challenge.spec.solver
// does).
const (
	solverOptionIngress          = "ingress"
	solverOptionGatewayHTTPRoute = "gatewayHTTPRoute"
)

// http01SolverToCore keeps an issuer's HTTP-01 routing settings in the
// solver's options.
func http01SolverToCore(h *cmacme.ACMEChallengeSolverHTTP01) *challenge.HTTP01Solver {
	out := &challenge.HTTP01Solver{}
	set := func(k string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		if out.Options == nil {
			out.Options = map[string]string{}
		}
		out.Options[k] = string(b)
	}
	if h.Ingress != nil {
		set(solverOptionIngress, h.Ingress)
	}
	if h.GatewayHTTPRoute != nil {
		set(solverOptionGatewayHTTPRoute, h.GatewayHTTPRoute)
	}
	return out
}

// http01SolverFromCore is the inverse of http01SolverToCore; options it
// cannot read are left out.
func http01SolverFromCore(h *challenge.HTTP01Solver) *cmacme.ACMEChallengeSolverHTTP01 {
	out := &cmacme.ACMEChallengeSolverHTTP01{}
	if raw, ok := h.Options[solverOptionIngress]; ok {
		var in cmacme.ACMEChallengeSolverHTTP01Ingress
		if json.Unmarshal([]byte(raw), &in) == nil {
			out.Ingress = &in
		}
	}
	if raw, ok := h.Options[solverOptionGatewayHTTPRoute]; ok {
		var g cmacme.ACMEChallengeSolverHTTP01GatewayHTTPRoute
		if json.Unmarshal([]byte(raw), &g) == nil {
			out.GatewayHTTPRoute = &g
		}
	}
	return out
}

func acmeIssuerToRef(i challenge.Issuer) certificate.IssuerRef {
	return certificate.IssuerRef{Name: i.Name, Kind: i.Kind, Group: i.Group}
}

func acmeIssuerFromRef(r certificate.IssuerRef) challenge.Issuer {
	return challenge.Issuer{Name: r.Name, Kind: r.Kind, Group: r.Group}
}

// csrDER is the DER of a PEM certificate signing request; nil when it is
// not one (the order then fails as it would with a bad CSR).
func csrDER(b []byte) []byte {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil
	}
	return blk.Bytes
}

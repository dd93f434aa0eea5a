package operator_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// tµ is a time with microseconds, which the Order and Challenge resources
// keep (metav1.MicroTime).
var tµ = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

func at(d time.Duration) *time.Time { t := tµ.Add(d); return &t }

func fullOrder() *order.Order {
	return &order.Order{
		Name: "web-1-abc", Namespace: "apps", CreationTimestamp: tµ,
		Labels: map[string]string{"team": "a"},
		Spec: order.Spec{
			CSR: []byte("csr"), Issuer: challenge.Issuer{Name: "le", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			Account: "https://ca/acct/1", CommonName: "web.example", DNSNames: []string{"web.example", "*.web.example"},
			IPAddresses: []string{"192.0.2.1"},
			Solvers: []order.SolverConfig{{
				Selector: &order.Selector{DNSNames: []string{"web.example"}, DNSZones: []string{"example"}, MatchLabels: map[string]string{"team": "a"}},
				Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{Options: map[string]string{"ingress": "x"}}, DNS01: &challenge.DNS01Solver{Provider: "rfc2136", Config: map[string]string{"ns": "1"}},
					TLSALPN01: &challenge.TLSALPN01Solver{Options: map[string]string{"port": "443"}}},
			}},
			Profile: "shortlived", NotBefore: at(0), NotAfter: at(time.Hour), Replaces: "aki.serial", PreferredChain: "Root X2",
		},
		Status: order.Status{
			URL: "https://ca/order/1", FinalizeURL: "https://ca/finalize/1", CertificateURL: "https://ca/cert/1",
			State: order.StateValid, Reason: "valid",
			Authorizations: []order.Authorization{{URL: "https://ca/authz/1", Identifier: "web.example", Wildcard: true,
				InitialState: order.StatePending, FetchedAt: at(time.Second),
				Challenges: []order.OfferedChallenge{{Type: challenge.TypeHTTP01, URL: "https://ca/chall/1", Token: "tok"}}}},
			Certificate: []byte("pem"), FailureTime: at(2 * time.Second), SyncedAt: at(3 * time.Second), ChangedAt: at(4 * time.Second),
			Expires: at(5 * time.Second), SpecHash: "h",
			Attempts:          retry.Attempts{LastError: "e", Transient: true, LastErrorTime: at(6 * time.Second), FailedAttempts: 2, RetryAfter: at(7 * time.Second)},
			KeyAuthorizations: map[string]string{"tok": "tok.thumb"},
			ReplacesRefused:   "at least one identifier must match", ReadFirst: true, BadCertificate: "another public key",
		},
	}
}

func fullChallenge() *challenge.Challenge {
	return &challenge.Challenge{
		Name: "web-1-abc-0", Namespace: "apps", CreationTimestamp: tµ,
		Spec: challenge.Spec{AuthorizationURL: "https://ca/authz/1", URL: "https://ca/chall/1", Type: challenge.TypeDNS01,
			DNSName: "web.example", Token: "tok", Key: "tok.thumb", Wildcard: true,
			Solver: challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "rfc2136", Config: map[string]string{"nameserver": "ns1:53", "tsigKeyName": "k.",
				"tsigAlgorithm": "HMACSHA256", "tsigSecretName": "tsig", "tsigSecretKey": "secret"}}, HTTP01: &challenge.HTTP01Solver{Options: map[string]string{"o": "1"}},
				TLSALPN01: &challenge.TLSALPN01Solver{Options: map[string]string{"o": "2"}}},
			Issuer: challenge.Issuer{Name: "le", Kind: "Issuer", Group: "cert-manager.io"}, Account: "https://ca/acct/1", Expires: at(8 * time.Second)},
		Status: challenge.Status{Processing: true, Presented: true, PresentedAt: at(time.Second), State: challenge.StateValid,
			Reason: "r", SyncedAt: at(2 * time.Second), ChangedAt: at(3 * time.Second), SelfCheckAt: at(4 * time.Second),
			SelfCheckPassed: true, Accepted: true, NextAttemptAt: at(7 * time.Second),
			Attempts: retry.Attempts{LastError: "e", Transient: true, RetryAfter: at(5 * time.Second), LastErrorTime: at(6 * time.Second), FailedAttempts: 3}},
	}
}

// viaJSON sends a resource through JSON, as the API server stores it.
func viaJSON[T any](t *testing.T, in *T) *T {
	t.Helper()
	b, err := json.Marshal(in)
	require.NoError(t, err)
	out := new(T)
	require.NoError(t, json.Unmarshal(b, out))
	return out
}

// An order and a challenge travel to the API server and back unchanged,
// every field of them (the fixtures set every field: a field added to
// certlife's types and not carried fails here), times to the nanosecond,
// the creation time certlife gave them rather than the API server's — in
// the annotation the operator reads back.
func TestACMERoundTripThroughTheAPITypes(t *testing.T) {
	st := &acmeclient.State{Order: *fullOrder(), AnsweredAt: at(9 * time.Second), Request: acmeclient.RequestRef{Namespace: "apps", Name: "web-1", UID: "uid-r"},
		SteppedAt: at(10 * time.Second), OrderRequestedAt: at(11 * time.Second)}
	st.Order.UID = "uid-o"
	withoutChallenges := *st
	c0 := *fullChallenge()
	c0.UID = "uid-c"
	withoutChallenges.Challenges = []challenge.Challenge{c0} // only to check every other field is set
	require.True(t, allFieldsSet(reflect.ValueOf(withoutChallenges)),
		"the fixture sets every field of the order and the state (its challenges are Challenges of their own)")
	obj := viaJSON(t, operator.OrderFromCore(st))
	obj.UID = "uid-o"
	obj.Labels["operator.certlife.dev/acme-issuer"] = "x"
	got := operator.OrderToCore(obj, "operator.certlife.dev/acme-issuer")
	assert.Empty(t, cmp.Diff(*st, got), "(-in +round trip)")
	assert.Equal(t, "x", obj.Labels["operator.certlife.dev/acme-issuer"], "the caller's object keeps its labels")

	c := fullChallenge()
	c.UID = "uid-c"
	require.True(t, allFieldsSet(reflect.ValueOf(*c)), "the challenge fixture sets every field")
	cobj := viaJSON(t, operator.ChallengeFromCore(c))
	cobj.UID = "uid-c"
	assert.Empty(t, cmp.Diff(*c, operator.ChallengeToCore(cobj)), "(-in +round trip)")
}

// cert-manager's fields of an Order and a Challenge show what certlife's
// order and challenge hold, as the reference operator fills them, so that
// `kubectl get orders,challenges` reads as users expect.
func TestACMEResourcesShowCertManagersFields(t *testing.T) {
	o := operator.OrderFromCore(&acmeclient.State{Order: *fullOrder()})
	assert.Equal(t, "-----BEGIN CERTIFICATE REQUEST-----\nY3Ny\n-----END CERTIFICATE REQUEST-----\n", string(o.Spec.Request))
	assert.Equal(t, cmmeta.IssuerReference{Name: "le", Kind: "ClusterIssuer", Group: "cert-manager.io"}, o.Spec.IssuerRef)
	assert.Equal(t, []string{"web.example", "*.web.example"}, o.Spec.DNSNames)
	assert.Equal(t, []string{"192.0.2.1"}, o.Spec.IPAddresses)
	assert.Equal(t, "web.example", o.Spec.CommonName)
	assert.Equal(t, "shortlived", o.Spec.Profile)
	assert.Equal(t, "aki.serial", o.Spec.Replaces)
	assert.Equal(t, &metav1.Duration{Duration: time.Hour}, o.Spec.Duration)
	assert.Equal(t, cmacme.OrderStatus{URL: "https://ca/order/1", FinalizeURL: "https://ca/finalize/1", Certificate: []byte("pem"),
		State: cmacme.Valid, Reason: "valid", FailureTime: &metav1.Time{Time: tµ.Add(2 * time.Second).Truncate(time.Second)},
		Authorizations: []cmacme.ACMEAuthorization{{URL: "https://ca/authz/1", Identifier: "web.example", Wildcard: new(true), InitialState: cmacme.Pending,
			Challenges: []cmacme.ACMEChallenge{{URL: "https://ca/chall/1", Token: "tok", Type: "http-01"}}}}}, o.Status)

	c := fullChallenge()
	obj := operator.ChallengeFromCore(c)
	assert.Equal(t, cmacme.ACMEChallengeTypeDNS01, obj.Spec.Type)
	assert.Equal(t, "web.example", obj.Spec.DNSName)
	assert.True(t, obj.Spec.Wildcard)
	assert.Equal(t, "tok", obj.Spec.Token)
	assert.Equal(t, "tok.thumb", obj.Spec.Key)
	assert.Equal(t, cmmeta.IssuerReference{Name: "le", Kind: "Issuer", Group: "cert-manager.io"}, obj.Spec.IssuerRef)
	require.NotNil(t, obj.Spec.Solver.DNS01)
	assert.Equal(t, &cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "ns1:53", TSIGKeyName: "k.", TSIGAlgorithm: "HMACSHA256",
		TSIGSecret: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: "tsig"}, Key: "secret"}}, obj.Spec.Solver.DNS01.RFC2136)
	assert.Equal(t, cmacme.ChallengeStatus{Processing: true, Presented: true, PresentedAt: &metav1.Time{Time: tµ.Add(time.Second).Truncate(time.Second)},
		Reason: "r", State: cmacme.Valid}, obj.Status)
	c.Status.State = challenge.StateDeactivated
	assert.Equal(t, cmacme.Invalid, operator.ChallengeFromCore(c).Status.State, "a state cert-manager's schema lacks")
}

// An Order or a Challenge without the operator's annotation — the
// reference operator's — reads as well as cert-manager's fields say.
func TestACMEResourcesWithoutTheAnnotation(t *testing.T) {
	st := &acmeclient.State{Order: *fullOrder()}
	o := operator.OrderFromCore(st)
	delete(o.Annotations, operator.AnnotationACMEState)
	o.CreationTimestamp = metav1.NewTime(t0)
	got := operator.OrderToCore(o)
	assert.Equal(t, []byte("csr"), got.Order.Spec.CSR)
	assert.Equal(t, order.StateValid, got.Order.Status.State)
	assert.Equal(t, "https://ca/order/1", got.Order.Status.URL)
	assert.Equal(t, []string{"web.example", "*.web.example"}, got.Order.Spec.DNSNames)
	assert.Equal(t, challenge.TypeHTTP01, got.Order.Status.Authorizations[0].Challenges[0].Type)

	c := operator.ChallengeFromCore(fullChallenge())
	delete(c.Annotations, operator.AnnotationACMEState)
	gc := operator.ChallengeToCore(c)
	assert.Equal(t, challenge.TypeDNS01, gc.Spec.Type)
	assert.Equal(t, "tok.thumb", gc.Spec.Key)
	assert.True(t, gc.Status.Presented)
	require.NotNil(t, gc.Spec.Solver.DNS01)
	assert.Equal(t, "rfc2136", gc.Spec.Solver.DNS01.Provider)
}

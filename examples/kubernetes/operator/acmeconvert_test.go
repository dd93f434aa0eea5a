package operator_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			CSR: []byte("csr"), Issuer: challenge.Issuer{Name: "le", Kind: "ClusterIssuer", Group: "certlife.dev"},
			Account: "https://ca/acct/1", CommonName: "web.example", DNSNames: []string{"web.example", "*.web.example"},
			IPAddresses: []string{"192.0.2.1"},
			Solvers: []order.SolverConfig{{
				Selector: &order.Selector{DNSNames: []string{"web.example"}, DNSZones: []string{"example"}, MatchLabels: map[string]string{"team": "a"}},
				Solver:   challenge.Solver{HTTP01: &challenge.HTTP01Solver{Options: map[string]string{"ingress": "x"}}, DNS01: &challenge.DNS01Solver{Provider: "rfc2136", Config: map[string]string{"ns": "1"}}},
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
			Solver: challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "rfc2136", Config: map[string]string{"ns": "1"}}, HTTP01: &challenge.HTTP01Solver{Options: map[string]string{"o": "1"}}},
			Issuer: challenge.Issuer{Name: "le", Kind: "Issuer", Group: "certlife.dev"}, Account: "https://ca/acct/1", Expires: at(8 * time.Second)},
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
// certlife's types and not carried fails here), times to the microsecond,
// the creation time certlife gave them rather than the API server's.
func TestACMERoundTripThroughTheAPITypes(t *testing.T) {
	o := fullOrder()
	o.UID = "uid-o"
	require.True(t, allFieldsSet(reflect.ValueOf(*o)), "the order fixture sets every field")
	obj := viaJSON(t, operator.OrderFromCore(o))
	obj.UID = "uid-o"
	obj.Labels["operator.certlife.dev/acme-issuer"] = "x"
	got := operator.OrderToCore(obj, "operator.certlife.dev/acme-issuer")
	assert.Empty(t, cmp.Diff(*o, got), "(-in +round trip)")
	assert.Equal(t, "x", obj.Labels["operator.certlife.dev/acme-issuer"], "the caller's object keeps its labels")

	c := fullChallenge()
	c.UID = "uid-c"
	require.True(t, allFieldsSet(reflect.ValueOf(*c)), "the challenge fixture sets every field")
	cobj := viaJSON(t, operator.ChallengeFromCore(c))
	cobj.UID = "uid-c"
	assert.Empty(t, cmp.Diff(*c, operator.ChallengeToCore(cobj)), "(-in +round trip)")

}

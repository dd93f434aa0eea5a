package certificate

import (
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testHost is a minimal host for lifecycle tests: maps for storage, a CA
// that signs pending requests (or misbehaves), and the loop of the doc:
// gather, Reconcile, carry out in order, requeue.
type testHost struct {
	t        *testing.T
	f        *fixture
	cert     *Certificate   // the first of certs
	certs    []*Certificate // every certificate the host reconciles
	secrets  map[string]*Secret
	requests map[string]*CertificateRequest
	now      time.Time
	cfg      Config

	// issuer behaviour for the next requests it sees
	fail     bool // fail the request
	wrongKey bool // certify another key
	creates  int  // CreateRequest actions carried out
	// noCreationTime: the host leaves requests' creation time unset.
	noCreationTime bool
	// serverSkew: the API server's clock, which sets creation times, is
	// this far ahead of the host's (behind when negative).
	serverSkew time.Duration
	trace      []string
}

func newTestHost(t *testing.T) *testHost {
	f := newFixture(t)
	c := testCertificate()
	return &testHost{t: t, f: f, cert: c, certs: []*Certificate{c}, secrets: map[string]*Secret{}, requests: map[string]*CertificateRequest{}, now: t0}
}

func (h *testHost) snapshot() *Snapshot { return h.snapshotOf(h.cert) }

// snapshotOf gathers one certificate's snapshot, sorted for determinism.
func (h *testHost) snapshotOf(c *Certificate) *Snapshot {
	s := &Snapshot{Certificate: c, Secret: h.secrets[c.Spec.SecretName]}
	for _, name := range sortedKeys(h.secrets) {
		sec := h.secrets[name]
		if sec.Labels[LabelNextPrivateKey] == "true" && sec.OwnerUID == c.UID {
			s.NextPrivateKeySecrets = append(s.NextPrivateKeySecrets, sec)
		}
	}
	for _, name := range sortedKeys(h.requests) {
		if r := h.requests[name]; r.OwnerUID == c.UID {
			s.Requests = append(s.Requests, r)
		}
	}
	for _, o := range h.certs {
		if o != c && o.Spec.SecretName == c.Spec.SecretName {
			s.OtherOwners = append(s.OtherOwners, o)
		}
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (h *testHost) apply(c *Certificate, a Action) {
	switch a := a.(type) {
	case UpdateStatus:
		c.Status = a.Status
	case GenerateKey:
		if _, ok := h.secrets[a.SecretName]; ok {
			return // AlreadyExists: success
		}
		var pemKey []byte
		if a.ReuseFrom != "" {
			pemKey = h.secrets[a.ReuseFrom].Data[keys.SecretPrivateKey]
		} else {
			k, err := keys.Generate(rand.Reader, a.Spec)
			require.NoError(h.t, err)
			pemKey, _ = keys.EncodePrivateKey(k, keys.EncodingPKCS8)
		}
		h.secrets[a.SecretName] = &Secret{ObjectMeta: ObjectMeta{Name: a.SecretName, OwnerUID: a.OwnerUID, Labels: map[string]string{LabelNextPrivateKey: "true"}},
			Data: map[string][]byte{keys.SecretPrivateKey: pemKey}}
	case DeleteSecret:
		delete(h.secrets, a.Name)
	case CreateRequest:
		if _, ok := h.requests[a.Request.Name]; ok {
			return
		}
		key, err := keys.DecodePrivateKey(h.secrets[a.KeySecretName].Data[keys.SecretPrivateKey])
		require.NoError(h.t, err)
		r := a.Request
		r.Spec.Request, err = keys.BuildCSR(rand.Reader, a.Template, key)
		require.NoError(h.t, err)
		if !h.noCreationTime {
			r.CreationTimestamp = h.now.Add(h.serverSkew) // as the API server does, on its clock
		}
		h.requests[r.Name] = &r
		h.creates++
	case DeleteRequest:
		delete(h.requests, a.Name)
	case WriteSecret:
		key, err := keys.DecodePrivateKey(h.secrets[a.KeySecretName].Data[keys.SecretPrivateKey])
		require.NoError(h.t, err)
		data, err := keys.SecretData(rand.Reader, key, a.Chain, a.CA, a.Output)
		require.NoError(h.t, err, "WriteSecret")
		h.secrets[a.Name] = &Secret{ObjectMeta: ObjectMeta{Name: a.Name, Labels: a.Labels, Annotations: a.Annotations}, Data: data}
	default:
		h.t.Fatalf("unknown action %T", a)
	}
}

// sign lets the CA answer every pending request.
func (h *testHost) sign() {
	for _, name := range sortedKeys(h.requests) {
		r := h.requests[name]
		if len(r.Status.Conditions) > 0 {
			continue
		}
		if h.fail {
			ft := h.now
			r.Status.FailureTime = &ft
			r.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "the CA is down"}}
			continue
		}
		csr, err := keys.ParseCSR(r.Spec.Request)
		require.NoError(h.t, err)
		pub := csr.PublicKey
		if h.wrongKey {
			pub = h.f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}).Public()
		}
		r.Status.Certificate = h.f.sign(pub, keys.RequestTemplate{CommonName: csr.Subject.CommonName, DNSNames: csr.DNSNames}, h.now, h.now.Add(90*24*time.Hour))
		r.Status.CA = h.f.caPEM
		r.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}
	}
}

// settle runs passes at the current time until a pass has no effects, and
// returns the last result.
func (h *testHost) settle() Result {
	h.t.Helper()
	for i := 0; i < 20; i++ {
		var first Result
		quiet := true
		for ci, c := range h.certs {
			res := Reconcile(h.snapshotOf(c), h.now, h.cfg)
			var names []string
			for _, a := range res.Actions {
				names = append(names, strings.SplitN(a.String(), "{", 2)[0])
				h.apply(c, a)
			}
			h.trace = append(h.trace, fmt.Sprintf("%s %s %s %v", h.now.Format(time.RFC3339), c.Name, res.Reason, names))
			if ci == 0 {
				first = res
			}
			quiet = quiet && len(res.Actions) == 0
		}
		h.sign()
		if quiet {
			return first
		}
	}
	h.t.Fatalf("no steady state after 20 passes:\n%s", strings.Join(h.trace, "\n"))
	return Result{}
}

func (h *testHost) leaf() *x509.Certificate {
	p, err := keys.ParseSecretData(h.secrets[h.cert.Spec.SecretName].Data)
	require.NoError(h.t, err, "the secret is not a matching key pair")
	require.True(h.t, p.KeyMatches, "the secret is not a matching key pair")
	return p.Leaf
}

func TestLifecycleFirstIssuanceAndRenewal(t *testing.T) {
	h := newTestHost(t)
	res := h.settle()
	ready := h.cert.Status.Condition(ConditionReady)
	require.NotNil(t, ready, "not Ready after first issuance:\n%s", strings.Join(h.trace, "\n"))
	require.Equal(t, StatusTrue, ready.Status, "not Ready after first issuance:\n%s", strings.Join(h.trace, "\n"))
	require.Equal(t, 1, *h.cert.Status.Revision, "revision after first issuance")
	require.Equal(t, 1, h.creates, "requests for first issuance")
	first := h.leaf()
	require.False(t, res.RequeueAt.IsZero(), "no requeue, want the renewal time %v", h.cert.Status.RenewalTime)
	require.True(t, res.RequeueAt.Equal(*h.cert.Status.RenewalTime), "requeue %v, want the renewal time %v", res.RequeueAt, h.cert.Status.RenewalTime)
	require.Empty(t, h.snapshot().NextPrivateKeySecrets, "the next private key survived the issuance")

	h.now = res.RequeueAt
	h.settle()
	second := h.leaf()
	require.Equal(t, 2, *h.cert.Status.Revision, "revision after renewal")
	require.Equal(t, 2, h.creates, "requests after renewal")
	require.False(t, keys.PublicKeysEqual(first.PublicKey, second.PublicKey), "rotation Always renewed with the same key")
	require.Len(t, h.requests, 1, "requests the revision history kept")
}

func TestLifecycleRotationNeverKeepsTheKey(t *testing.T) {
	h := newTestHost(t)
	h.cert.Spec.PrivateKey.RotationPolicy = keys.RotationNever
	res := h.settle()
	first := h.leaf()
	h.now = res.RequeueAt
	h.settle()
	require.True(t, keys.PublicKeysEqual(first.PublicKey, h.leaf().PublicKey), "rotation Never changed the key")
}

// TestLifecycleFailuresBackOffNeverLoop: an issuer that fails, then one that
// certifies the wrong key, must each cost one request per backoff step —
// the reference operator looped on the wrong-key case.
func TestLifecycleFailuresBackOffNeverLoop(t *testing.T) {
	// "without creation times": a host that leaves requests' creation time
	// unset gets its rejected requests deleted at once instead.
	for _, fault := range []string{"fail", "wrong key", "wrong key without creation times"} {
		t.Run(fault, func(t *testing.T) {
			h := newTestHost(t)
			h.fail, h.wrongKey = fault == "fail", strings.HasPrefix(fault, "wrong key")
			h.noCreationTime = strings.HasSuffix(fault, "without creation times")
			for step := 1; step <= 4; step++ {
				res := h.settle()
				require.Equal(t, ReasonBackoff, res.Reason, "step %d: reason (%s)\n%s", step, res.Message, strings.Join(h.trace, "\n"))
				require.Equal(t, step, h.creates, "step %d: requests", step)
				wantWait := time.Hour << (step - 1)
				require.Equal(t, wantWait, res.RequeueAt.Sub(*h.cert.Status.LastFailureTime), "step %d: backoff", step)
				h.now = res.RequeueAt
			}
			h.fail, h.wrongKey = false, false
			h.settle()
			ready := h.cert.Status.Condition(ConditionReady)
			require.NotNil(t, ready, "not Ready after the issuer recovered:\n%s", strings.Join(h.trace, "\n"))
			require.Equal(t, StatusTrue, ready.Status, "not Ready after the issuer recovered:\n%s", strings.Join(h.trace, "\n"))
			require.Nil(t, h.cert.Status.FailedIssuanceAttempts, "failed attempts still counted after the issuer recovered")
		})
	}
}

// TestLifecycleStaleCacheNeverDuplicatesARequest replays a pass on a
// snapshot that has not seen the request the previous pass created: the
// second CreateRequest names the same request.
func TestLifecycleStaleCacheNeverDuplicatesARequest(t *testing.T) {
	h := newTestHost(t)
	var created []string
	for i := 0; i < 6; i++ {
		stale := h.snapshot()
		stale.Requests = nil // the cache lags
		res := Reconcile(stale, h.now, h.cfg)
		for _, a := range res.Actions {
			if cr, ok := a.(CreateRequest); ok {
				created = append(created, cr.Request.Name)
			}
			h.apply(h.cert, a)
		}
	}
	for _, n := range created {
		require.Equal(t, "web-1", n, "a stale cache created %v", created)
	}
	require.Equal(t, 1, h.creates, "requests that exist from %d creates", len(created))
	require.NotEmpty(t, created, "no CreateRequest at all")
}

func TestLifecycleManualTriggerDuringBackoff(t *testing.T) {
	h := newTestHost(t)
	h.fail = true
	res := h.settle()
	require.Equal(t, ReasonBackoff, res.Reason, "reason (%s)", res.Message)
	h.fail = false
	h.now = h.now.Add(10 * time.Minute) // well inside the 1h backoff
	h.cert.Status.Conditions = setCondition(h.cert.Status.Conditions,
		Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonManualTrigger, Message: "renew now"}, h.now, h.cert.Generation)
	h.settle()
	ready := h.cert.Status.Condition(ConditionReady)
	require.NotNil(t, ready, "a manual trigger did not bypass the backoff:\n%s", strings.Join(h.trace, "\n"))
	require.Equal(t, StatusTrue, ready.Status, "a manual trigger did not bypass the backoff:\n%s", strings.Join(h.trace, "\n"))
}

// A pass that wrote the secret but stopped before its status write leaves
// the revision unrecorded; the next pass records it from the request whose
// certificate is in the secret, so the revision is never reused.
func TestRevisionAdoptedAfterAnInterruptedIssuance(t *testing.T) {
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-24 * time.Hour))
	s.Certificate.Status.Revision = nil
	res := Reconcile(s, t0, Config{})
	var st *Status
	for _, a := range res.Actions {
		if u, ok := a.(UpdateStatus); ok {
			st = &u.Status
		}
	}
	require.NotNil(t, st, "the revision was not adopted: %v (%s: %s)", res.Actions, res.Reason, res.Message)
	require.NotNil(t, st.Revision, "the revision was not adopted: %v (%s: %s)", res.Actions, res.Reason, res.Message)
	require.Equal(t, 1, *st.Revision, "the adopted revision (%s: %s)", res.Reason, res.Message)
	// A request whose certificate is not the secret's is not adopted.
	s, _ = f.healthy(t0.Add(-24 * time.Hour))
	s.Certificate.Status.Revision = nil
	other, _ := f.healthy(t0.Add(-48 * time.Hour))
	s.Requests[0].Status.Certificate = other.Requests[0].Status.Certificate
	for _, a := range Reconcile(s, t0, Config{}).Actions {
		if u, ok := a.(UpdateStatus); ok {
			require.Nil(t, u.Status.Revision, "adopted the revision of a request for another certificate: %v", u)
		}
	}
}

// The API server's clock is not the host's: a request's creationTimestamp
// an hour ahead or behind never makes an answer look older or younger than
// the issuance it belongs to — issuance, a failure, its backoff and the
// retry each happen once, with no request made twice.
func TestLifecycleAPIServerClockSkew(t *testing.T) {
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			h := newTestHost(t)
			h.serverSkew = skew
			h.settle()
			require.Equal(t, 1, *h.cert.Status.Revision)
			require.Equal(t, 1, h.creates)

			h.fail = true
			h.now = h.now.Add(61 * 24 * time.Hour) // renewal due
			h.settle()
			require.NotNil(t, h.cert.Status.FailedIssuanceAttempts)
			assert.Equal(t, 1, *h.cert.Status.FailedIssuanceAttempts, "one failure, counted once")
			assert.Equal(t, 2, h.creates)

			h.fail = false
			h.now = h.now.Add(time.Hour + time.Minute) // past the backoff
			h.settle()
			assert.Equal(t, 2, *h.cert.Status.Revision)
			assert.Equal(t, 3, h.creates, "one request per attempt")
		})
	}
}

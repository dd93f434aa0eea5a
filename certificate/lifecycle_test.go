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
	// caBehind: the CA's clock, which sets notBefore, is this far behind
	// the host's.
	caBehind time.Duration
	// lifetime the CA gives, whatever the request asks; zero means the
	// request's duration, else 90 days.
	lifetime time.Duration
	// hold: the CA does not answer requests yet.
	hold bool
	// reuse: the CA answers a key it has certified before with the
	// certificate it issued then (a CA that deduplicates by key).
	reuse  bool
	issued map[string][]byte
	trace  []string
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
	case WriteTemporaryCertificate:
		key, err := keys.DecodePrivateKey(h.secrets[a.KeySecretName].Data[keys.SecretPrivateKey])
		require.NoError(h.t, err)
		chain, err := keys.TemporaryCertificate(rand.Reader, key, a.Template, a.NotBefore, a.NotAfter)
		require.NoError(h.t, err)
		data, err := keys.SecretData(rand.Reader, key, chain, nil, a.Output)
		require.NoError(h.t, err, "WriteTemporaryCertificate")
		h.secrets[a.Name] = &Secret{ObjectMeta: ObjectMeta{Name: a.Name, Labels: a.Labels, Annotations: a.Annotations}, Data: data}
	default:
		h.t.Fatalf("unknown action %T", a)
	}
}

// sign lets the CA answer every pending request.
func (h *testHost) sign() {
	for _, name := range sortedKeys(h.requests) {
		r := h.requests[name]
		if len(r.Status.Conditions) > 0 || h.hold {
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
		der, err := x509.MarshalPKIXPublicKey(pub)
		require.NoError(h.t, err)
		if old, ok := h.issued[string(der)]; ok && h.reuse {
			r.Status.Certificate = old
		} else {
			life := 90 * 24 * time.Hour
			if r.Spec.Duration != nil {
				life = r.Spec.Duration.Duration
			}
			if h.lifetime > 0 {
				life = h.lifetime
			}
			nb := h.now.Add(-h.caBehind)
			r.Status.Certificate = h.f.sign(pub, keys.RequestTemplate{CommonName: csr.Subject.CommonName, DNSNames: csr.DNSNames}, nb, nb.Add(life))
			if h.issued == nil {
				h.issued = map[string][]byte{}
			}
			h.issued[string(der)] = r.Status.Certificate
		}
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

// runFor runs the host for d as a host loop does: a pass whenever
// something changed (settle), else at the time the last pass asked to look
// again — or an hour on, when it asked for none.
func (h *testHost) runFor(d time.Duration) {
	h.t.Helper()
	end := h.now.Add(d)
	for i := 0; h.now.Before(end); i++ {
		require.Less(h.t, i, 10000, "the host made no progress towards %v:\n%s", end, strings.Join(h.trace, "\n"))
		res := h.settle()
		next := res.RequeueAt
		if !next.After(h.now) {
			next = h.now.Add(time.Hour)
		}
		h.now = next
	}
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

// An issuance that leaves a certificate due for renewal on arrival must
// never turn into a re-issue loop (on a real API server, duration 1h with
// renewBefore 59m58s made 16 revisions in 30 seconds). Each case runs the
// host over fake time, from deadline to deadline, and bounds what it made:
// a spec that would do it is refused; a certificate that arrives due is a
// failed issuance that backs off (1h·2^(n−1) ≤ 32h); the shortest renewal
// a spec may ask makes one revision per MinTimeBeforeRenewal; and a CA
// that gives less than the spec asks is not a failure, for renewal adapts
// to the lifetime it gives.
func TestLifecycleDueOnArrivalNeverLoops(t *testing.T) {
	tests := map[string]struct {
		setup func(h *testHost)
		// first runs the host this long from t0 before the run measured,
		// which starts at the renewal time when first is set.
		first bool
		run   time.Duration
		// maxRevisions and maxRequests bound what the run made; failures
		// is whether issuance is failing at the end (Issuing=False with
		// IssuedDueForRenewal), ready the Ready condition's reason then.
		maxRevisions, maxRequests int
		failing                   bool
		ready                     string
	}{
		"duration 1h, renewBefore 59m58s: refused, nothing is issued": {
			setup: func(h *testHost) {
				h.cert.Spec.Duration, h.cert.Spec.RenewBefore = &Duration{time.Hour}, &Duration{59*time.Minute + 58*time.Second}
			},
			run: 2 * time.Hour, maxRevisions: 0, maxRequests: 0, ready: ReasonInvalidSpec,
		},
		"duration 1h, renewBeforePercentage 99: refused, nothing is issued": {
			setup: func(h *testHost) {
				h.cert.Spec.Duration, h.cert.Spec.RenewBeforePercentage = &Duration{time.Hour}, ptr(int32(99))
			},
			run: 2 * time.Hour, maxRevisions: 0, maxRequests: 0, ready: ReasonInvalidSpec,
		},
		"duration 1h, renewBefore 50m, the least a spec may leave: one revision per 10 minutes": {
			setup: func(h *testHost) {
				h.cert.Spec.Duration, h.cert.Spec.RenewBefore = &Duration{time.Hour}, &Duration{50 * time.Minute}
			},
			run: 2 * time.Hour, maxRevisions: 1 + int(2*time.Hour/MinTimeBeforeRenewal), maxRequests: 1 + int(2*time.Hour/MinTimeBeforeRenewal), ready: ReasonReady,
		},
		"a CA 40 minutes behind the host's clock, 1h certificates renewed 30m before expiry: every answer is due, and backs off": {
			setup: func(h *testHost) {
				h.cert.Spec.Duration, h.cert.Spec.RenewBefore = &Duration{time.Hour}, &Duration{30 * time.Minute}
				h.caBehind = 40 * time.Minute
			},
			// Attempts at 0, 1h, 3h, 7h and 15h; the next is at 31h.
			run: 24 * time.Hour, maxRevisions: 0, maxRequests: 5, failing: true, ready: ReasonDoesNotExist,
		},
		"a CA that answers a renewal with the key's old certificate (rotation Never): the renewal backs off": {
			setup: func(h *testHost) {
				h.cert.Spec.PrivateKey.RotationPolicy = keys.RotationNever
				h.reuse = true
			},
			// Backoff 1h, 2h, … 32h over 20 days: 20 attempts.
			first: true, run: 20 * 24 * time.Hour, maxRevisions: 0, maxRequests: 20, failing: true, ready: ReasonReady,
		},
		"a CA that gives 7 days where 90 are asked, renewBefore 30 days: renewed at half its life, no failure": {
			setup: func(h *testHost) {
				h.cert.Spec.RenewBefore = &Duration{30 * 24 * time.Hour}
				h.lifetime = 7 * 24 * time.Hour
			},
			// Issued at 0 and renewed every 3.5 days.
			run: 14 * 24 * time.Hour, maxRevisions: 5, maxRequests: 5, ready: ReasonReady,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newTestHost(t)
			tc.setup(h)
			revision := func() int {
				if r := h.cert.Status.Revision; r != nil {
					return *r
				}
				return 0
			}
			if tc.first {
				res := h.settle()
				require.Equal(t, 1, revision(), "the first issuance:\n%s", strings.Join(h.trace, "\n"))
				h.now = res.RequeueAt // the renewal time
			}
			revs, creates := revision(), h.creates
			h.runFor(tc.run)
			trace := strings.Join(h.trace, "\n")
			t.Logf("%d revisions and %d requests in %v", revision()-revs, h.creates-creates, tc.run)
			assert.LessOrEqual(t, revision()-revs, tc.maxRevisions, "revisions made in %v:\n%s", tc.run, trace)
			assert.LessOrEqual(t, h.creates-creates, tc.maxRequests, "requests made in %v:\n%s", tc.run, trace)
			ready := h.cert.Status.Condition(ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.ready, ready.Reason, ready.Message)
			cond := h.cert.Status.Condition(ConditionIssuing)
			if !tc.failing {
				assert.Nil(t, h.cert.Status.FailedIssuanceAttempts, "issuance failed:\n%s", trace)
				return
			}
			require.NotNil(t, cond, "no failure recorded:\n%s", trace)
			assert.Equal(t, StatusFalse, cond.Status)
			assert.Equal(t, ReasonIssuedDueForRenewal, cond.Reason, cond.Message)
			assert.Contains(t, cond.Message, "already due for renewal on arrival")
			require.NotNil(t, h.cert.Status.FailedIssuanceAttempts)
			assert.Equal(t, h.creates-creates, *h.cert.Status.FailedIssuanceAttempts, "every request made was one failed attempt")
		})
	}
}

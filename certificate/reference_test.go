package certificate

import (
	"crypto"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// stagesInTurn is the plain reference for Reconcile: each stage called
// alone, through its public function, on the snapshot a host would read
// after carrying out the actions of the stages before it — statuses
// written, secrets written with keys.SecretData, requests and keys
// deleted. Creations (keys, requests, temporary certificates) need the
// host's randomness and are left for the next pass, as Reconcile
// documents.
func stagesInTurn(t testing.TB, s *Snapshot, now time.Time, cfg Config) Result {
	stage := map[Stage]func(*Snapshot, time.Time, Config) Result{
		StageTrigger: Trigger, StageKeyManager: KeyManager, StageRequestManager: RequestManager,
		StageIssuing: Issue, StageReadiness: Readiness,
	}
	cur := shallowSnapshot(s)
	var out Result
	head := 0
	for i, st := range Stages() {
		r := stage[st](cur, now, cfg)
		require.Equal(t, st, r.Stage, "stage %s says it is another", st)
		out.Steps = append(out.Steps, Step{Stage: st, Reason: r.Reason, Message: r.Message, Acted: len(r.Actions) > 0, Actions: r.Actions, RequeueAt: r.RequeueAt})
		for _, a := range r.Actions {
			if _, made := a.(WriteTemporaryCertificate); !made {
				applyReference(t, cur, a)
			}
			if _, ok := a.(UpdateStatus); !ok {
				out.Actions = append(out.Actions, a)
			}
		}
		out.RequeueAt = earliest(out.RequeueAt, r.RequeueAt)
		if r.Renewal != nil {
			out.Renewal = r.Renewal
		}
		if st != StageTrigger && st != StageReadiness && len(r.Actions) > 0 {
			head = i
		}
	}
	out.Stage, out.Reason, out.Message = out.Steps[head].Stage, out.Steps[head].Reason, out.Steps[head].Message
	if !statusEqual(cur.Certificate.Status, s.Certificate.Status) {
		out.Actions = append(out.Actions, UpdateStatus{Status: cur.Certificate.Status})
	}
	out.IssuanceReason, out.IssuanceMessage = issuance(cur.Certificate.Status)
	return out
}

// shallowSnapshot copies the snapshot's lists, so applyReference can change
// them without touching the caller's.
func shallowSnapshot(s *Snapshot) *Snapshot {
	c := *s
	c.Requests = slices.Clone(s.Requests)
	c.NextPrivateKeySecrets = slices.Clone(s.NextPrivateKeySecrets)
	return &c
}

// applyReference carries out an action the way a host does.
func applyReference(t testing.TB, s *Snapshot, a Action) {
	switch a := a.(type) {
	case UpdateStatus:
		c := *s.Certificate
		c.Status = a.Status
		s.Certificate = &c
	case DeleteRequest:
		s.Requests = slices.DeleteFunc(s.Requests, func(r *CertificateRequest) bool { return r != nil && r.Name == a.Name })
	case DeleteSecret:
		s.NextPrivateKeySecrets = slices.DeleteFunc(s.NextPrivateKeySecrets, func(k *Secret) bool { return k != nil && k.Name == a.Name })
	case WriteSecret:
		key := writeKey(t, s, a)
		data, err := keys.SecretData(rand.Reader, key, a.Chain, a.CA, a.Output)
		require.NoError(t, err, "%v cannot be carried out", a)
		sec := &Secret{ObjectMeta: ObjectMeta{Name: a.Name, Namespace: s.Certificate.Namespace, OwnerUID: a.OwnerUID}}
		if s.Secret != nil {
			require.Equal(t, s.Secret.ResourceVersion, a.ResourceVersion, "%v: the resource version is not the secret read's", a)
			sec.ObjectMeta = s.Secret.ObjectMeta
			sec.Labels, sec.Annotations = maps.Clone(sec.Labels), maps.Clone(sec.Annotations)
		}
		sec.Labels = merge(sec.Labels, a.Labels)
		sec.Annotations = merge(sec.Annotations, a.Annotations)
		sec.Data = data
		s.Secret = sec
		if a.KeySecretName != a.Name {
			s.ARI = nil // the window was the replaced certificate's
		}
	case WriteTemporaryCertificate:
		key := secretKey(findSecret(s.NextPrivateKeySecrets, a.KeySecretName))
		require.NotNil(t, key, "%v: no such next private key", a)
		chain, err := keys.TemporaryCertificate(rand.Reader, key, a.Template, a.NotBefore, a.NotAfter)
		require.NoError(t, err, "%v cannot be carried out", a)
		data, err := keys.SecretData(rand.Reader, key, chain, nil, a.Output)
		require.NoError(t, err, "%v cannot be carried out", a)
		sec := &Secret{ObjectMeta: ObjectMeta{Name: a.Name, Namespace: s.Certificate.Namespace, OwnerUID: a.OwnerUID}}
		if s.Secret != nil {
			require.Equal(t, s.Secret.ResourceVersion, a.ResourceVersion, "%v: the resource version is not the secret read's", a)
			sec.ObjectMeta = s.Secret.ObjectMeta
			sec.Labels, sec.Annotations = maps.Clone(sec.Labels), maps.Clone(sec.Annotations)
		}
		sec.Labels = merge(sec.Labels, a.Labels)
		sec.Annotations = merge(sec.Annotations, a.Annotations)
		sec.Data = data
		s.Secret = sec
	case GenerateKey, CreateRequest:
	default:
		t.Fatalf("unknown action %T", a)
	}
}

// writeKey is the key a WriteSecret writes: tls.key of the secret it
// names, a next private key after an issuance or the secret itself for a
// repair.
func writeKey(t testing.TB, s *Snapshot, a WriteSecret) crypto.Signer {
	src := findSecret(s.NextPrivateKeySecrets, a.KeySecretName)
	if a.KeySecretName == a.Name {
		src = s.Secret
	}
	require.NotNil(t, src, "%v names key secret %s, which the snapshot does not hold", a, a.KeySecretName)
	key, err := keys.DecodePrivateKey(src.Data[keys.SecretPrivateKey])
	require.NoError(t, err, "%v: the key in %s cannot be decoded", a, a.KeySecretName)
	return key
}

func findSecret(list []*Secret, name string) *Secret {
	for _, s := range list {
		if s != nil && s.Name == name {
			return s
		}
	}
	return nil
}

// checkEqualsStages fails when Reconcile's result is not the reference's.
func checkEqualsStages(t testing.TB, s *Snapshot, now time.Time, cfg Config, got Result) {
	t.Helper()
	want := stagesInTurn(t, s, now, cfg)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Reconcile differs from the stages run in turn (-stages +Reconcile):\n%s", diff)
	}
}

// checkLiveness: never stuck, never silent. A decision that does nothing
// says why (a reason), and names a time to look again that is not in the
// past — or waits for a change that a watch event brings (waitsForEvent).
// A deadline arrives: called again at its own RequeueAt with nothing
// changed, a decision either acts or moves on to a later time; and a
// decision that waits names a time fixed by what it read, not one that
// moves with the clock (asked a second later, it must not answer a second
// later).
func checkLiveness(t testing.TB, s *Snapshot, now time.Time, cfg Config) {
	t.Helper()
	r1 := Reconcile(s, now, cfg)
	if len(r1.Actions) == 0 {
		require.NotEmpty(t, r1.Reason, "at %v the decision does nothing and gives no reason (%s)", now, r1.Message)
		require.NotEmpty(t, r1.Message, "at %v the decision does nothing and gives no message (%s)", now, r1.Reason)
		if r1.RequeueAt.IsZero() {
			_, ok := waitsForEvent(s, now)
			require.True(t, ok, "at %v the decision does nothing, names no time to look again, and waits for no event (%s: %s)", now, r1.Reason, r1.Message)
		}
	}
	noSlide(t, s, now, cfg, r1)
	at := r1.RequeueAt
	if at.IsZero() {
		return
	}
	require.False(t, at.Before(now), "at %v the decision asks to look again in the past, at %v (%s: %s)", now, at, r1.Reason, r1.Message)
	if len(r1.Actions) == 0 {
		require.False(t, at.Equal(now), "at %v the decision does nothing and asks to look again at once (%s: %s)", now, r1.Reason, r1.Message)
	}
	r2 := Reconcile(s, at, cfg)
	if len(r2.Actions) == 0 && !r2.RequeueAt.IsZero() {
		require.True(t, r2.RequeueAt.After(at), "at its deadline %v the decision neither acts nor moves on (%s: %s; again at %v)", at, r2.Reason, r2.Message, r2.RequeueAt)
	}
	noSlide(t, s, at, cfg, r2)
}

// noSlide fails when r, a decision at now that waits, names a deadline
// that moves with the clock.
func noSlide(t testing.TB, s *Snapshot, now time.Time, cfg Config, r Result) {
	t.Helper()
	const step = time.Second
	if len(r.Actions) > 0 || r.RequeueAt.IsZero() || r.RequeueAt.Sub(now) <= step {
		return
	}
	later := Reconcile(s, now.Add(step), cfg)
	if len(later.Actions) == 0 && later.Reason == r.Reason {
		require.False(t, later.RequeueAt.Equal(r.RequeueAt.Add(step)), "the deadline slides with the clock: at %v it waits until %v, a second later until %v (%s: %s)",
			now, r.RequeueAt, later.RequeueAt, r.Reason, r.Message)
	}
}

// quiesce carries out decisions' actions the way a host does, all at now,
// until a decision does nothing — the host then waits for its deadline or
// an event — or asks for what only the host's randomness makes (a key, a
// request), whose creation brings the next pass. It fails when neither
// comes within a few passes: a write loop. It returns the snapshot reached
// and whether its decision does nothing.
func quiesce(t testing.TB, s *Snapshot, now time.Time, cfg Config) (*Snapshot, bool) {
	t.Helper()
	cur := shallowSnapshot(s)
	var trace []string
	for range 8 {
		r := Reconcile(cur, now, cfg)
		if len(r.Actions) == 0 {
			return cur, true
		}
		trace = append(trace, fmt.Sprintf("%s: %s %v", r.Reason, r.Message, r.Actions))
		for _, a := range r.Actions {
			switch a.(type) {
			case GenerateKey, CreateRequest:
				return cur, false
			}
			applyReference(t, cur, a)
		}
	}
	t.Fatalf("at %v the decisions never settle, a write loop:\n%s", now, strings.Join(trace, "\n"))
	return nil, false
}

// waitsForEvent says what change a decision that does nothing and names no
// time may wait for, with nothing else to bring the next pass: only these,
// each with the certificate's status saying so where users look.
//
//   - The spec is invalid (Validate): the user's fix, a change to the
//     certificate. Ready is False, InvalidSpec.
//   - An issuance waits for the issuer's answer: Issuing is True, a request
//     of the next revision is not answered (no Ready=True, no failure),
//     and the Issuing condition's message names it — the issuer's next
//     write to the request, or the request's creation time plus
//     Config.IssuerGrace (a time, so not here) when no issuer touched it.
//   - Renewal is Disabled and the certificate in the secret has expired:
//     a manual trigger or a spec change. Ready is False, Expired.
func waitsForEvent(s *Snapshot, now time.Time) (string, bool) {
	c := s.Certificate
	st := c.Status
	ready, iss := st.Condition(ConditionReady), st.Condition(ConditionIssuing)
	if Validate(&c.Spec) != nil {
		return "a spec change", ready != nil && ready.Status == StatusFalse && ready.Reason == ReasonInvalidSpec
	}
	if iss != nil && iss.Status == StatusTrue {
		next := 1
		if st.Revision != nil && *st.Revision >= 0 {
			next = *st.Revision + 1
		}
		for _, r := range s.Requests {
			if annotatedRevision(r) != next || !strings.Contains(iss.Message, "request "+r.Name+" ") {
				continue
			}
			answered := false
			for _, rc := range r.Status.Conditions {
				answered = answered || (rc.Type == RequestConditionReady && (rc.Status == StatusTrue || rc.Reason == RequestReasonFailed)) ||
					((rc.Type == RequestConditionDenied || rc.Type == RequestConditionInvalidRequest) && rc.Status == StatusTrue)
			}
			if !answered {
				return "the issuer's answer to request " + r.Name, true
			}
		}
		return "", false
	}
	if c.Spec.Renewal != nil && c.Spec.Renewal.Policy == renewal.PolicyDisabled && s.Secret != nil {
		leaf, err := firstCertificate(s.Secret.Data[keys.SecretCertificate])
		if err == nil && !now.Before(leaf.NotAfter) {
			return "a manual trigger of an expired certificate whose renewal is disabled", ready != nil && ready.Status == StatusFalse && ready.Reason == ReasonExpired
		}
	}
	return "", false
}

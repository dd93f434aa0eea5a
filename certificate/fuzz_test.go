package certificate

import (
	"strconv"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// FuzzReconcile feeds Reconcile snapshots whose secret bytes, CSR bytes,
// spec fields, statuses and times come from the fuzzer, around a valid
// healthy certificate. Invariants: no panic; the same input gives the same
// result; Reconcile gives what the stages run in turn give; a secret is
// never written with a key that does not match its certificate; at most one
// request is created, and only while Issuing is True; no issuance starts
// before the backoff allows; a secret that holds data certlife did not
// write is never written nor issued for (checkHeld); a decision that does
// nothing says why and when, or what event it waits for, and its
// deadlines arrive (checkLiveness).
func FuzzReconcile(f *testing.F) {
	fx := newFixture(f)
	base, _ := fx.healthy(t0.Add(-10 * 24 * time.Hour))
	crt := base.Secret.Data[keys.SecretCertificate]
	key := base.Secret.Data[keys.SecretPrivateKey]
	csr := base.Requests[0].Spec.Request
	f.Add(crt, key, csr, "web.example", int64(0), uint8(0), int64(0), 0, true)
	f.Add([]byte("x"), key, []byte("y"), "", int64(3600), uint8(3), int64(-7200), 3, false)
	f.Add(crt, []byte{}, csr, "other.example", int64(90*24*3600), uint8(1), int64(100), -1, true)
	// A key pair certlife did not write, issuing or not, handed over or not.
	f.Add(crt, key, csr, "web.example", int64(0), uint8(64), int64(0), 0, true)
	f.Add(crt, key, csr, "web.example", int64(0), uint8(64|16|8|1), int64(0), 0, true)
	f.Add(crt, key, csr, "web.example", int64(0), uint8(128|64|16|8|1), int64(0), 0, true)
	f.Fuzz(func(t *testing.T, crtB, keyB, csrB []byte, dns string, nowOff int64, flags uint8, failOff int64, attempts int, haveRev bool) {
		s := cloneSnapshot(base)
		s.Secret.Data[keys.SecretCertificate] = crtB
		s.Secret.Data[keys.SecretPrivateKey] = keyB
		s.Requests[0].Spec.Request = csrB
		c := s.Certificate
		if dns != "" {
			c.Spec.DNSNames = []string{dns}
		}
		if !haveRev {
			c.Status.Revision = nil
		}
		if flags&1 != 0 {
			c.Status.Conditions = append(c.Status.Conditions, Condition{Type: ConditionIssuing, Status: StatusTrue, LastTransitionTime: t0})
		}
		if flags&2 != 0 {
			ft := t0.Add(time.Duration(failOff) * time.Second)
			c.Status.LastFailureTime = &ft
			c.Status.FailedIssuanceAttempts = &attempts
		}
		if flags&4 != 0 {
			s.Secret = nil
		}
		if flags&8 != 0 {
			c.Status.NextPrivateKeySecretName = c.Name + "-next"
			s.NextPrivateKeySecrets = []*Secret{{ObjectMeta: ObjectMeta{Name: c.Name + "-next", Labels: map[string]string{LabelNextPrivateKey: "true"}},
				Data: map[string][]byte{keys.SecretPrivateKey: keyB}}}
		}
		if flags&32 != 0 {
			s.Requests[0].CreationTimestamp = t0.Add(time.Duration(failOff/2) * time.Second)
		}
		if flags&64 != 0 && s.Secret != nil {
			// A secret certlife did not write: no owner, none of its
			// annotations; handed over (allow-takeover) or not.
			s.Secret.Annotations = nil
			if flags&128 != 0 {
				s.Secret.Annotations = map[string]string{AnnotationAllowTakeover: "true"}
			}
		}
		if flags&16 != 0 {
			s.Requests[0].Annotations[AnnotationRevision] = strconv.Itoa(nextRevision(c))
			s.Requests[0].Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue}}
			s.Requests[0].Status.Certificate = crtB
		}
		now := t0.Add(time.Duration(nowOff%(400*24*3600)) * time.Second)

		before := cloneSnapshot(s)
		res := Reconcile(s, now, Config{})
		if diff := cmp.Diff(res, Reconcile(s, now, Config{})); diff != "" {
			t.Fatalf("same input, different results:\n%s", diff)
		}
		if diff := cmp.Diff(before.Certificate, s.Certificate); diff != "" {
			t.Fatalf("Reconcile changed the snapshot it was given:\n%s", diff)
		}
		checkEqualsStages(t, s, now, Config{}, res)
		checkHeld(t, s, now, Config{}, res)
		checkLiveness(t, s, now, Config{})
		if quiet, ok := quiesce(t, s, now, Config{}); ok {
			checkLiveness(t, quiet, now, Config{})
		}
		final := c.Status
		creates := 0
		for _, a := range res.Actions {
			switch a := a.(type) {
			case UpdateStatus:
				final = a.Status
			case CreateRequest:
				creates++
			case WriteSecret:
				src := findSecret(s.NextPrivateKeySecrets, a.KeySecretName)
				if a.KeySecretName == a.Name {
					src = s.Secret // a repair, from the secret's own key and chain
				}
				k := secretKey(src)
				require.NotNil(t, k, "%v is written with a key that the snapshot does not hold or that cannot be decoded", a)
				leaf, lerr := firstCertificate(a.Chain)
				require.NoError(t, lerr, "a secret is written with a chain that cannot be read")
				require.True(t, keys.PublicKeysEqual(k.Public(), leaf.PublicKey), "a secret is written with a key that does not match its certificate")
			}
		}
		require.LessOrEqual(t, creates, 1, "requests created in one reconcile")
		if creates == 1 {
			require.True(t, issuing(&Certificate{Status: final}) != nil || issuing(c) != nil, "a request was created while not issuing")
		}
		// No issuance may start before the backoff allows, unless the
		// issuance was already under way (a manual trigger) or the request
		// of the failed attempt no longer asks what the spec asks.
		if issuing(c) == nil && issuing(&Certificate{Status: final}) != nil {
			if b := (Config{}).Backoff.Decide(backoffOf(s), now); b.Wait {
				fixed := false
				for _, r := range s.Requests {
					fixed = fixed || (annotatedRevision(r) == nextRevision(c) && !asksWhatSpecAsks(r, &c.Spec))
				}
				require.True(t, fixed, "issuance started at %v before the backoff allows (%v)", now, b.NextAttempt)
			}
		}
	})
}

// cloneSnapshot copies what the fuzz target changes.
func cloneSnapshot(b *Snapshot) *Snapshot {
	c := *b.Certificate
	c.Spec.DNSNames = append([]string(nil), c.Spec.DNSNames...)
	c.Status = cloneStatus(c.Status)
	if b.Secret == nil {
		return &Snapshot{Certificate: &c, Requests: cloneRequests(b.Requests), NextPrivateKeySecrets: b.NextPrivateKeySecrets}
	}
	sec := *b.Secret
	sec.Data = map[string][]byte{}
	for k, v := range b.Secret.Data {
		sec.Data[k] = v
	}
	return &Snapshot{Certificate: &c, Secret: &sec, Requests: cloneRequests(b.Requests), NextPrivateKeySecrets: b.NextPrivateKeySecrets}
}

func cloneRequests(in []*CertificateRequest) []*CertificateRequest {
	var out []*CertificateRequest
	for _, b := range in {
		r := *b
		r.Annotations = map[string]string{}
		for k, v := range b.Annotations {
			r.Annotations[k] = v
		}
		r.Status.Conditions = append([]Condition(nil), r.Status.Conditions...)
		out = append(out, &r)
	}
	return out
}

package hosttest

import (
	"fmt"
	"sync"
	"time"

	"github.com/certlife/certlife/certificate/host"
)

// testLease checks a host.Leaser: the rules run only for a store that is
// one.
func testLease(h *harness) {
	l, ok := h.s.(host.Leaser)
	if !ok {
		h.t.Skipf("the store is not a host.Leaser")
	}
	// Whole seconds of the real clock: a store may keep times to the
	// microsecond, and may drop leases that expired long ago.
	t0 := time.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	keyOf := func(name string) string { return host.LeaseKey(host.KindRequest, h.ns[0], name, "hosttest-uid-"+name) }
	lease := func(key, holder string, now, until time.Time) (host.Lease, bool) {
		h.t.Helper()
		got, err := l.Lease(h.ctx, key, holder, now, until)
		if err != nil {
			h.t.Errorf("Lease of %s by %s at %s until %s must succeed: %v", key, holder, leaseStamp(now), leaseStamp(until), err)
			return got, false
		}
		return got, true
	}
	want := func(rule string, got host.Lease, key, holder string, until time.Time) {
		h.t.Helper()
		if got.Key != key || got.Holder != holder || !got.Until.Equal(until) {
			h.t.Errorf("%s: got %s, want %s", rule, describeLease(got), describeLease(host.Lease{Key: key, Holder: holder, Until: until}))
		}
	}

	h.sub("TakeRenewRefuse", func(h *harness) {
		k := keyOf("take")
		if got, ok := lease(k, "replica-a", at(0), at(time.Minute)); ok {
			want("Lease of a key nobody holds must give it to the holder", got, k, "replica-a", at(time.Minute))
		}
		if got, ok := lease(k, "replica-a", at(30*time.Second), at(2*time.Minute)); ok {
			want("Lease by the holder must renew it to the new deadline", got, k, "replica-a", at(2*time.Minute))
		}
		if got, ok := lease(k, "replica-a", at(40*time.Second), at(90*time.Second)); ok {
			want("Lease by the holder may shorten it", got, k, "replica-a", at(90*time.Second))
		}
		if got, ok := lease(k, "replica-b", at(time.Minute), at(3*time.Minute)); ok {
			want("Lease of a key another holds unexpired must be refused, returning the holder's lease, and no error", got, k, "replica-a", at(90*time.Second))
		}
		if got, ok := lease(k, "replica-b", at(90*time.Second-time.Millisecond), at(3*time.Minute)); ok {
			want("Lease of a key another holds must be refused until the deadline", got, k, "replica-a", at(90*time.Second))
		}
		other := keyOf("other")
		if got, ok := lease(other, "replica-b", at(time.Minute), at(3*time.Minute)); ok {
			want("Lease of another key must be given whoever holds the first", got, other, "replica-b", at(3*time.Minute))
		}
		if got, ok := lease(k, "replica-a", at(80*time.Second), at(2*time.Minute)); ok {
			want("Lease by the holder must renew it after a refused Lease of another", got, k, "replica-a", at(2*time.Minute))
		}
	})

	h.sub("TakeOverAfterExpiry", func(h *harness) {
		k := keyOf("expiry")
		lease(k, "replica-a", at(0), at(time.Minute))
		if got, ok := lease(k, "replica-b", at(time.Minute), at(3*time.Minute)); ok {
			want("Lease of a key whose lease expired (at its deadline) must give it to the new holder", got, k, "replica-b", at(3*time.Minute))
		}
		if got, ok := lease(k, "replica-a", at(2*time.Minute), at(4*time.Minute)); ok {
			want("Lease by a holder whose lease expired and was taken over must be refused", got, k, "replica-b", at(3*time.Minute))
		}
		if got, ok := lease(k, "replica-c", at(5*time.Minute), at(6*time.Minute)); ok {
			want("Lease of a key taken over and expired again must give it to the next holder", got, k, "replica-c", at(6*time.Minute))
		}
	})

	h.sub("Release", func(h *harness) {
		k := keyOf("release")
		lease(k, "replica-a", at(0), at(time.Hour))
		if err := l.Release(h.ctx, k, "replica-b"); err != nil {
			h.t.Errorf("Release of a lease another holds must be no error: %v", err)
		}
		if got, ok := lease(k, "replica-b", at(time.Minute), at(2*time.Minute)); ok {
			want("Release of a lease another holds must leave it as it is", got, k, "replica-a", at(time.Hour))
		}
		if err := l.Release(h.ctx, k, "replica-a"); err != nil {
			h.t.Errorf("Release by the holder must succeed: %v", err)
		}
		if got, ok := lease(k, "replica-b", at(2*time.Minute), at(3*time.Minute)); ok {
			want("Release by the holder must end the lease at once", got, k, "replica-b", at(3*time.Minute))
		}
		if err := l.Release(h.ctx, keyOf("never-leased"), "replica-a"); err != nil {
			h.t.Errorf("Release of a key nobody holds must be no error: %v", err)
		}
		if err := l.Release(h.ctx, k, "replica-b"); err != nil {
			h.t.Errorf("Release by the holder must succeed: %v", err)
		}
		if err := l.Release(h.ctx, k, "replica-b"); err != nil {
			h.t.Errorf("Release of a lease released already must be no error: %v", err)
		}
	})

	h.sub("Concurrent", func(h *harness) {
		// Many replicas ask at once, first for a key nobody holds, then,
		// round after round, once the last lease expired: each time at
		// most one of them may hold it.
		const replicas, rounds = leaseReplicas, 5
		k := keyOf("concurrent")
		for round := range rounds {
			now := at(time.Duration(round) * 2 * time.Minute)
			until := now.Add(time.Minute)
			got := make([]host.Lease, replicas)
			errs := make([]error, replicas)
			var start, done sync.WaitGroup
			start.Add(1)
			for i := range replicas {
				done.Add(1)
				go func() {
					defer done.Done()
					start.Wait()
					got[i], errs[i] = l.Lease(h.ctx, k, fmt.Sprintf("replica-%d", i), now, until)
				}()
			}
			start.Done()
			done.Wait()
			var winners []string
			failed := 0
			for i := range replicas {
				if errs[i] != nil {
					failed++
					continue
				}
				if got[i].Holder == fmt.Sprintf("replica-%d", i) {
					winners = append(winners, got[i].Holder)
				}
			}
			switch {
			case len(winners) > 1:
				h.t.Errorf("concurrent Lease calls of one key must give it to one holder at most: in round %d, %d calls at once gave it to %v", round, replicas, winners)
			case len(winners) == 0 && failed == 0:
				h.t.Errorf("concurrent Lease calls of a key nobody holds must give it to one of them: in round %d, none of %d calls got it", round, replicas)
			}
			for i := range replicas {
				if errs[i] == nil && len(winners) == 1 && got[i].Holder != winners[0] {
					h.t.Errorf("concurrent Lease calls must each return the lease as it stands after the call: in round %d, replica-%d got %s, but %s holds it", round, i, describeLease(got[i]), winners[0])
				}
			}
			if failed > 0 {
				h.t.Errorf("concurrent Lease calls must each succeed (a Leaser is safe for concurrent use): in round %d, %d of %d failed, the first with %v", round, failed, replicas, firstError(errs))
			}
		}
	})
}

// leaseReplicas is how many concurrent Lease calls the suite makes at
// once.
const leaseReplicas = 16

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func leaseStamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func describeLease(l host.Lease) string {
	if l.Holder == "" {
		return fmt.Sprintf("no lease of %q", l.Key)
	}
	return fmt.Sprintf("%s held by %s until %s", l.Key, l.Holder, leaseStamp(l.Until))
}

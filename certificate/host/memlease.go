package host

import (
	"context"
	"errors"
	"time"
)

var _ Leaser = (*MemoryStore)(nil)

// leases are a MemoryStore's leases, by key, with the size past which
// Lease drops those that expired.
type leases struct {
	held  map[string]Lease
	prune int
}

// minLeasePrune is the fewest leases a MemoryStore keeps before it looks
// for expired ones to drop.
const minLeasePrune = 64

// Lease implements Leaser, in memory: the leases are the process's, as
// the store's objects are. Leases that expired are dropped now and then,
// so those of requests that went without a Release (their holder died)
// take no memory for long. Lease fails for an empty key or holder, and
// for an until that is not after now.
func (s *MemoryStore) Lease(ctx context.Context, key, holder string, now, until time.Time) (Lease, error) {
	if err := checkLease(key, holder); err != nil {
		return Lease{}, err
	}
	if !until.After(now) {
		return Lease{}, errors.New("host: a lease's deadline must be after now: until " + until.UTC().Format(time.RFC3339Nano) + ", now " + now.UTC().Format(time.RFC3339Nano))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &s.leases
	if l.held == nil {
		l.held = map[string]Lease{}
	}
	if cur, ok := l.held[key]; ok && cur.Holder != holder && cur.Until.After(now) {
		return cur, nil
	}
	if len(l.held) >= max(l.prune, minLeasePrune) {
		for k, cur := range l.held {
			if !cur.Until.After(now) {
				delete(l.held, k)
			}
		}
		l.prune = 2 * len(l.held)
	}
	lease := Lease{Key: key, Holder: holder, Until: until}
	l.held[key] = lease
	return lease, nil
}

// Release implements Leaser.
func (s *MemoryStore) Release(ctx context.Context, key, holder string) error {
	if err := checkLease(key, holder); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.leases.held[key]; ok && cur.Holder == holder {
		delete(s.leases.held, key)
	}
	return nil
}

func checkLease(key, holder string) error {
	switch {
	case key == "":
		return errors.New("host: a lease needs a key")
	case holder == "":
		return errors.New("host: a lease needs a holder")
	}
	return nil
}

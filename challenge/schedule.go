package challenge

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Scheduler defaults.
const (
	DefaultMaxInFlight   = 60
	DefaultAccountBudget = 300 // Let's Encrypt: pending authorizations per account
)

// SchedulerConfig bounds the scheduler. The zero value is the default of
// each field.
type SchedulerConfig struct {
	// MaxInFlight caps challenges with Processing set. Zero means 60.
	MaxInFlight int
	// MaxPerPass caps how many one pass starts. Zero means no cap beyond
	// MaxInFlight.
	MaxPerPass int
	// AccountBudget caps in-flight challenges per ACME account (pending
	// authorizations). Zero means 300.
	AccountBudget int
}

// Schedule chooses which challenges to start now (to set Processing on):
//
//   - never more than MaxInFlight processing at once, nor MaxPerPass per pass;
//   - never two for the same (DNS name, type) at once, DNS names compared
//     without regard to case;
//   - never more than AccountBudget in flight for one account;
//   - oldest first within an (issuer, account) group: by creation time,
//     then name, namespace and UID;
//   - groups take turns, one challenge each per round, in the order of
//     their oldest candidate, so one issuer's failing backlog cannot
//     starve another's new certificates; every group is served, however
//     many there are.
//
// Challenges already final or processing are never returned, nor one that
// gave its slot back to wait for a retry (Status.NextAttemptAt after now);
// nil entries are ignored. The result lists the challenges in the order
// they were picked.
//
// The same input always gives the same result. The result depends only on
// the challenges, not on their order in all, as long as no two share
// creation time, name, namespace and UID (a store that keeps (namespace,
// name) unique guarantees it).
func Schedule(all []*Challenge, now time.Time, cfg SchedulerConfig) []*Challenge {
	maxInFlight := cfg.MaxInFlight
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	budget := cfg.AccountBudget
	if budget <= 0 {
		budget = DefaultAccountBudget
	}

	busy := map[nameType]bool{}    // (name, type) pairs in flight
	perAccount := map[string]int{} // challenges in flight per account
	inFlight := 0
	candidates := make([]*Challenge, 0, len(all))
	for _, c := range all {
		switch {
		case c == nil:
		case c.Status.Processing:
			inFlight++
			busy[nameTypeOf(c)] = true
			perAccount[c.Spec.Account]++
		case c.Status.State.Final():
		case c.Status.NextAttemptAt != nil && now.Before(*c.Status.NextAttemptAt):
			// It gave its slot back until its retry is due.
		default:
			candidates = append(candidates, c)
		}
	}
	capacity := maxInFlight - inFlight
	if cfg.MaxPerPass > 0 {
		capacity = min(capacity, cfg.MaxPerPass)
	}
	if capacity <= 0 || len(candidates) == 0 {
		return nil
	}

	// Sorted oldest first, the candidates fill each group's queue in
	// order, and the groups appear in the order of their oldest one.
	slices.SortFunc(candidates, compareAge)
	var groups []*queue
	byKey := map[groupKey]*queue{}
	for _, c := range candidates {
		k := groupKey{c.Spec.Issuer, c.Spec.Account}
		q := byKey[k]
		if q == nil {
			q = &queue{}
			byKey[k] = q
			groups = append(groups, q)
		}
		q.waiting = append(q.waiting, c)
	}

	var out []*Challenge
	for len(groups) > 0 && len(out) < capacity {
		for _, q := range groups {
			if len(out) == capacity {
				break
			}
			if c := q.next(busy, perAccount, budget); c != nil {
				busy[nameTypeOf(c)] = true
				perAccount[c.Spec.Account]++
				out = append(out, c)
			}
		}
		// A group that took nothing this round has nothing left to take.
		groups = slices.DeleteFunc(groups, func(q *queue) bool { return len(q.waiting) == 0 })
	}
	return out
}

// nameType is what at most one challenge in flight may solve: a DNS name
// (lower-cased) and a challenge type.
type nameType struct {
	name string
	typ  Type
}

func nameTypeOf(c *Challenge) nameType {
	return nameType{strings.ToLower(c.Spec.DNSName), c.Spec.Type}
}

// groupKey names a group of challenges that take turns together.
type groupKey struct {
	issuer  Issuer
	account string
}

// compareAge orders challenges oldest first: by creation time, then name,
// namespace and UID.
func compareAge(a, b *Challenge) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.UID, b.UID))
}

// queue is one group's candidates, oldest first.
type queue struct {
	waiting []*Challenge
}

// next takes the group's oldest candidate that may start: it drops those
// whose (name, type) is in flight (it stays so for the rest of the pass),
// and empties the queue when the group's account has no budget left.
func (q *queue) next(busy map[nameType]bool, perAccount map[string]int, budget int) *Challenge {
	for len(q.waiting) > 0 {
		c := q.waiting[0]
		q.waiting = q.waiting[1:]
		if busy[nameTypeOf(c)] {
			continue
		}
		if perAccount[c.Spec.Account] >= budget {
			q.waiting = nil
			return nil
		}
		return c
	}
	return nil
}

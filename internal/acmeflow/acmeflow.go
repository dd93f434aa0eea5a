// Package acmeflow is the small host loop that drives ACME orders to
// certificates with the order and challenge machines, carrying out their
// actions with acmeclient: the pattern a host copies, and what the
// reference host, the integration tests and the quickstart use.
//
// It keeps its orders and challenges in memory. Each Step decides for
// every order and every challenge on the state as it is, carries out the
// actions in order (stopping at the first error of a resource: the next
// step repairs it), writes back what the calls return, and says when
// something is next due. It never sleeps: Run does, through a wait
// function the caller chooses (real time, or a fake clock).
package acmeflow

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// Event is one decision that had effects, for a timeline.
type Event struct {
	Time     time.Time
	Resource string // "order/<name>" or "challenge/<name>"
	Reason   string
	Message  string
	Actions  []string
	Err      error
}

// String is one readable line.
func (e Event) String() string {
	s := fmt.Sprintf("%s %-28s %-22s %s", e.Time.UTC().Format("15:04:05.000"), e.Resource, e.Reason, strings.Join(e.Actions, " "))
	if e.Err != nil {
		s += " error: " + e.Err.Error()
	}
	return s
}

// Runner drives orders. Set the fields before the first Step; its methods
// are safe for concurrent use.
type Runner struct {
	Client  *acmeclient.Client
	Solvers acmeclient.Solvers
	// OrderConfig, ChallengeConfig and Scheduler configure the machines.
	OrderConfig     order.Config
	ChallengeConfig challenge.Config
	Scheduler       challenge.SchedulerConfig
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Trace, when set, receives every decision that had effects.
	Trace func(Event)

	mu         sync.Mutex
	orders     map[string]*order.Order
	challenges map[string]*challenge.Challenge
	owner      map[string]string // challenge → order
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Add starts driving an order (a copy of it). An order of the same name is
// replaced.
func (r *Runner) Add(o order.Order) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orders == nil {
		r.orders, r.challenges, r.owner = map[string]*order.Order{}, map[string]*challenge.Challenge{}, map[string]string{}
	}
	r.orders[o.Name] = &o
}

// Order returns a copy of an order's current state.
func (r *Runner) Order(name string) (order.Order, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.orders[name]
	if !ok {
		return order.Order{}, false
	}
	return *o, true
}

// Remove stops driving an order, cleaning up its presented challenges.
func (r *Runner) Remove(ctx context.Context, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(ctx, name)
}

func (r *Runner) removeLocked(ctx context.Context, name string) {
	for cn, on := range r.owner {
		if on == name {
			r.deleteChallengeLocked(ctx, cn)
		}
	}
	delete(r.orders, name)
}

func (r *Runner) deleteChallengeLocked(ctx context.Context, name string) {
	if c, ok := r.challenges[name]; ok && c.Status.Presented {
		sp := c.Spec
		_ = r.Solvers.CleanUp(ctx, challenge.CleanUp{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key, Solver: sp.Solver})
	}
	delete(r.challenges, name)
	delete(r.owner, name)
}

// Step runs one pass over every order and challenge. acted reports whether
// any action was carried out (then stepping again at once makes progress);
// next is the earliest time a machine asked to be looked at again (zero:
// nothing asked).
func (r *Runner) Step(ctx context.Context) (acted bool, next time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.orders))
	for n := range r.orders {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a, t := r.stepOrder(ctx, n)
		acted = acted || a
		next = earliest(next, t)
	}

	all := make([]*challenge.Challenge, 0, len(r.challenges))
	for _, c := range r.challenges {
		all = append(all, c)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	for _, c := range challenge.Schedule(all, r.now(), r.Scheduler) {
		c.Status.Processing = true
		acted = true
	}
	for _, c := range all {
		a, t := r.stepChallenge(ctx, c)
		acted = acted || a
		next = earliest(next, t)
	}
	return acted, next
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

func (r *Runner) owned(name string) []*challenge.Challenge {
	var out []*challenge.Challenge
	for cn, on := range r.owner {
		if on == name {
			out = append(out, r.challenges[cn])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r *Runner) stepOrder(ctx context.Context, name string) (bool, time.Time) {
	o := r.orders[name]
	now := r.now()
	res := order.Decide(o, r.owned(name), now, r.OrderConfig)
	if len(res.Actions) == 0 {
		return false, res.RequeueAt
	}
	ev := Event{Time: now, Resource: "order/" + name, Reason: res.Reason, Message: res.Message}
	var err error
	for _, a := range res.Actions {
		ev.Actions = append(ev.Actions, a.String())
		if err = r.carryOutOrder(ctx, o, a); err != nil {
			break
		}
	}
	ev.Err = err
	if r.Trace != nil {
		r.Trace(ev)
	}
	return true, res.RequeueAt
}

func (r *Runner) carryOutOrder(ctx context.Context, o *order.Order, a order.Action) error {
	var err error
	switch a := a.(type) {
	case order.CreateOrder:
		o.Status, err = r.Client.CreateOrder(ctx, o.Status, a)
	case order.GetAuthorization:
		o.Status, err = r.Client.GetAuthorization(ctx, o.Status, a)
	case order.Sync:
		o.Status, err = r.Client.SyncOrder(ctx, o.Status, a)
	case order.Finalize:
		o.Status, err = r.Client.Finalize(ctx, o.Status, a)
	case order.FetchCertificate:
		o.Status, err = r.Client.FetchCertificate(ctx, o.Status, a)
	case order.CreateChallenge:
		if _, exists := r.challenges[a.Challenge.Name]; !exists { // AlreadyExists is success
			c := a.Challenge
			r.challenges[c.Name] = &c
			r.owner[c.Name] = o.Name
		}
	case order.DeleteChallenge:
		r.deleteChallengeLocked(ctx, a.Name)
	case order.UpdateStatus:
		o.Status = a.Status
	case order.DeleteOrder:
		r.removeLocked(ctx, o.Name)
	default:
		err = fmt.Errorf("acmeflow: unknown order action %T", a)
	}
	return err
}

func (r *Runner) stepChallenge(ctx context.Context, c *challenge.Challenge) (bool, time.Time) {
	now := r.now()
	res := challenge.Decide(c, now, r.ChallengeConfig)
	if len(res.Actions) == 0 {
		return false, res.RequeueAt
	}
	ev := Event{Time: now, Resource: "challenge/" + c.Name, Reason: res.Reason, Message: res.Message}
	var err error
	for _, a := range res.Actions {
		ev.Actions = append(ev.Actions, a.String())
		if err = r.carryOutChallenge(ctx, c, a, now); err != nil {
			break
		}
	}
	ev.Err = err
	if r.Trace != nil {
		r.Trace(ev)
	}
	return true, res.RequeueAt
}

func (r *Runner) carryOutChallenge(ctx context.Context, c *challenge.Challenge, a challenge.Action, now time.Time) error {
	var err error
	switch a := a.(type) {
	case challenge.Sync:
		c.Status, err = r.Client.SyncChallenge(ctx, c.Status, a)
	case challenge.Accept:
		c.Status, err = r.Client.Accept(ctx, c.Status, a)
	case challenge.Present:
		c.Status, err = r.Solvers.Present(ctx, c.Status, a, now)
	case challenge.SelfCheck:
		// A failed self-check is recorded in the status and checked
		// again later; it does not stop the pass.
		c.Status, _ = r.Solvers.SelfCheck(ctx, c.Status, a, now)
	case challenge.CleanUp:
		err = r.Solvers.CleanUp(ctx, a)
	case challenge.UpdateStatus:
		c.Status = a.Status
	default:
		err = fmt.Errorf("acmeflow: unknown challenge action %T", a)
	}
	return err
}

// ErrOrderFailed is wrapped by Run when the order ends invalid, expired or
// errored.
var ErrOrderFailed = errors.New("acmeflow: order failed")

// Run steps until the named order has its certificate or has failed,
// calling wait between steps that carried out nothing (wait returns when
// the clock has reached until, or an error to stop). It returns the
// order's final state.
func (r *Runner) Run(ctx context.Context, name string, wait func(ctx context.Context, until time.Time) error) (order.Order, error) {
	for {
		o, ok := r.Order(name)
		if !ok {
			return o, fmt.Errorf("acmeflow: no order %q", name)
		}
		if o.Status.State == order.StateValid && len(o.Status.Certificate) > 0 {
			r.Step(ctx) // clean up the challenges
			return o, nil
		}
		if o.Status.State.Failed() {
			r.Step(ctx)
			return o, fmt.Errorf("%w: %s: %s", ErrOrderFailed, o.Status.State, o.Status.Reason)
		}
		if err := ctx.Err(); err != nil {
			return o, err
		}
		acted, next := r.Step(ctx)
		if acted {
			continue
		}
		if next.IsZero() {
			next = r.now().Add(time.Second)
		}
		if err := wait(ctx, next); err != nil {
			return o, err
		}
	}
}

// RealTime is a wait function for Run that sleeps until the wall clock
// reaches until, or the context ends.
func RealTime(ctx context.Context, until time.Time) error {
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

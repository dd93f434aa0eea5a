package acmeclient

import (
	"context"
	"errors"
	"strings"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/certlife/certlife/challenge"
)

// The challenge calls, like the order calls, take the challenge's status
// and the action and return the status to write back, with
// Status.NoteSuccess or Status.NoteFailure (the challenge moved on when
// its state changed or it was accepted); an error that a retry cannot fix
// moves the challenge to "errored". A call cut short by its own context
// returns the status it was given, unchanged: no attempt counted.

// SyncChallenge carries out challenge.Sync with one request: it reads the
// authorization (RFC 8555 §7.5), which lists its challenges with their
// status and error, and writes State (the authorization's when it is final
// or the challenge was accepted, else the challenge's), Reason (the
// server's error) and SyncedAt.
func (c *Client) SyncChallenge(ctx context.Context, st challenge.Status, a challenge.Sync) (challenge.Status, error) {
	now := c.now()
	z, rec, err := oneRequest(c, ctx, "sync challenge", KindAuthorization, now, func(cctx context.Context) (*acme.Authorization, error) {
		return c.acme.GetAuthorization(cctx, a.AuthorizationURL)
	})
	if err != nil {
		return failChallenge(ctx, st, err, now), err
	}
	var ch *acme.Challenge
	listed := make([]string, 0, len(z.Challenges))
	for _, x := range z.Challenges {
		listed = append(listed, x.Type+" "+x.URI)
		if x.URI == a.URL {
			ch = x
		}
	}
	authz := challenge.State(z.Status)
	if ch == nil && !authz.Final() {
		// RFC 8555 §7.1.4: an authorization lists its challenges; one it
		// does not list cannot be validated, and waiting will not change
		// that.
		err := errorf("sync challenge", ErrNotFound, "the challenge %s is not one its authorization %s lists (it lists: %s)",
			urlFor(a.URL), urlFor(a.AuthorizationURL), clip(strings.Join(listed, ", "), maxDetailLen))
		return failChallenge(ctx, st, err, now), err
	}
	before := st.State
	switch {
	case authz.Final() || st.Accepted:
		st.State = authz
	case ch != nil:
		st.State = challenge.State(ch.Status)
	default:
		st.State = authz
	}
	st.Reason = ""
	if ch != nil && ch.Error != nil {
		st.Reason = problemText(ch.Error)
	} else if authz == challenge.StateInvalid {
		for _, x := range z.Challenges {
			if x.Error != nil {
				st.Reason = problemText(x.Error)
			}
		}
	}
	st.SyncedAt = &now
	if st.State != before {
		st.ChangedAt = &now
	}
	st.NoteSuccess(st.State != before)
	if t, ok := ParseRetryAfter(rec.header.Get("Retry-After"), now); ok && !st.State.Final() {
		st.RetryAfter = &t
	}
	return st, nil
}

// Accept carries out challenge.Accept (RFC 8555 §7.5.1): it tells the
// server the challenge is ready and writes Accepted, the returned State and
// SyncedAt (the answer is a read of the challenge too).
//
// A server may refuse to accept a challenge that is no longer pending
// (Pebble answers "malformed"): an earlier accept did land — made by a
// process that stopped before writing Accepted, or whose answer was lost.
// When the server refuses in a way a retry cannot fix, Accept reads the
// challenge once; if it is no longer pending, it was accepted, and Accept
// writes it as such instead of failing the order.
func (c *Client) Accept(ctx context.Context, st challenge.Status, a challenge.Accept) (challenge.Status, error) {
	now := c.now()
	ch, rec, err := oneRequest(c, ctx, "accept challenge", KindChallenge, now, func(cctx context.Context) (*acme.Challenge, error) {
		return c.acme.Accept(cctx, &acme.Challenge{URI: a.URL})
	})
	if err != nil && refusedByServer(err) && ctx.Err() == nil {
		got, grec, gerr := oneRequest(c, ctx, "read challenge", KindChallenge, now, func(cctx context.Context) (*acme.Challenge, error) {
			return c.acme.GetChallenge(cctx, a.URL)
		})
		if gerr == nil && got != nil && got.Status != acme.StatusPending {
			ch, rec, err = got, grec, nil
		}
	}
	if err != nil {
		return failChallenge(ctx, st, err, now), err
	}
	st.Accepted = true
	st.State = challenge.State(ch.Status)
	st.Reason = ""
	if ch.Error != nil {
		st.Reason = problemText(ch.Error)
	}
	st.SyncedAt, st.ChangedAt = &now, &now
	st.NoteSuccess(true)
	if t, ok := ParseRetryAfter(rec.header.Get("Retry-After"), now); ok && !st.State.Final() {
		st.RetryAfter = &t
	}
	return st, nil
}

// failChallenge records an error in a challenge's status, as failOrder
// does in an order's.
func failChallenge(ctx context.Context, st challenge.Status, err error, now time.Time) challenge.Status {
	if ctx.Err() != nil {
		return st
	}
	msg, transient, retryAfter := errorFields(err)
	st.NoteFailure(msg, transient, retryAfter, now)
	if !transient {
		st.State = challenge.StateErrored
		st.Reason = msg
	}
	return st
}

// refusedByServer reports whether err is a refusal the server answered
// with that a retry cannot fix (Retryable): the kind that errors the
// challenge, not a network failure, a server error or a rate limit.
func refusedByServer(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status != 0 && !Retryable(err)
}

package host

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/certlife/certlife/certificate"
)

// DefaultLeaseDuration is the lease a Reconciler takes on a request it
// hands to its issuer when Config.LeaseDuration is zero: four times the
// ACME client's default request timeout (30 s), so that one call of the
// ACME issuer, which may wait that long for each of a few requests, ends
// well within it.
const DefaultLeaseDuration = 2 * time.Minute

// leaseMargin is how long after another replica's lease expires a
// Reconciler asks to look at the request again: a little, so that the
// lease has expired by then.
const leaseMargin = time.Second

// LeaseKey is the key of the lease a Reconciler takes on an object over a
// Leaser store: its kind, namespace, name and UID, so that an object made
// again under the same name is leased apart from the one deleted. None of
// them holds a '/' but the UID, which comes last.
func LeaseKey(kind Kind, namespace, name, uid string) string {
	return string(kind) + "/" + namespace + "/" + name + "/" + uid
}

// String says who holds the lease and until when, for a log line.
func (l Lease) String() string {
	return fmt.Sprintf("lease %s held by %s until %s", l.Key, l.Holder, l.Until.UTC().Format(time.RFC3339))
}

// defaultIdentity names a Reconciler among the replicas that share a
// store when Config.Identity does not: the host name, the process ID and
// a random part, so that two Reconcilers never share one, even in one
// process, nor a restarted process its predecessor's.
func defaultIdentity(rnd io.Reader) (string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	b := make([]byte, 6)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return "", fmt.Errorf("host: making an identity (Config.Identity is empty): %w", err)
	}
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b), nil
}

// leaseState is what a Reconciler over a Leaser keeps of its leases: each
// request lease it holds, by namespace and name, so that it can release
// the lease of a request that is gone, and tell a renewal from a lease
// taken anew.
type leaseState struct {
	leaser Leaser
	held   map[objKey]Lease
}

// takeLease takes or renews the lease of req for the pass at now. ok is
// false when another replica holds it: lease is theirs. fresh is true
// when the lease was not held without a break since the last pass: the
// request may have been answered meanwhile by the replica that held it,
// after req was read.
func (r *Reconciler) takeLease(ctx context.Context, req *certificate.CertificateRequest, now time.Time) (lease Lease, ok, fresh bool, err error) {
	key := LeaseKey(KindRequest, req.Namespace, req.Name, req.UID)
	lease, err = r.lease.leaser.Lease(ctx, key, r.identity, now, now.Add(r.leaseFor))
	if err != nil {
		return lease, false, false, fmt.Errorf("taking the lease of request %s: %w", key, err)
	}
	k := objKey{req.Namespace, req.Name}
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	if lease.Holder != r.identity {
		delete(r.lease.held, k)
		return lease, false, false, nil
	}
	last, had := r.lease.held[k]
	r.lease.held[k] = lease
	return lease, true, !had || last.Key != key || !now.Before(last.Until), nil
}

// extendLease renews the lease of req after its issuer answered, when
// the call took long enough that the lease taken at the pass's start
// has run more than half its course; it never runs past LeaseDuration
// from the clock's time, so a replica that dies holds its requests up
// for one LeaseDuration at most. It returns when the holder should look
// at the request again to renew the lease before it ends: next, or,
// when next is later than that (the issuer asked to be called after
// the lease would end), half a lease before the lease's end. A lease
// found lost — the issuer's call outlasted it — is reported.
func (r *Reconciler) extendLease(ctx context.Context, req *certificate.CertificateRequest, lease Lease, next time.Time) (time.Time, error) {
	now := r.clock.Now()
	if now.Sub(lease.Until) > -r.leaseFor/2 {
		got, err := r.lease.leaser.Lease(ctx, lease.Key, r.identity, now, now.Add(r.leaseFor))
		if err != nil {
			return next, fmt.Errorf("renewing the lease of request %s: %w", lease.Key, err)
		}
		r.leaseMu.Lock()
		if got.Holder == r.identity {
			r.lease.held[objKey{req.Namespace, req.Name}] = got
		}
		r.leaseMu.Unlock()
		if got.Holder != r.identity {
			r.forgetLease(req.Namespace, req.Name)
			return next, fmt.Errorf("the %s: it expired while the issuer answered (Config.LeaseDuration %v must exceed the issuer's longest call)", got, r.leaseFor)
		}
		lease = got
	}
	if renew := lease.Until.Add(-r.leaseFor / 2); !next.IsZero() && next.After(renew) {
		return renew, nil
	}
	return next, nil
}

// releaseLease ends the lease this Reconciler holds of the request
// namespace/name, when it holds one.
func (r *Reconciler) releaseLease(ctx context.Context, namespace, name string) error {
	if r.lease.leaser == nil {
		return nil
	}
	key, ok := r.forgetLease(namespace, name)
	if !ok {
		return nil
	}
	if err := r.lease.leaser.Release(ctx, key, r.identity); err != nil {
		return fmt.Errorf("releasing the lease of request %s (it expires by itself): %w", key, err)
	}
	return nil
}

// forgetLease drops the record of the lease of namespace/name and
// returns its key.
func (r *Reconciler) forgetLease(namespace, name string) (string, bool) {
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	k := objKey{namespace, name}
	l, ok := r.lease.held[k]
	delete(r.lease.held, k)
	return l.Key, ok
}

// heldElsewhere is the error-free outcome of a pass over a request that
// another replica holds: nothing is handed to the issuer, and the
// request is looked at again just after the lease expires.
func heldElsewhere(ev Event, lease Lease) Event {
	ev.Held = &lease
	ev.Next = lease.Until.Add(leaseMargin)
	return ev
}

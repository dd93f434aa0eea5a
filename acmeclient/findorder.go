package acmeclient

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/certlife/certlife/order"
)

// Bounds of FindOrder's search, so that an account with a long history
// costs a bounded number of requests.
const (
	// findOrderPages is how many pages of the account's orders list
	// FindOrder reads at most.
	findOrderPages = 100
	// findOrderReads is how many orders FindOrder reads at most, newest
	// listed first.
	findOrderReads = 25
)

// FindOrder looks among the account's orders (RFC 8555 §7.1.2.1) for one
// that a's newOrder may have created although its answer never arrived —
// the connection dropped after the server created it, or the process
// died before it wrote the order down — so that it is carried on rather
// than ordered again. An order matches when it is pending or ready (not
// finalized yet), for exactly a's identifiers, and for a's profile,
// notBefore and notAfter when a names them; an order skip says is taken
// (another request's) is passed by. ok is false when none matches, or
// when the server keeps no list of orders (Let's Encrypt does not): the
// caller then creates the order. The status found is written as
// CreateOrder writes it.
//
// The search reads the account (one request), at most 100 pages of its
// orders list, and at most 25 orders, the last listed first.
func (c *Client) FindOrder(ctx context.Context, st order.Status, a order.CreateOrder, skip func(url string) bool) (found order.Status, ok bool, err error) {
	const op = "find order"
	now := c.now()
	if _, err := c.account(); err != nil {
		return st, false, err
	}
	ordersURL, err := c.ordersURL(ctx)
	if err != nil || ordersURL == "" {
		return st, false, err
	}
	if err := checkURL(op, ordersURL, "the account's orders URL", c.allowHTTP); err != nil {
		return st, false, err
	}
	var urls []string
	for page, next := 0, ordersURL; next != "" && page < findOrderPages; page++ {
		rec, body, err := c.signedPost(ctx, KindOther, next, nil)
		if err != nil {
			return st, false, classify(op, err, rec, now)
		}
		var list struct {
			Orders []string `json:"orders"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return st, false, errorf(op, ErrServer, "the account's orders list: %v", err)
		}
		urls = append(urls, list.Orders...)
		next = ""
		if n := linkRel(header(rec), "next"); len(n) > 0 && !slices.Contains(n, ordersURL) {
			next = n[0]
			if err := checkURL(op, next, "the account's orders list, as its next page,", c.allowHTTP); err != nil {
				return st, false, err
			}
		}
	}
	reads := 0
	for _, u := range slices.Backward(urls) {
		if reads == findOrderReads {
			break
		}
		if skip != nil && skip(u) {
			continue
		}
		if err := checkURL(op, u, "the account's orders list, as an order,", c.allowHTTP); err != nil {
			return st, false, err
		}
		reads++
		rec, body, err := c.signedPost(ctx, KindOrder, u, nil)
		if err != nil {
			return st, false, classify(op, err, rec, now)
		}
		o, err := c.decodeOrder(body, rec)
		if err != nil {
			return st, false, errorf(op, ErrServer, "the order %s: %v", urlFor(u), err)
		}
		if !o.matches(a) {
			continue
		}
		o.URL = u
		if err := c.checkOrder(op, o, u); err != nil {
			return st, false, err
		}
		return created(st, o, a, now), true, nil
	}
	return st, false, nil
}

// ordersURL is the account's orders URL, read once; "" when the server
// keeps none.
func (c *Client) ordersURL(ctx context.Context) (string, error) {
	c.mu.Lock()
	u, known := c.orders, c.ordersKnown
	c.mu.Unlock()
	if known {
		return u, nil
	}
	cctx, rec := withCall(ctx, KindAccount)
	a, err := c.acme.GetReg(cctx, "")
	if err != nil {
		return "", classify("find order", err, rec, c.now())
	}
	c.mu.Lock()
	c.orders, c.ordersKnown = a.OrdersURL, true
	c.mu.Unlock()
	return a.OrdersURL, nil
}

// matches reports whether the order can stand for the one a asks for:
// not finalized yet, for exactly its identifiers, and for its profile
// and validity when it names them.
func (o *wireOrder) matches(a order.CreateOrder) bool {
	if o.Status != string(order.StatePending) && o.Status != string(order.StateReady) {
		return false
	}
	if a.Profile != "" && o.Profile != a.Profile {
		return false
	}
	if !sameSecond(a.NotBefore, o.NotBefore) || !sameSecond(a.NotAfter, o.NotAfter) {
		return false
	}
	want := make([]string, 0, len(a.DNSNames)+len(a.IPAddresses))
	for _, n := range a.DNSNames {
		want = append(want, "dns:"+strings.ToLower(n))
	}
	for _, ip := range a.IPAddresses {
		if p := net.ParseIP(ip); p != nil {
			ip = p.String()
		}
		want = append(want, "ip:"+ip)
	}
	got := make([]string, 0, len(o.Identifiers))
	for _, id := range o.Identifiers {
		v := strings.ToLower(id.Value)
		if id.Type == "ip" {
			if p := net.ParseIP(v); p != nil {
				v = p.String()
			}
		}
		got = append(got, strings.ToLower(id.Type)+":"+v)
	}
	slices.Sort(want)
	slices.Sort(got)
	return slices.Equal(slices.Compact(want), slices.Compact(got))
}

// sameSecond reports whether the server's time got (RFC 3339) is want to
// the second, or want is nil (not asked for).
func sameSecond(want *time.Time, got string) bool {
	if want == nil {
		return true
	}
	t, err := time.Parse(time.RFC3339, got)
	return err == nil && t.Truncate(time.Second).Equal(want.Truncate(time.Second))
}

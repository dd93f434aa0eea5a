package acmeclient_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// recorder is a libdns provider that passes every call to the test DNS
// server's and notes what was written where ("+name value", "-name
// value").
type recorder struct {
	*acmetest.DNS
	mu    sync.Mutex
	calls []string
}

func (r *recorder) note(op, zone string, recs []libdns.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		rr := rec.RR()
		r.calls = append(r.calls, op+libdns.AbsoluteName(rr.Name, zone)+" "+rr.Data)
	}
}

func (r *recorder) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	r.note("+", zone, recs)
	return r.DNS.AppendRecords(ctx, zone, recs)
}

func (r *recorder) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	r.note("-", zone, recs)
	return r.DNS.DeleteRecords(ctx, zone, recs)
}

func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// appendDelete hides the test server's GetRecords: a provider that can
// only add and delete.
type appendDelete struct {
	libdns.RecordAppender
	libdns.RecordDeleter
}

// A request is answered over DNS-01 through a libdns provider, the zone
// found by its SOA and the value checked at the zone's authoritative
// server, found by its NS; nothing stays in the zone.
func TestLibDNSPresenterIssues(t *testing.T) {
	tests := map[string]struct {
		names  []string
		follow bool
		setup  func(d *acmetest.DNS)
		// record is where the values are written.
		record string
	}{
		"one name": {
			names:  []string{"www.libdns.example"},
			record: "_acme-challenge.www.libdns.example.",
		},
		"a wildcard and its base name: one record name, two values": {
			names:  []string{"*.wild.libdns.example", "wild.libdns.example"},
			record: "_acme-challenge.wild.libdns.example.",
		},
		"a name whose record is an alias, followed into another zone": {
			names:  []string{"www.customer.example"},
			follow: true,
			setup: func(d *acmetest.DNS) {
				d.AddZone("customer.example")
				d.SetCNAME("_acme-challenge.www.customer.example", "www-customer.acme.delegated.example")
			},
			record: "www-customer.acme.delegated.example.",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var rec *recorder
			e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) {
				d := c.Solvers.DNS01.(*acmetest.DNS) // the server's
				d.AddZone("libdns.example")
				d.AddZone("delegated.example")
				if tc.setup != nil {
					tc.setup(d)
				}
				rec = &recorder{DNS: d}
				c.Solvers = acmeclient.Solvers{
					DNS01: acmeclient.LibDNSPresenter{Provider: rec, Resolver: d.Addr(), FollowCNAME: tc.follow, Timeout: 2 * time.Second},
					DNS01Check: acmeclient.DNS01Checker{Resolver: d.Addr(), Port: d.Port(), FollowCNAME: tc.follow,
						Timeout: 2 * time.Second},
				}
			})
			r, key := newRequest(t, "libdns-1", tc.names...)
			res := drive(t, timeout(t), e.issuer, r)
			if t.Failed() {
				e.logEvents(t)
			}
			assert.Equal(t, order.ReasonDone, res.Reason)
			leafOf(t, e.srv, r, key, tc.names...)

			calls := rec.Calls()
			var added, deleted []string
			for _, c := range calls {
				op, rest := c[:1], c[1:]
				recName, value, _ := strings.Cut(rest, " ")
				assert.Equal(t, tc.record, recName, "%s written at another name than %s", c, tc.record)
				if op == "+" {
					added = append(added, value)
				} else {
					deleted = append(deleted, value)
				}
			}
			assert.Len(t, added, len(tc.names), "one value added per name: %v", calls)
			assert.ElementsMatch(t, added, deleted, "each value added is deleted: %v", calls)
			assert.Empty(t, e.srv.DNS().TXT(tc.record), "DNS-01 values left behind")
		})
	}
}

// A wildcard and its base name share one record name: each presentation
// adds its own value beside the other's, and cleaning up one leaves the
// other's, whether the provider can list the zone or only add and delete.
func TestLibDNSPresenterSharesTheRecordName(t *testing.T) {
	d, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(d.Close)
	d.AddZone("libdns.example")
	ctx := timeout(t)
	wild := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "shared.libdns.example", Wildcard: true, KeyAuthorization: "wild.ka"}
	base := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "shared.libdns.example", KeyAuthorization: "base.ka"}
	name := acmeclient.DNS01Name("shared.libdns.example")
	for desc, prov := range map[string]acmeclient.LibDNSProvider{
		"a provider that lists the zone":     d,
		"a provider that adds and deletes":   appendDelete{d, d},
		"a configured zone, found by no SOA": d,
	} {
		t.Run(desc, func(t *testing.T) {
			p := acmeclient.LibDNSPresenter{Provider: prov, Resolver: d.Addr()}
			if strings.HasPrefix(desc, "a configured zone") {
				p = acmeclient.LibDNSPresenter{Provider: prov, Zone: "libdns.example.", Resolver: "127.0.0.1:1"} // the resolver is not asked
			}
			require.NoError(t, p.Present(ctx, wild))
			require.NoError(t, p.Present(ctx, base))
			require.NoError(t, p.Present(ctx, base), "presenting again")
			assert.ElementsMatch(t, []string{wild.DNS01Value(), base.DNS01Value()}, d.TXT(name))
			require.NoError(t, p.CleanUp(ctx, wild))
			assert.Equal(t, []string{base.DNS01Value()}, d.TXT(name), "the base name's value stays")
			require.NoError(t, p.CleanUp(ctx, wild), "cleaning up again")
			assert.Equal(t, []string{base.DNS01Value()}, d.TXT(name))
			require.NoError(t, p.CleanUp(ctx, base))
			assert.Empty(t, d.TXT(name))
		})
	}
}

// Settings that cannot work are errors naming the field and value.
func TestLibDNSPresenterRefuses(t *testing.T) {
	d, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(d.Close)
	d.AddZone("libdns.example")
	p := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.libdns.example", KeyAuthorization: "ka"}
	tests := map[string]struct {
		presenter acmeclient.LibDNSPresenter
		p         acmeclient.Presentation
		want      string
	}{
		"no provider": {want: "LibDNSPresenter.Provider is nil"},
		"a zone that does not hold the name": {
			presenter: acmeclient.LibDNSPresenter{Provider: d, Zone: "other.example"},
			want:      `LibDNSPresenter.Zone "other.example" does not hold the record name _acme-challenge.www.libdns.example.`,
		},
		"a name in no zone the resolver knows": {
			presenter: acmeclient.LibDNSPresenter{Provider: d, Resolver: d.Addr()},
			p:         acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.nozone.example", KeyAuthorization: "ka"},
			want:      "no zone holds _acme-challenge.www.nozone.example.",
		},
		"a zone the provider does not have": {
			presenter: acmeclient.LibDNSPresenter{Provider: appendDelete{d, d}, Zone: "nozone.example"},
			p:         acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.nozone.example", KeyAuthorization: "ka"},
			want:      `adding the DNS-01 TXT record _acme-challenge.www.nozone.example. in zone nozone.example.: acmetest: zone "nozone.example." is not served`,
		},
		"another challenge type": {
			presenter: acmeclient.LibDNSPresenter{Provider: d, Zone: "libdns.example"},
			p:         acmeclient.Presentation{Type: challenge.TypeHTTP01, Identifier: "www.libdns.example", KeyAuthorization: "ka"},
			want:      "LibDNSPresenter presents DNS-01, not http-01",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.p.Identifier == "" {
				tc.p = p
			}
			err := tc.presenter.Present(timeout(t), tc.p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The self-check's failure says which authoritative server lacks which
// value at which name, and what it serves instead; that text is the
// challenge's reason.
func TestDNS01CheckerNamesTheServerThatLacksTheValue(t *testing.T) {
	a, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(a.Close)
	b, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(b.Close)
	ctx := timeout(t)
	p := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.zone.example", KeyAuthorization: "ka"}
	name, value := p.DNS01Name(), p.DNS01Value()
	a.SetTXT(name, value)
	b.SetTXT(name, "stale")
	check := acmeclient.DNS01Checker{Nameservers: []string{a.Addr(), b.Addr()}, Timeout: 2 * time.Second}

	err = check.Check(ctx, p)
	require.ErrorIs(t, err, acmeclient.ErrDNS01NotFound)
	want := fmt.Sprintf(`acmeclient: DNS-01 record not served: %s does not serve %q at %s (it serves "stale")`, b.Addr(), value, name)
	assert.Equal(t, want, err.Error())

	st, err := acmeclient.Solvers{DNS01Check: check}.SelfCheck(ctx, challenge.Status{},
		challenge.SelfCheck{Type: challenge.TypeDNS01, DNSName: p.Identifier, Key: p.KeyAuthorization}, time.Now())
	require.Error(t, err)
	assert.False(t, st.SelfCheckPassed)
	assert.Equal(t, "self-check failed: "+want, st.Reason)

	b.SetTXT(name, value)
	require.NoError(t, check.Check(ctx, p), "once every server serves the value")

	// Discovered servers are named by their NS name.
	a.AddZone("zone.example")
	a.ClearTXT(name, value)
	found := acmeclient.DNS01Checker{Resolver: a.Addr(), Port: a.Port(), Timeout: 2 * time.Second}
	err = found.Check(ctx, p)
	require.ErrorIs(t, err, acmeclient.ErrDNS01NotFound)
	assert.Contains(t, err.Error(), fmt.Sprintf("%s (%s) does not serve %q at %s (it serves no TXT value there)", acmetest.NameserverHost, a.Addr(), value, name))

	// Following aliases where there are none changes nothing.
	follows := found
	follows.FollowCNAME = true
	err = follows.Check(ctx, p)
	require.ErrorIs(t, err, acmeclient.ErrDNS01NotFound)
	assert.Contains(t, err.Error(), fmt.Sprintf("does not serve %q at %s", value, name))
	a.SetTXT(name, value)
	require.NoError(t, follows.Check(ctx, p))
}

// Bounds: an alias loop, a chain longer than MaxCNAMEChain, a resolver
// that never answers and an answer larger than the limit are errors
// that say so, soon; never a hang.
func TestDNS01Bounds(t *testing.T) {
	d, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(d.Close)
	d.AddZone("bounds.example")
	d.SetCNAME("_acme-challenge.loop.bounds.example", "a.bounds.example")
	d.SetCNAME("a.bounds.example", "b.bounds.example")
	d.SetCNAME("b.bounds.example", "a.bounds.example")
	d.SetCNAME("_acme-challenge.long.bounds.example", "hop1.bounds.example")
	for i := 1; i <= acmeclient.MaxCNAMEChain+1; i++ {
		d.SetCNAME(fmt.Sprintf("hop%d.bounds.example", i), fmt.Sprintf("hop%d.bounds.example", i+1))
	}
	for i := range 6 {
		d.SetTXT("_acme-challenge.big.bounds.example", fmt.Sprintf("%043d", i))
	}
	silent, err := net.ListenPacket("udp", "127.0.0.1:0") // reads nothing, answers nothing
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })

	pres := func(id string) acmeclient.Presentation {
		return acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: id, KeyAuthorization: "ka"}
	}
	tests := map[string]struct {
		p         acmeclient.Presentation
		presenter acmeclient.LibDNSPresenter
		checker   acmeclient.DNS01Checker
		want      string
		chain     bool // wraps ErrCNAMEChain
	}{
		"an alias loop": {
			p:         pres("loop.bounds.example"),
			presenter: acmeclient.LibDNSPresenter{Provider: d, Resolver: d.Addr(), FollowCNAME: true},
			checker:   acmeclient.DNS01Checker{Resolver: d.Addr(), FollowCNAME: true},
			want:      "acmeclient: CNAME chain: a loop: _acme-challenge.loop.bounds.example. → a.bounds.example. → b.bounds.example. → a.bounds.example.",
			chain:     true,
		},
		"a chain of more aliases than MaxCNAMEChain": {
			p:         pres("long.bounds.example"),
			presenter: acmeclient.LibDNSPresenter{Provider: d, Resolver: d.Addr(), FollowCNAME: true},
			checker:   acmeclient.DNS01Checker{Resolver: d.Addr(), FollowCNAME: true},
			want:      fmt.Sprintf("acmeclient: CNAME chain: more than %d aliases from _acme-challenge.long.bounds.example.", acmeclient.MaxCNAMEChain),
			chain:     true,
		},
		"a resolver that never answers": {
			p:         pres("www.bounds.example"),
			presenter: acmeclient.LibDNSPresenter{Provider: d, Resolver: silent.LocalAddr().String(), Timeout: 100 * time.Millisecond},
			checker:   acmeclient.DNS01Checker{Resolver: silent.LocalAddr().String(), Timeout: 100 * time.Millisecond},
			want:      "at " + silent.LocalAddr().String() + ": read udp",
		},
		"an answer larger than the limit": {
			p:       pres("big.bounds.example"),
			checker: acmeclient.DNS01Checker{Nameservers: []string{d.Addr()}, MaxAnswerSize: 300},
			want:    "the answer of ",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := timeout(t)
			if tc.presenter.Provider != nil {
				err := tc.presenter.Present(ctx, tc.p)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want, "Present")
				if tc.chain {
					assert.ErrorIs(t, err, acmeclient.ErrCNAMEChain)
				}
			}
			err := tc.checker.Check(ctx, tc.p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want, "Check")
			assert.NotErrorIs(t, err, acmeclient.ErrDNS01NotFound, "a failed query is no answer without the value")
			if tc.chain {
				assert.ErrorIs(t, err, acmeclient.ErrCNAMEChain)
			}
			assert.NoError(t, ctx.Err(), "the bound did not hold")
		})
	}
	assert.Empty(t, d.TXT("a.bounds.example"))
}

// An answer too large for UDP comes truncated and is read again over TCP:
// a value after forty others is found.
func TestDNS01CheckerReadsLargeAnswersOverTCP(t *testing.T) {
	d, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(d.Close)
	p := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "many.example", KeyAuthorization: "ka"}
	for i := range 40 {
		d.SetTXT(p.DNS01Name(), fmt.Sprintf("%043d", i))
	}
	check := acmeclient.DNS01Checker{Nameservers: []string{d.Addr()}, Timeout: 2 * time.Second}
	require.ErrorIs(t, check.Check(timeout(t), p), acmeclient.ErrDNS01NotFound)
	d.SetTXT(p.DNS01Name(), p.DNS01Value())
	require.NoError(t, check.Check(timeout(t), p))
}

package operator

import (
	"context"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
)

// The RFC 2136 presenter as a libdns provider: a LibDNSPresenter over it
// finds the zone by its SOA, adds a wildcard's and its base name's values
// at their one record name with TSIG-signed updates, and deletes each
// alone; records other than TXT are refused, and no error shows the
// secret.
func TestRFC2136AsLibDNSProvider(t *testing.T) {
	ctx := context.Background()
	d := startRFC2136Server(t, "example.test.", "certlife.", rfc2136Secret, false)
	r := &RFC2136{Nameserver: d.addr, TSIGKeyName: "certlife", TSIGAlgorithm: "HMACSHA256", TSIGSecret: rfc2136Secret}
	p := acmeclient.LibDNSPresenter{Provider: r, Resolver: d.addr, Timeout: 2 * time.Second}
	base, wild := dns01("www.example.test", false, "t1.thumb"), dns01("www.example.test", true, "t2.thumb")
	name := base.DNS01Name()

	require.NoError(t, p.Present(ctx, base))
	require.NoError(t, p.Present(ctx, wild))
	values, ttls := d.served(t, name)
	assert.ElementsMatch(t, []string{base.DNS01Value(), wild.DNS01Value()}, values)
	assert.Equal(t, []uint32{60, 60}, ttls, "the presenter's TTL")

	require.NoError(t, p.CleanUp(ctx, wild))
	values, _ = d.served(t, name)
	assert.Equal(t, []string{base.DNS01Value()}, values)
	require.NoError(t, p.CleanUp(ctx, base))
	values, _ = d.served(t, name)
	assert.Empty(t, values)
	assert.Equal(t, 4, d.updates())

	_, err := r.AppendRecords(ctx, "example.test.", []libdns.Record{libdns.CNAME{Name: "x", Target: "y.example.test."}})
	assert.EqualError(t, err, "rfc2136: CNAME record x: only TXT records are written")
	_, err = r.AppendRecords(ctx, "other.test.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.www.example.test.", Text: "v"}})
	assert.EqualError(t, err, "rfc2136: record name _acme-challenge.www.example.test. is not in zone other.test.")

	bad := &RFC2136{Nameserver: d.addr, TSIGKeyName: "certlife", TSIGSecret: "d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldA=="}
	_, err = bad.AppendRecords(ctx, "example.test.", []libdns.Record{libdns.TXT{Name: "_acme-challenge.www", Text: "v", TTL: 90 * time.Second}})
	require.Error(t, err, "a TSIG key the server does not know")
	noSecret(t, err)
	assert.Contains(t, err.Error(), `rfc2136: add TXT "v" at _acme-challenge.www.example.test. in zone example.test.`)
	assert.Equal(t, 4, d.updates(), "nothing applied")
}

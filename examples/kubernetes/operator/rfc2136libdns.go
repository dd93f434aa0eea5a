package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certlife/certlife/acmeclient"
)

// RFC2136 is also a libdns provider of TXT records, so that an
// acmeclient.LibDNSPresenter can write through it (finding the zone and
// following aliases through its Resolver) as through any other provider.
var _ acmeclient.LibDNSProvider = (*RFC2136)(nil)

// AppendRecords adds TXT records to zone with one RFC 2136 update each,
// beside any values at their names; adding a value that is there changes
// nothing. A record's zero TTL is r's. Only TXT records can be added.
// It returns the records added.
func (r *RFC2136) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	return r.libdnsUpdate(ctx, zone, recs, true)
}

// DeleteRecords deletes TXT values from zone with one RFC 2136 update
// each, whatever their TTL, leaving any other value at their names;
// deleting a value that is not there changes nothing. It returns the
// records it was given.
func (r *RFC2136) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	return r.libdnsUpdate(ctx, zone, recs, false)
}

func (r *RFC2136) libdnsUpdate(ctx context.Context, zone string, recs []libdns.Record, add bool) ([]libdns.Record, error) {
	alg, err := r.check()
	if err != nil {
		return nil, err
	}
	if _, ok := dns.IsDomainName(zone); !ok || strings.Trim(zone, ".") == "" {
		return nil, fmt.Errorf("rfc2136: zone %q is not a domain name", zone)
	}
	zone = dns.CanonicalName(zone)
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	var done []libdns.Record
	for _, rec := range recs {
		rr := rec.RR()
		if rr.Type != "TXT" {
			return done, fmt.Errorf("rfc2136: %s record %s: only TXT records are written", rr.Type, rr.Name)
		}
		name := dns.CanonicalName(libdns.AbsoluteName(rr.Name, zone))
		if !dns.IsSubDomain(zone, name) {
			return done, fmt.Errorf("rfc2136: record name %s is not in zone %s", name, zone)
		}
		ttl := r.ttl()
		if rr.TTL > 0 {
			ttl = uint32(min(rr.TTL, 1<<31*time.Second-time.Second) / time.Second)
		}
		if err := r.send(ctx, alg, zone, name, rr.Data, ttl, add); err != nil {
			return done, err
		}
		done = append(done, rec)
	}
	return done, nil
}

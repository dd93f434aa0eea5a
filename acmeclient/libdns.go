package acmeclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/certlife/certlife/challenge"
)

// LibDNSProvider is what a LibDNSPresenter needs of a DNS provider: the
// record interfaces of github.com/libdns/libdns that add and delete
// records. Every libdns provider package that can change a zone has
// them (github.com/libdns/cloudflare, route53, …). A provider that is
// also a libdns.RecordGetter is asked what the zone holds first, so that
// presenting twice adds nothing and cleaning up deletes the records as
// the provider returned them.
type LibDNSProvider interface {
	libdns.RecordAppender
	libdns.RecordDeleter
}

// LibDNSPresenter is a DNS-01 Presenter over any libdns provider: Present
// adds the presentation's TXT value at its record name
// ("_acme-challenge.<name>", DNS01Name; the value is DNS01Value) beside
// any values there — a wildcard and its base name share the name, each
// with its own value — and CleanUp deletes that value only.
//
// The zone the record is written in is Zone, or, when Zone is empty,
// found on every call by asking Resolver for the SOA record at the record
// name and, one label up at a time, at its parents, until one is found.
// With FollowCNAME (cert-manager's cnameStrategy: Follow), a record name
// that is an alias (CNAME) is followed through Resolver to the end of its
// chain, and the value is written there: a zone the provider can change
// can answer for a name in a zone it cannot. A loop, or more than
// MaxCNAMEChain aliases, is an error wrapping ErrCNAMEChain. Pair it with
// a DNS01Checker with the same FollowCNAME, which looks where the value
// was written.
//
// A LibDNSPresenter holds no state and is safe for concurrent use if its
// provider is (as libdns requires); its fields must not change while it
// is in use.
type LibDNSPresenter struct {
	// Provider is the DNS provider, for example a
	// *cloudflare.Provider of github.com/libdns/cloudflare. Required.
	Provider LibDNSProvider
	// Zone is the zone to write in, for example "example.com.". Empty
	// means found through Resolver. With FollowCNAME, it is the zone of
	// the chain's end.
	Zone string
	// Resolver is a recursive resolver (host:port) for finding the zone
	// and following aliases; empty means the first of /etc/resolv.conf.
	Resolver string
	// FollowCNAME writes the value at the end of the record name's chain
	// of aliases.
	FollowCNAME bool
	// TTL of the TXT records written; zero means 60 s.
	TTL time.Duration
	// Timeout of each DNS query (zone discovery, aliases); zero means
	// 5 s. The provider's calls are bounded by the call's context.
	Timeout time.Duration
}

var _ Presenter = LibDNSPresenter{}

// target is where p's value goes: the zone, and the record with its
// name relative to the zone.
func (l LibDNSPresenter) target(ctx context.Context, p Presentation) (zone string, rec libdns.TXT, err error) {
	if l.Provider == nil {
		return "", rec, errors.New("acmeclient: LibDNSPresenter.Provider is nil")
	}
	if p.Type != "" && p.Type != challenge.TypeDNS01 {
		return "", rec, fmt.Errorf("acmeclient: LibDNSPresenter presents DNS-01, not %s", p.Type)
	}
	if strings.TrimPrefix(p.Identifier, "*.") == "" {
		return "", rec, errors.New("acmeclient: DNS-01 presentation without an identifier")
	}
	if _, ok := dns.IsDomainName(p.Identifier); !ok {
		return "", rec, fmt.Errorf("acmeclient: DNS-01 identifier %q is not a domain name", p.Identifier)
	}
	q := dnsQuerier{timeout: l.Timeout}
	name := p.DNS01Name()
	needResolver := l.FollowCNAME || l.Zone == ""
	resolver := ""
	if needResolver {
		if resolver, err = resolverAddr(l.Resolver, "LibDNSPresenter.Resolver"); err != nil {
			return "", rec, err
		}
	}
	if l.FollowCNAME {
		if name, err = q.followCNAME(ctx, resolver, name); err != nil {
			return "", rec, err
		}
	}
	zone = dns.Fqdn(strings.ToLower(l.Zone))
	if l.Zone == "" {
		if zone, err = q.findZone(ctx, resolver, name); err != nil {
			return "", rec, err
		}
	} else if !dns.IsSubDomain(zone, name) {
		return "", rec, fmt.Errorf("acmeclient: LibDNSPresenter.Zone %q does not hold the record name %s", l.Zone, name)
	}
	ttl := l.TTL
	if ttl <= 0 {
		ttl = 60 * time.Second
	}
	return zone, libdns.TXT{Name: libdns.RelativeName(name, zone), TTL: ttl, Text: p.DNS01Value()}, nil
}

// Present adds p's TXT value at its record name (or the end of its
// aliases), beside any values there. With a provider that is a
// libdns.RecordGetter, a value already there is not added again.
func (l LibDNSPresenter) Present(ctx context.Context, p Presentation) error {
	zone, rec, err := l.target(ctx, p)
	if err != nil {
		return err
	}
	if g, ok := l.Provider.(libdns.RecordGetter); ok {
		have, err := l.existing(ctx, g, zone, rec)
		if err != nil {
			return err
		}
		if len(have) > 0 {
			return nil
		}
	}
	if _, err := l.Provider.AppendRecords(ctx, zone, []libdns.Record{rec}); err != nil {
		return fmt.Errorf("acmeclient: adding the DNS-01 TXT record %s in zone %s: %w", libdns.AbsoluteName(rec.Name, zone), zone, err)
	}
	return nil
}

// CleanUp deletes p's TXT value, leaving any other value at the name.
// With a provider that is a libdns.RecordGetter, it deletes the records
// the provider returned (none: nothing to do); otherwise the record by
// name and value, whatever its TTL. Idempotent.
func (l LibDNSPresenter) CleanUp(ctx context.Context, p Presentation) error {
	zone, rec, err := l.target(ctx, p)
	if err != nil {
		return err
	}
	del := []libdns.Record{libdns.TXT{Name: rec.Name, Text: rec.Text}} // TTL 0: any TTL
	if g, ok := l.Provider.(libdns.RecordGetter); ok {
		if del, err = l.existing(ctx, g, zone, rec); err != nil || len(del) == 0 {
			return err
		}
	}
	if _, err := l.Provider.DeleteRecords(ctx, zone, del); err != nil {
		return fmt.Errorf("acmeclient: deleting the DNS-01 TXT record %s in zone %s: %w", libdns.AbsoluteName(rec.Name, zone), zone, err)
	}
	return nil
}

// existing returns the records of zone that are rec's TXT value at rec's
// name, as the provider returned them.
func (l LibDNSPresenter) existing(ctx context.Context, g libdns.RecordGetter, zone string, rec libdns.TXT) ([]libdns.Record, error) {
	recs, err := g.GetRecords(ctx, zone)
	if err != nil {
		return nil, fmt.Errorf("acmeclient: reading zone %s: %w", zone, err)
	}
	want := strings.ToLower(libdns.AbsoluteName(rec.Name, zone))
	var out []libdns.Record
	for _, r := range recs {
		rr := r.RR()
		if rr.Type != "TXT" || dns.Fqdn(strings.ToLower(libdns.AbsoluteName(rr.Name, zone))) != want {
			continue
		}
		if rr.Data == rec.Text || strings.Trim(rr.Data, `"`) == rec.Text {
			out = append(out, r)
		}
	}
	return out, nil
}

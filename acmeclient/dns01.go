package acmeclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Bounds of the DNS lookups of DNS-01 presenters and self-checks.
const (
	// MaxCNAMEChain is how many aliases (CNAME records) a DNS-01
	// presenter or self-check that follows them goes through from the
	// record name before it gives up.
	MaxCNAMEChain = 8
	// defaultDNSTimeout is a query's timeout when none is set.
	defaultDNSTimeout = 5 * time.Second
	// defaultMaxNameservers is how many authoritative servers a
	// self-check asks when none is set.
	defaultMaxNameservers = 8
	// defaultMaxAnswerSize is the largest DNS answer read, in bytes,
	// when none is set.
	defaultMaxAnswerSize = 16 << 10
	// ednsSize is the UDP answer size queries offer (EDNS0): larger
	// answers come truncated, and are asked again over TCP.
	ednsSize = 1232
)

// ErrDNS01NotFound is wrapped when an authoritative server does not serve
// the value yet.
var ErrDNS01NotFound = errors.New("acmeclient: DNS-01 record not served")

// ErrCNAMEChain is wrapped when following the aliases of a record name
// meets a loop or more than MaxCNAMEChain of them.
var ErrCNAMEChain = errors.New("acmeclient: CNAME chain")

// dnsQuerier makes single DNS exchanges within bounds.
type dnsQuerier struct {
	timeout time.Duration // of each exchange; 0: defaultDNSTimeout
	maxSize int           // of an answer, in bytes; 0: defaultMaxAnswerSize
}

// exchange asks server one question, over UDP and again over TCP when
// the answer is truncated. An answer other than NOERROR or NXDOMAIN, or
// one larger than the bound, is an error.
func (q dnsQuerier) exchange(ctx context.Context, server, name string, qtype uint16, recurse bool) (*dns.Msg, error) {
	t := q.timeout
	if t <= 0 {
		t = defaultDNSTimeout
	}
	limit := q.maxSize
	if limit <= 0 {
		limit = defaultMaxAnswerSize
	}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = recurse
	m.SetEdns0(ednsSize, false)
	what := fmt.Sprintf("DNS %s query for %s at %s", dns.TypeToString[qtype], name, server)
	c := &dns.Client{Timeout: t, UDPSize: ednsSize}
	in, _, err := c.ExchangeContext(ctx, m, server)
	if err != nil {
		return nil, fmt.Errorf("acmeclient: %s: %w", what, err)
	}
	if in.Truncated {
		c.Net = "tcp"
		if in, _, err = c.ExchangeContext(ctx, m, server); err != nil {
			return nil, fmt.Errorf("acmeclient: %s over TCP: %w", what, err)
		}
	}
	if n := in.Len(); n > limit {
		return nil, fmt.Errorf("acmeclient: %s: the answer of %d bytes is larger than the limit of %d", what, n, limit)
	}
	if in.Rcode != dns.RcodeSuccess && in.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("acmeclient: %s: answered %s", what, dns.RcodeToString[in.Rcode])
	}
	return in, nil
}

// resolverAddr is the configured resolver, or the first of
// /etc/resolv.conf. field names the setting for the error.
func resolverAddr(configured, field string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	conf, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(conf.Servers) == 0 {
		return "", fmt.Errorf("acmeclient: no resolver in /etc/resolv.conf: set %s", field)
	}
	return net.JoinHostPort(conf.Servers[0], conf.Port), nil
}

// followCNAME follows the aliases of name through resolver, one CNAME
// question at a time, and returns the name at the end of the chain
// (name itself when it is no alias). A loop, or more than MaxCNAMEChain
// aliases, is an error that shows the chain.
func (q dnsQuerier) followCNAME(ctx context.Context, resolver, name string) (string, error) {
	name = dns.Fqdn(strings.ToLower(name))
	chain := []string{name}
	seen := map[string]bool{name: true}
	for {
		in, err := q.exchange(ctx, resolver, name, dns.TypeCNAME, true)
		if err != nil {
			return "", err
		}
		target := ""
		for _, rr := range in.Answer {
			if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, name) {
				target = dns.Fqdn(strings.ToLower(c.Target))
				break
			}
		}
		if target == "" {
			return name, nil
		}
		chain = append(chain, target)
		if seen[target] {
			return "", fmt.Errorf("%w: a loop: %s", ErrCNAMEChain, strings.Join(chain, " → "))
		}
		if len(chain) > MaxCNAMEChain+1 {
			return "", fmt.Errorf("%w: more than %d aliases from %s: %s …", ErrCNAMEChain, MaxCNAMEChain, chain[0], strings.Join(chain, " → "))
		}
		seen[target], name = true, target
	}
}

// findZone finds the zone that holds name by asking resolver for the SOA
// record at name and, one label up at a time, its parents: the zone is
// the first name with an SOA record in the answer, or the owner of the
// SOA record in the authority section of an answer that is no alias. The
// walk ends at the root: at most one question per label.
func (q dnsQuerier) findZone(ctx context.Context, resolver, name string) (string, error) {
	name = dns.Fqdn(strings.ToLower(name))
	labels := dns.SplitDomainName(name)
	for i := range labels {
		cand := dns.Fqdn(strings.Join(labels[i:], "."))
		in, err := q.exchange(ctx, resolver, cand, dns.TypeSOA, true)
		if err != nil {
			return "", err
		}
		alias := false
		for _, rr := range in.Answer {
			switch rr := rr.(type) {
			case *dns.SOA:
				if strings.EqualFold(rr.Hdr.Name, cand) {
					return cand, nil
				}
			case *dns.CNAME:
				alias = true
			}
		}
		if alias {
			continue // the authority section speaks of the alias's target
		}
		for _, rr := range in.Ns {
			if soa, ok := rr.(*dns.SOA); ok && soa.Hdr.Name != "." && dns.IsSubDomain(soa.Hdr.Name, cand) {
				return strings.ToLower(soa.Hdr.Name), nil
			}
		}
	}
	return "", fmt.Errorf("acmeclient: no zone holds %s: %s knows no SOA record at it or above it", name, resolver)
}

// DNS01Checker is the DNS-01 self-check: it asks the zone's authoritative
// servers, not a cache, whether the TXT record is there. Every server is
// asked (at most MaxNameservers, at once); the check passes when every
// one serves the value. When it does not pass, the error names each
// server that lacks the value, the value, the name it was looked for at,
// and what the server serves there instead; it wraps ErrDNS01NotFound
// when a server answered without the value. Solvers.SelfCheck writes
// that text to the challenge's reason.
//
// The zero value finds the zone's servers through the resolver of
// /etc/resolv.conf. Every query is bounded by Timeout and MaxAnswerSize,
// and the call by its context.
type DNS01Checker struct {
	// Nameservers are the authoritative servers (host:port) to ask. When
	// empty, they are found by asking Resolver for the NS records of the
	// closest enclosing zone.
	Nameservers []string
	// Resolver is a recursive resolver (host:port) for finding the
	// nameservers and following aliases; empty means the first of
	// /etc/resolv.conf.
	Resolver string
	// Port of the discovered nameservers; zero means 53.
	Port int
	// Timeout of each query; zero means 5 s.
	Timeout time.Duration
	// FollowCNAME looks for the value at the end of the record name's
	// chain of aliases (CNAME records, found through Resolver), where a
	// LibDNSPresenter with FollowCNAME writes it, and asks that name's
	// zone's servers. At most MaxCNAMEChain aliases; a loop is an error.
	// Where the name is no alias it costs one query and changes nothing,
	// so one checker with it set serves presenters that follow aliases
	// and presenters that do not.
	FollowCNAME bool
	// MaxNameservers bounds how many discovered authoritative servers
	// are asked; zero means 8. Nameservers, when set, are all asked.
	MaxNameservers int
	// MaxAnswerSize bounds a DNS answer, in bytes: a larger one is an
	// error. Zero means 16 KiB.
	MaxAnswerSize int
}

var _ Checker = DNS01Checker{}

// nameserver is an authoritative server to ask: its address and, when it
// was discovered, its name.
type nameserver struct{ host, addr string }

func (n nameserver) String() string {
	if n.host == "" {
		return n.addr
	}
	return n.host + " (" + n.addr + ")"
}

func (c DNS01Checker) querier() dnsQuerier {
	return dnsQuerier{timeout: c.Timeout, maxSize: c.MaxAnswerSize}
}

// Check reports whether every authoritative server serves p's TXT value
// at p's record name, or, with FollowCNAME, at the end of its aliases
// (RFC 8555 §8.4).
func (c DNS01Checker) Check(ctx context.Context, p Presentation) error {
	q := c.querier()
	name, want := p.DNS01Name(), p.DNS01Value()
	if c.FollowCNAME {
		resolver, err := resolverAddr(c.Resolver, "DNS01Checker.Resolver")
		if err != nil {
			return err
		}
		if name, err = q.followCNAME(ctx, resolver, name); err != nil {
			return err
		}
	}
	var servers []nameserver
	if len(c.Nameservers) > 0 {
		for _, s := range c.Nameservers {
			servers = append(servers, nameserver{addr: s})
		}
	} else {
		var err error
		if servers, err = c.authoritative(ctx, name); err != nil {
			return err
		}
	}
	type answer struct {
		vals []string
		err  error
	}
	answers := make([]answer, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			vals, err := txtValues(ctx, q, s.addr, name)
			answers[i] = answer{vals, err}
		})
	}
	wg.Wait()
	var lacking, failed []string
	var errs []error
	for i, a := range answers {
		switch {
		case a.err != nil:
			failed = append(failed, servers[i].String()+": "+strings.TrimPrefix(a.err.Error(), "acmeclient: "))
			errs = append(errs, a.err)
		case !contains(a.vals, want):
			lacking = append(lacking, fmt.Sprintf("%s does not serve %q at %s (%s)", servers[i], want, name, describeValues(a.vals)))
		}
	}
	if len(lacking) == 0 && len(failed) == 0 {
		return nil
	}
	msg := "acmeclient: DNS-01 self-check: "
	if len(lacking) > 0 {
		msg = ErrDNS01NotFound.Error() + ": "
		errs = append([]error{ErrDNS01NotFound}, errs...)
	}
	return &dns01CheckError{msg: msg + strings.Join(append(lacking, failed...), "; "), errs: errs}
}

// dns01CheckError is a failed DNS-01 self-check: one message for every
// server, wrapping ErrDNS01NotFound and each query's error.
type dns01CheckError struct {
	msg  string
	errs []error
}

func (e *dns01CheckError) Error() string   { return e.msg }
func (e *dns01CheckError) Unwrap() []error { return e.errs }

func contains(vals []string, v string) bool {
	for _, x := range vals {
		if x == v {
			return true
		}
	}
	return false
}

// describeValues says what a server serves instead, the first few values
// quoted (DNS-01 values are digests, public in the DNS).
func describeValues(vals []string) string {
	const show = 3
	if len(vals) == 0 {
		return "it serves no TXT value there"
	}
	quoted := make([]string, 0, show)
	for _, v := range vals[:min(len(vals), show)] {
		quoted = append(quoted, strconv.Quote(v))
	}
	s := "it serves " + strings.Join(quoted, ", ")
	if len(vals) > show {
		s += fmt.Sprintf(" and %d more", len(vals)-show)
	}
	return s
}

// txtValues asks server (without recursion) for the TXT values at name,
// each record's strings joined. Like the CA, it counts the TXT records of
// the whole answer: those of an alias's target that the server follows
// too.
func txtValues(ctx context.Context, q dnsQuerier, server, name string) ([]string, error) {
	in, err := q.exchange(ctx, server, name, dns.TypeTXT, false)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range in.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			out = append(out, strings.Join(t.Txt, ""))
		}
	}
	return out, nil
}

// authoritative finds the nameservers of the closest zone enclosing name:
// at most MaxNameservers of them, with their IPv4 addresses.
func (c DNS01Checker) authoritative(ctx context.Context, name string) ([]nameserver, error) {
	resolver, err := resolverAddr(c.Resolver, "DNS01Checker.Resolver")
	if err != nil {
		return nil, fmt.Errorf("acmeclient: finding the nameservers of %s: %w", name, err)
	}
	q := c.querier()
	port := c.Port
	if port == 0 {
		port = 53
	}
	limit := c.MaxNameservers
	if limit <= 0 {
		limit = defaultMaxNameservers
	}
	labels := dns.SplitDomainName(name)
	for i := range labels {
		zone := dns.Fqdn(strings.Join(labels[i:], "."))
		in, err := q.exchange(ctx, resolver, zone, dns.TypeNS, true)
		if err != nil {
			return nil, err
		}
		var hosts []string
		for _, rr := range in.Answer {
			if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, zone) && len(hosts) < limit {
				hosts = append(hosts, ns.Ns)
			}
		}
		if len(hosts) == 0 {
			continue
		}
		var servers []nameserver
		for _, h := range hosts {
			a, err := q.exchange(ctx, resolver, h, dns.TypeA, true)
			if err != nil {
				return nil, err
			}
			for _, rr := range a.Answer {
				if r, ok := rr.(*dns.A); ok && len(servers) < limit {
					servers = append(servers, nameserver{host: h, addr: net.JoinHostPort(r.A.String(), strconv.Itoa(port))})
				}
			}
		}
		if len(servers) == 0 {
			return nil, fmt.Errorf("acmeclient: the nameservers of %s (%s) have no IPv4 address", zone, strings.Join(hosts, ", "))
		}
		return servers, nil
	}
	return nil, fmt.Errorf("acmeclient: no zone encloses %s", name)
}

package acmetest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/certlife/certlife/acmeclient"
)

// DNS is a small authoritative DNS server on loopback for tests: every
// name's A record is 127.0.0.1 (AAAA: none, so clients fall back to IPv4),
// and TXT and CNAME records are whatever the test sets, as a DNS-01
// solver does. It answers over UDP and TCP on the same port, and, as a
// recursive resolver would, follows the CNAMEs it serves (at most
// maxChase of them) and answers for their target.
//
// It is three things for a test: a DNS-01 acmeclient.Presenter (Present,
// CleanUp), a resolver and authoritative server of the zones the test
// adds (AddZone: NS and SOA answers), and a libdns provider of those
// zones (AppendRecords, DeleteRecords, GetRecords of TXT and CNAME
// records), so that an acmeclient.LibDNSPresenter can write to it as it
// writes to a DNS provider's API.
type DNS struct {
	addr string
	udp  *dns.Server
	tcp  *dns.Server

	mu    sync.Mutex
	txt   map[string][]string // FQDN, lower case → values
	cname map[string]string   // FQDN, lower case → target FQDN
	zones map[string]bool     // zones it answers NS and SOA queries for
	// Queries counts the questions answered, by type ("A", "TXT", …).
	queries map[string]int
}

// maxChase bounds the CNAMEs the server follows in one answer.
const maxChase = 16

// StartDNS starts a DNS server on a loopback port on its own, for a test
// that needs a second authoritative server beside a Server's (whose DNS
// it is). Close stops it.
func StartDNS() (*DNS, error) {
	d := &DNS{txt: map[string][]string{}, cname: map[string]string{}, queries: map[string]int{}, zones: map[string]bool{}}
	// The same port for UDP and TCP: take a TCP port, then its UDP twin;
	// retry a few times when the twin is taken.
	var lastErr error
	for range 10 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("acmetest: DNS listener: %w", err)
		}
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err != nil {
			ln.Close()
			lastErr = err
			continue
		}
		d.addr = ln.Addr().String()
		// A handler per server (not dns.HandleFunc's global mux), so that
		// several servers can live in one process.
		h := dns.HandlerFunc(d.serve)
		d.tcp = &dns.Server{Listener: ln, Handler: h}
		d.udp = &dns.Server{PacketConn: pc, Handler: h}
		started := make(chan error, 2)
		d.tcp.NotifyStartedFunc = func() { started <- nil }
		d.udp.NotifyStartedFunc = func() { started <- nil }
		go func() {
			if err := d.tcp.ActivateAndServe(); err != nil {
				started <- err
			}
		}()
		go func() {
			if err := d.udp.ActivateAndServe(); err != nil {
				started <- err
			}
		}()
		for range 2 {
			if err := <-started; err != nil {
				d.Close()
				return nil, fmt.Errorf("acmetest: DNS server: %w", err)
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("acmetest: no UDP port twin for the DNS server: %w", lastErr)
}

// Addr is the server's host:port (UDP and TCP).
func (d *DNS) Addr() string { return d.addr }

// Port is the server's port: the port of the nameservers a client
// discovers through it (NameserverHost is this server), for example
// acmeclient.DNS01Checker's Port.
func (d *DNS) Port() int {
	_, port, _ := net.SplitHostPort(d.addr)
	p, _ := strconv.Atoi(port)
	return p
}

// Close stops the server.
func (d *DNS) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if d.tcp != nil {
		_ = d.tcp.ShutdownContext(ctx)
	}
	if d.udp != nil {
		_ = d.udp.ShutdownContext(ctx)
	}
}

// NameserverHost is the name the server gives itself in NS answers.
const NameserverHost = "ns.acmetest."

// AddZone makes the server answer NS queries for zone with
// NameserverHost, so that a client can discover it as the zone's
// authoritative server (on this server's port), and SOA queries at or
// below zone with its SOA record, so that a client can find the zone
// that holds a name. The libdns methods accept the zones added here.
func (d *DNS) AddZone(zone string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.zones[fqdn(zone)] = true
}

// Present publishes a DNS-01 presentation's TXT value: the server is an
// acmeclient.Presenter for DNS-01.
func (d *DNS) Present(_ context.Context, p acmeclient.Presentation) error {
	d.SetTXT(p.DNS01Name(), p.DNS01Value())
	return nil
}

// CleanUp removes a DNS-01 presentation's TXT value.
func (d *DNS) CleanUp(_ context.Context, p acmeclient.Presentation) error {
	d.ClearTXT(p.DNS01Name(), p.DNS01Value())
	return nil
}

// SetTXT adds value to the TXT records of name.
func (d *DNS) SetTXT(name, value string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := fqdn(name)
	for _, v := range d.txt[k] {
		if v == value {
			return
		}
	}
	d.txt[k] = append(d.txt[k], value)
}

// ClearTXT removes value from the TXT records of name.
func (d *DNS) ClearTXT(name, value string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := fqdn(name)
	vals := d.txt[k][:0]
	for _, v := range d.txt[k] {
		if v != value {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		delete(d.txt, k)
	} else {
		d.txt[k] = vals
	}
}

// SetCNAME makes name an alias of target; an empty target removes the
// alias.
func (d *DNS) SetCNAME(name, target string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if target == "" {
		delete(d.cname, fqdn(name))
		return
	}
	d.cname[fqdn(name)] = fqdn(target)
}

// TXT returns the TXT records of name.
func (d *DNS) TXT(name string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.txt[fqdn(name)]...)
}

// Queries returns how many questions of a type ("A", "AAAA", "TXT") the
// server has answered.
func (d *DNS) Queries(qtype string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queries[qtype]
}

func fqdn(name string) string { return dns.Fqdn(strings.ToLower(name)) }

// zoneOf is the closest zone added with AddZone that holds name, "" when
// none does. d.mu is held.
func (d *DNS) zoneOf(name string) string {
	for n := name; ; {
		if d.zones[n] {
			return n
		}
		i := strings.IndexByte(n, '.')
		if i < 0 || i == len(n)-1 {
			return ""
		}
		n = n[i+1:]
	}
}

func (d *DNS) soa(zone string) *dns.SOA {
	return &dns.SOA{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET},
		Ns: NameserverHost, Mbox: "hostmaster.acmetest.", Serial: 1, Refresh: 60, Retry: 60, Expire: 600, Minttl: 0}
}

func (d *DNS) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	for _, q := range r.Question {
		d.mu.Lock()
		d.queries[dns.TypeToString[q.Qtype]]++
		name := strings.ToLower(q.Name)
		// Follow the aliases, as a recursive resolver does, unless the
		// question is for the alias itself.
		seen := map[string]bool{name: true}
		for range maxChase {
			target, ok := d.cname[name]
			if !ok {
				break
			}
			m.Answer = append(m.Answer, &dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET}, Target: target})
			if q.Qtype == dns.TypeCNAME || seen[target] {
				name = ""
				break
			}
			seen[target], name = true, target
		}
		zone, apex := "", false
		if name != "" {
			zone = d.zoneOf(name)
			apex = zone == name
		}
		d.mu.Unlock()
		if name == "" {
			continue
		}
		hdr := dns.RR_Header{Name: name, Class: dns.ClassINET, Ttl: 0}
		switch q.Qtype {
		case dns.TypeA:
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.IPv4(127, 0, 0, 1)})
		case dns.TypeNS:
			if apex {
				hdr.Rrtype = dns.TypeNS
				m.Answer = append(m.Answer, &dns.NS{Hdr: hdr, Ns: NameserverHost})
			}
		case dns.TypeSOA:
			if apex {
				m.Answer = append(m.Answer, d.soa(zone))
			} else if zone != "" {
				m.Ns = append(m.Ns, d.soa(zone))
			}
		case dns.TypeTXT:
			hdr.Rrtype = dns.TypeTXT
			for _, v := range d.TXT(name) {
				m.Answer = append(m.Answer, &dns.TXT{Hdr: hdr, Txt: splitTXT(v)})
			}
		}
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := r.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size) // the client asks again over TCP
	}
	_ = w.WriteMsg(m)
}

// splitTXT cuts a value into the 255-byte strings a TXT record holds.
func splitTXT(v string) []string {
	var out []string
	for len(v) > 255 {
		out, v = append(out, v[:255]), v[255:]
	}
	return append(out, v)
}

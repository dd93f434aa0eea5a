package acmetest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/certlife/certlife/acmeclient"
)

// DNS is a small authoritative DNS server on loopback for tests: every
// name's A record is 127.0.0.1 (AAAA: none, so clients fall back to IPv4),
// and TXT records are whatever the test sets, as a DNS-01 solver does.
// It answers over UDP and TCP on the same port.
type DNS struct {
	addr string
	udp  *dns.Server
	tcp  *dns.Server

	mu    sync.Mutex
	txt   map[string][]string // FQDN, lower case → values
	zones map[string]bool     // zones it answers NS queries for
	// Queries counts the questions answered, by type ("A", "TXT", …).
	queries map[string]int
}

func startDNS() (*DNS, error) {
	d := &DNS{txt: map[string][]string{}, queries: map[string]int{}, zones: map[string]bool{}}
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
// authoritative server (on this server's port).
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

func (d *DNS) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	for _, q := range r.Question {
		d.mu.Lock()
		d.queries[dns.TypeToString[q.Qtype]]++
		d.mu.Unlock()
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 0}
		switch q.Qtype {
		case dns.TypeA:
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.IPv4(127, 0, 0, 1)})
		case dns.TypeNS:
			d.mu.Lock()
			zone := d.zones[strings.ToLower(q.Name)]
			d.mu.Unlock()
			if zone {
				hdr.Rrtype = dns.TypeNS
				m.Answer = append(m.Answer, &dns.NS{Hdr: hdr, Ns: NameserverHost})
			}
		case dns.TypeTXT:
			hdr.Rrtype = dns.TypeTXT
			for _, v := range d.TXT(q.Name) {
				m.Answer = append(m.Answer, &dns.TXT{Hdr: hdr, Txt: []string{v}})
			}
		}
	}
	_ = w.WriteMsg(m)
}

package operator

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
)

// RFC2136 publishes DNS-01 TXT records with RFC 2136 dynamic updates to a
// zone's primary server, signed with TSIG (RFC 8945) when a key is set. It
// is an acmeclient.Presenter: Present adds one TXT value beside any others
// at the record name (a wildcard and its base name share it), CleanUp
// deletes exactly that value (RFC 2136 §2.5.4). Both are idempotent, as
// dynamic updates are: adding a record that is there, or deleting one that
// is not, changes nothing.
//
// The TSIG secret is never printed: String and GoString redact it, and no
// error carries it. An RFC2136 holds no state and is safe for concurrent
// use; its fields must not change while it is in use.
type RFC2136 struct {
	// Nameserver is the zone's primary server, host:port.
	Nameserver string
	// Zone is the zone to update, a FQDN. Empty means: found by asking
	// Nameserver (unsigned queries) for the SOA of the record name, one
	// label up at a time, until an answer or authority section names the
	// zone, on every call.
	Zone string
	// TSIGKeyName names the TSIG key. Empty means unsigned updates.
	TSIGKeyName string
	// TSIGAlgorithm is the key's algorithm, as the Issuer's spec spells
	// it (in any case): "HMACMD5" (the default when a key is set, as it
	// is cert-manager's), "HMACSHA1", "HMACSHA256", "HMACSHA384" or
	// "HMACSHA512".
	TSIGAlgorithm string
	// TSIGSecret is the key's secret, base64.
	TSIGSecret string
	// TTL of the TXT records, in seconds. 0 means 60.
	TTL uint32
	// Timeout bounds one Present or CleanUp call, zone discovery
	// included. 0 means 10 s. A deadline of the call's context that comes
	// sooner is kept.
	Timeout time.Duration
	// Net is "udp" (or empty): UDP, and the same exchange again over TCP
	// when the answer is truncated; or "tcp": TCP only.
	Net string
}

// rfc2136Algorithms maps the algorithm names of the Issuer's spec (upper
// case) to TSIG's.
var rfc2136Algorithms = map[string]string{
	"HMACMD5":    dns.HmacMD5,
	"HMACSHA1":   dns.HmacSHA1,
	"HMACSHA256": dns.HmacSHA256,
	"HMACSHA384": dns.HmacSHA384,
	"HMACSHA512": dns.HmacSHA512,
}

// rfc2136DefaultAlgorithm is the TSIG algorithm of a key whose spec names
// none: cert-manager's default, so that an Issuer written for it signs
// as its DNS server expects.
const rfc2136DefaultAlgorithm = "HMACMD5"

// rfc2136AlgorithmNames lists the algorithms for errors.
const rfc2136AlgorithmNames = "HMACMD5, HMACSHA1, HMACSHA256, HMACSHA384, HMACSHA512"

// rfc2136Field is the path of the RFC 2136 solver's settings in an
// Issuer's or ClusterIssuer's spec, for errors.
const rfc2136Field = "spec.acme.solvers[].dns01.rfc2136"

// newRFC2136 builds a presenter from an Issuer's RFC 2136 solver settings
// and the TSIG secret read from cfg.TSIGSecret ("" when it is unset).
// Errors name the field at fault and never carry the secret.
func newRFC2136(cfg *cmacme.ACMEIssuerDNS01ProviderRFC2136, tsigSecret string) (*RFC2136, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%s: not set", rfc2136Field)
	}
	host, port, err := net.SplitHostPort(cfg.Nameserver)
	if err != nil {
		return nil, fmt.Errorf("%s.nameserver %q: want host:port: %w", rfc2136Field, cfg.Nameserver, err)
	}
	if host == "" {
		return nil, fmt.Errorf("%s.nameserver %q: no host", rfc2136Field, cfg.Nameserver)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return nil, fmt.Errorf("%s.nameserver %q: port %q is not a number from 1 to 65535", rfc2136Field, cfg.Nameserver, port)
	}
	// The secret's value decides whether updates are signed; the
	// reference only names it in errors.
	ref := "the TSIG secret"
	hasRef := cfg.TSIGSecret.Name != ""
	if hasRef {
		ref = fmt.Sprintf("Secret %q key %q", cfg.TSIGSecret.Name, cfg.TSIGSecret.Key)
	}
	if cfg.TSIGKeyName == "" {
		switch {
		case hasRef || tsigSecret != "":
			return nil, fmt.Errorf("%s.tsigKeyName: required when tsigSecretSecretRef is set", rfc2136Field)
		case cfg.TSIGAlgorithm != "":
			return nil, fmt.Errorf("%s.tsigAlgorithm %q: set without tsigKeyName", rfc2136Field, cfg.TSIGAlgorithm)
		}
	} else {
		if _, ok := dns.IsDomainName(cfg.TSIGKeyName); !ok {
			return nil, fmt.Errorf("%s.tsigKeyName %q: not a domain name", rfc2136Field, cfg.TSIGKeyName)
		}
		switch {
		case tsigSecret == "" && !hasRef:
			return nil, fmt.Errorf("%s.tsigSecretSecretRef: required when tsigKeyName is set", rfc2136Field)
		case tsigSecret == "":
			return nil, fmt.Errorf("%s.tsigSecretSecretRef: %s is empty", rfc2136Field, ref)
		}
		if err := checkRFC2136Secret(tsigSecret); err != nil {
			return nil, fmt.Errorf("%s.tsigSecretSecretRef: %s: %w", rfc2136Field, ref, err)
		}
	}
	if cfg.TSIGAlgorithm != "" {
		if _, ok := rfc2136Algorithms[strings.ToUpper(cfg.TSIGAlgorithm)]; !ok {
			return nil, fmt.Errorf("%s.tsigAlgorithm %q: not one of %s", rfc2136Field, cfg.TSIGAlgorithm, rfc2136AlgorithmNames)
		}
	}
	net := ""
	switch cfg.Protocol {
	case "":
	case cmacme.RFC2136UpdateProtocolTCP:
		net = "tcp"
	case cmacme.RFC2136UpdateProtocolUDP:
		net = "udp"
	default:
		return nil, fmt.Errorf("%s.protocol %q: not TCP or UDP", rfc2136Field, cfg.Protocol)
	}
	return &RFC2136{
		Nameserver:    cfg.Nameserver,
		TSIGKeyName:   cfg.TSIGKeyName,
		TSIGAlgorithm: cfg.TSIGAlgorithm,
		TSIGSecret:    tsigSecret,
		Net:           net,
	}, nil
}

// checkRFC2136Secret says whether a TSIG secret is base64 of at least one
// byte. Its errors do not quote the secret.
func checkRFC2136Secret(secret string) error {
	b, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		var at base64.CorruptInputError
		if errors.As(err, &at) {
			return fmt.Errorf("the TSIG secret is not base64 (bad data at byte %d)", int64(at))
		}
		return errors.New("the TSIG secret is not base64")
	}
	if len(b) == 0 {
		return errors.New("the TSIG secret is empty")
	}
	return nil
}

// Present adds p's DNS-01 value as a TXT record at p's DNS-01 name, beside
// any values there. Presenting the same p again changes nothing.
func (r *RFC2136) Present(ctx context.Context, p acmeclient.Presentation) error {
	return r.update(ctx, p, true)
}

// CleanUp deletes p's DNS-01 TXT value, and only it, leaving any other
// value at the name. Cleaning up a value that is not there changes
// nothing.
func (r *RFC2136) CleanUp(ctx context.Context, p acmeclient.Presentation) error {
	return r.update(ctx, p, false)
}

// String describes r with the TSIG secret redacted.
func (r RFC2136) String() string {
	return fmt.Sprintf("RFC2136{Nameserver: %q, Zone: %q, TSIGKeyName: %q, TSIGAlgorithm: %q, TSIGSecret: %q, TTL: %d, Timeout: %s, Net: %q}",
		r.Nameserver, r.Zone, r.TSIGKeyName, r.TSIGAlgorithm, r.redactedSecret(), r.TTL, r.Timeout, r.Net)
}

// GoString is %#v of r with the TSIG secret redacted.
func (r RFC2136) GoString() string {
	return fmt.Sprintf("operator.RFC2136{Nameserver:%q, Zone:%q, TSIGKeyName:%q, TSIGAlgorithm:%q, TSIGSecret:%q, TTL:%#v, Timeout:%d, Net:%q}",
		r.Nameserver, r.Zone, r.TSIGKeyName, r.TSIGAlgorithm, r.redactedSecret(), r.TTL, int64(r.Timeout), r.Net)
}

func (r RFC2136) redactedSecret() string {
	if r.TSIGSecret == "" {
		return ""
	}
	return "REDACTED"
}

func (r *RFC2136) ttl() uint32 {
	if r.TTL == 0 {
		return 60
	}
	return r.TTL
}

func (r *RFC2136) timeout() time.Duration {
	if r.Timeout == 0 {
		return 10 * time.Second
	}
	return r.Timeout
}

// check validates r's fields, and returns the TSIG algorithm ("" for
// unsigned updates).
func (r *RFC2136) check() (string, error) {
	if r.Nameserver == "" {
		return "", errors.New("rfc2136: no Nameserver")
	}
	if r.Net != "" && r.Net != "udp" && r.Net != "tcp" {
		return "", fmt.Errorf("rfc2136: Net %q: want \"udp\" or \"tcp\"", r.Net)
	}
	if r.TSIGKeyName == "" {
		if r.TSIGSecret != "" {
			return "", errors.New("rfc2136: TSIGSecret without TSIGKeyName")
		}
		return "", nil
	}
	name := r.TSIGAlgorithm
	if name == "" {
		name = rfc2136DefaultAlgorithm
	}
	alg, ok := rfc2136Algorithms[strings.ToUpper(name)]
	if !ok {
		return "", fmt.Errorf("rfc2136: TSIGAlgorithm %q: not one of %s", r.TSIGAlgorithm, rfc2136AlgorithmNames)
	}
	if r.TSIGSecret == "" {
		return "", fmt.Errorf("rfc2136: TSIG key %s has no TSIGSecret", r.TSIGKeyName)
	}
	if err := checkRFC2136Secret(r.TSIGSecret); err != nil {
		return "", fmt.Errorf("rfc2136: TSIG key %s: %w", r.TSIGKeyName, err)
	}
	return alg, nil
}

// update adds (add) or deletes p's TXT value with one dynamic update.
func (r *RFC2136) update(ctx context.Context, p acmeclient.Presentation, add bool) error {
	if p.Type != challenge.TypeDNS01 {
		return fmt.Errorf("rfc2136: %s is not a DNS-01 presentation", p)
	}
	alg, err := r.check()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()

	name, value := p.DNS01Name(), p.DNS01Value()
	zone := dns.CanonicalName(r.Zone)
	if r.Zone == "" {
		if zone, err = r.findZone(ctx, name); err != nil {
			return err
		}
	} else if !dns.IsSubDomain(zone, name) {
		return fmt.Errorf("rfc2136: record name %s is not in zone %s", name, zone)
	}

	return r.send(ctx, alg, zone, name, value, r.ttl(), add)
}

// send adds (or deletes) the TXT value at name in zone with one RFC 2136
// update, signed with alg when it is not empty.
func (r *RFC2136) send(ctx context.Context, alg, zone, name, value string, ttl uint32, add bool) error {
	op := "add"
	txt := &dns.TXT{
		Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: ttl},
		Txt: []string{value},
	}
	m := new(dns.Msg)
	m.SetUpdate(zone)
	if add {
		m.Insert([]dns.RR{txt})
	} else {
		op = "delete"
		m.Remove([]dns.RR{txt})
	}
	in, err := r.exchange(ctx, m, alg)
	where := fmt.Sprintf("rfc2136: %s TXT %q at %s in zone %s via %s", op, value, name, zone, r.Nameserver)
	switch {
	case in != nil && in.Rcode != dns.RcodeSuccess:
		// A refusal can come with a TSIG that does not verify (BADSIG,
		// BADKEY): the rcode says more than the verification error.
		return fmt.Errorf("%s: server answered %s", where, rfc2136Rcode(in))
	case err != nil:
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// findZone asks the nameserver for the SOA of name, then of its parents,
// until an answer or authority section holds the SOA of a zone enclosing
// name.
func (r *RFC2136) findZone(ctx context.Context, name string) (string, error) {
	labels := dns.SplitDomainName(name)
	last := ""
	for i := range labels {
		q := dns.Fqdn(strings.Join(labels[i:], "."))
		m := new(dns.Msg)
		m.SetQuestion(q, dns.TypeSOA)
		m.RecursionDesired = false
		in, err := r.exchange(ctx, m, "")
		if err != nil {
			return "", fmt.Errorf("rfc2136: find the zone of %s: SOA query for %s at %s: %w", name, q, r.Nameserver, err)
		}
		for _, rr := range append(in.Answer, in.Ns...) {
			soa, ok := rr.(*dns.SOA)
			if !ok {
				continue
			}
			zone := dns.CanonicalName(soa.Hdr.Name)
			if zone != "." && dns.IsSubDomain(zone, name) {
				return zone, nil
			}
		}
		last = fmt.Sprintf(" (last answer for %s: %s)", q, rfc2136Rcode(in))
	}
	return "", fmt.Errorf("rfc2136: find the zone of %s: %s named no SOA enclosing it%s", name, r.Nameserver, last)
}

// exchange sends m to the nameserver, signed with alg and r's key unless
// alg is "", over UDP and again over TCP when the answer is truncated (or
// over TCP only when r.Net says so). It returns the answer when there is
// one, even with an error (a TSIG that does not verify).
func (r *RFC2136) exchange(ctx context.Context, m *dns.Msg, alg string) (*dns.Msg, error) {
	network := r.Net
	if network == "" {
		network = "udp"
	}
	in, err := r.exchangeOver(ctx, network, m, alg)
	if err == nil && in.Truncated && network == "udp" {
		in, err = r.exchangeOver(ctx, "tcp", m, alg)
		if err != nil {
			err = fmt.Errorf("over TCP: %w", err)
		}
	}
	return in, err
}

func (r *RFC2136) exchangeOver(ctx context.Context, network string, m *dns.Msg, alg string) (*dns.Msg, error) {
	c := &dns.Client{Net: network, Timeout: r.timeout()}
	// Signing takes the TSIG record off the message: sign a copy.
	m = m.Copy()
	if alg != "" {
		key := dns.CanonicalName(r.TSIGKeyName)
		c.TsigProvider = tsigHMAC{secret: r.TSIGSecret}
		m.SetTsig(key, alg, 300, time.Now().Unix())
	}
	in, _, err := c.ExchangeContext(ctx, m, r.Nameserver)
	return in, err
}

// rfc2136Rcode is the answer's rcode in words, with its TSIG error if any.
func rfc2136Rcode(in *dns.Msg) string {
	s, ok := dns.RcodeToString[in.Rcode]
	if !ok {
		s = "rcode " + strconv.Itoa(in.Rcode)
	}
	if t := in.IsTsig(); t != nil && t.Error != dns.RcodeSuccess {
		e, ok := dns.RcodeToString[int(t.Error)]
		if !ok {
			e = strconv.Itoa(int(t.Error))
		}
		s += " (TSIG error " + e + ")"
	}
	return s
}

// tsigHMAC signs and checks TSIG records (RFC 8945) with one key's
// secret, in the HMAC algorithms cert-manager's RFC 2136 solver supports:
// MD5 (its default, which package dns no longer signs with), SHA-1,
// SHA-256, SHA-384 and SHA-512. It never prints the secret.
type tsigHMAC struct{ secret string } // base64

// Generate is the MAC of msg under t's algorithm.
func (k tsigHMAC) Generate(msg []byte, t *dns.TSIG) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(k.secret)
	if err != nil {
		return nil, errors.New("rfc2136: the TSIG secret is not base64")
	}
	var h func() hash.Hash
	switch dns.CanonicalName(t.Algorithm) {
	case dns.HmacMD5:
		h = md5.New
	case dns.HmacSHA1:
		h = sha1.New
	case dns.HmacSHA256:
		h = sha256.New
	case dns.HmacSHA384:
		h = sha512.New384
	case dns.HmacSHA512:
		h = sha512.New
	default:
		return nil, dns.ErrKeyAlg
	}
	m := hmac.New(h, raw)
	m.Write(msg)
	return m.Sum(nil), nil
}

// Verify checks t's MAC of msg.
func (k tsigHMAC) Verify(msg []byte, t *dns.TSIG) error {
	want, err := k.Generate(msg, t)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(t.MAC)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, got) {
		return dns.ErrSig
	}
	return nil
}

// String redacts the secret.
func (tsigHMAC) String() string { return "tsigHMAC{secret: REDACTED}" }

// GoString redacts the secret.
func (k tsigHMAC) GoString() string { return k.String() }

// Format prints String for every verb.
func (k tsigHMAC) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

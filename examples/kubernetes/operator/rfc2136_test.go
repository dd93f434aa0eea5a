package operator

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
)

// rfc2136Secret is the TSIG secret of the tests; no output may show it.
var rfc2136Secret = base64.StdEncoding.EncodeToString([]byte("rfc2136-test-secret-0123456789ab"))

// rfc2136Server is a small authoritative DNS server on loopback UDP for one
// zone: it answers SOA and TXT queries from its data and applies RFC 2136
// updates (prerequisites ignored). With a key, miekg/dns verifies TSIG and
// the server refuses updates that are unsigned (REFUSED) or whose TSIG does
// not verify (NOTAUTH with BADSIG or BADKEY, as RFC 8945 §5.2 says).
type rfc2136Server struct {
	addr, zone, key string
	bare            bool // negative answers without the zone's SOA

	mu      sync.Mutex
	txt     map[string][]*dns.TXT // name → records
	applied int                   // updates applied
}

func startRFC2136Server(t *testing.T, zone, key, secret string, bare bool) *rfc2136Server {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	d := &rfc2136Server{addr: pc.LocalAddr().String(), zone: zone, key: key, bare: bare, txt: map[string][]*dns.TXT{}}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(d.serve)}
	// The default MsgAcceptFunc answers UPDATE with NOTIMP.
	srv.MsgAcceptFunc = func(dns.Header) dns.MsgAcceptAction { return dns.MsgAccept }
	if key != "" {
		srv.TsigProvider = namedKey{name: dns.CanonicalName(key), key: tsigHMAC{secret: secret}}
	}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return d
}

// namedKey is the test server's one TSIG key: a record signed with
// another name is BADKEY (RFC 8945 §5.2.2).
type namedKey struct {
	name string
	key  tsigHMAC
}

func (n namedKey) Generate(msg []byte, t *dns.TSIG) ([]byte, error) {
	if dns.CanonicalName(t.Hdr.Name) != n.name {
		return nil, dns.ErrSecret
	}
	return n.key.Generate(msg, t)
}

func (n namedKey) Verify(msg []byte, t *dns.TSIG) error {
	if dns.CanonicalName(t.Hdr.Name) != n.name {
		return dns.ErrSecret
	}
	return n.key.Verify(msg, t)
}

// The TSIG MACs are HMACs as RFC 8945 §6 names them: HMAC-MD5 gives RFC
// 2202's test vector, and the SHA family what package dns's own signer
// gives.
func TestTSIGHMAC(t *testing.T) {
	k := tsigHMAC{secret: base64.StdEncoding.EncodeToString([]byte("Jefe"))}
	mac, err := k.Generate([]byte("what do ya want for nothing?"), &dns.TSIG{Algorithm: dns.HmacMD5})
	require.NoError(t, err)
	assert.Equal(t, "750c783e6ab0b503eaa86e310a5db738", hex.EncodeToString(mac), "RFC 2202 §2, test case 2")
	msg := []byte("a DNS message")
	for _, alg := range []string{dns.HmacSHA1, dns.HmacSHA256, dns.HmacSHA384, dns.HmacSHA512} {
		m := new(dns.Msg)
		m.SetQuestion("example.test.", dns.TypeSOA)
		m.SetTsig("k.", alg, 300, 1)
		m2 := m.Copy()
		_, want, err := dns.TsigGenerate(m, rfc2136Secret, "", false)
		require.NoError(t, err)
		_, got, err := dns.TsigGenerateWithProvider(m2, tsigHMAC{secret: rfc2136Secret}, "", false)
		require.NoError(t, err)
		assert.Equal(t, want, got, alg)
		_, err = k.Generate(msg, &dns.TSIG{Algorithm: alg})
		assert.NoError(t, err)
	}
	_, err = k.Generate(msg, &dns.TSIG{Algorithm: "hmac-sha3."})
	assert.ErrorIs(t, err, dns.ErrKeyAlg)
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		assert.NotContains(t, fmt.Sprintf(format, tsigHMAC{secret: rfc2136Secret}), rfc2136Secret)
	}
}

func (d *rfc2136Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	tsig := req.IsTsig()
	switch {
	case tsig != nil && w.TsigStatus() != nil:
		m.Rcode = dns.RcodeNotAuth
		m.SetTsig(tsig.Hdr.Name, tsig.Algorithm, 300, time.Now().Unix())
		m.IsTsig().Error = dns.RcodeBadSig
		if errors.Is(w.TsigStatus(), dns.ErrSecret) {
			m.IsTsig().Error = dns.RcodeBadKey
		}
		_ = w.WriteMsg(m) // unsigned: RFC 8945 §5.3.2
		return
	case req.Opcode == dns.OpcodeUpdate:
		m.Rcode = d.update(req, tsig != nil)
	case req.Opcode == dns.OpcodeQuery && len(req.Question) == 1:
		d.query(req.Question[0], m)
	default:
		m.Rcode = dns.RcodeNotImplemented
	}
	if tsig != nil {
		m.SetTsig(tsig.Hdr.Name, tsig.Algorithm, 300, time.Now().Unix())
	}
	_ = w.WriteMsg(m)
}

func (d *rfc2136Server) update(req *dns.Msg, signed bool) int {
	if d.key != "" && !signed {
		return dns.RcodeRefused
	}
	if len(req.Question) != 1 || dns.CanonicalName(req.Question[0].Name) != d.zone {
		return dns.RcodeNotAuth
	}
	for _, rr := range req.Ns { // RFC 2136 §3.4.1.3: check all first
		if !dns.IsSubDomain(d.zone, dns.CanonicalName(rr.Header().Name)) {
			return dns.RcodeNotZone
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, rr := range req.Ns {
		h := rr.Header()
		name := dns.CanonicalName(h.Name)
		txt, isTXT := rr.(*dns.TXT)
		switch {
		case h.Class == dns.ClassINET && isTXT:
			if d.find(name, txt) < 0 {
				d.txt[name] = append(d.txt[name], &dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: h.Ttl}, Txt: txt.Txt})
			}
		case h.Class == dns.ClassNONE && isTXT:
			if i := d.find(name, txt); i >= 0 {
				d.txt[name] = append(d.txt[name][:i], d.txt[name][i+1:]...)
			}
		case h.Class == dns.ClassANY && (h.Rrtype == dns.TypeTXT || h.Rrtype == dns.TypeANY):
			delete(d.txt, name)
		}
	}
	d.applied++
	return dns.RcodeSuccess
}

func (d *rfc2136Server) find(name string, rr *dns.TXT) int {
	for i, have := range d.txt[name] {
		if strings.Join(have.Txt, "") == strings.Join(rr.Txt, "") {
			return i
		}
	}
	return -1
}

func (d *rfc2136Server) query(q dns.Question, m *dns.Msg) {
	name := dns.CanonicalName(q.Name)
	if !dns.IsSubDomain(d.zone, name) {
		m.Rcode, m.Authoritative = dns.RcodeRefused, false
		return
	}
	soa := &dns.SOA{Hdr: dns.RR_Header{Name: d.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60},
		Ns: "ns." + d.zone, Mbox: "hostmaster." + d.zone, Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 60}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case q.Qtype == dns.TypeSOA && name == d.zone:
		m.Answer = append(m.Answer, soa)
	case q.Qtype == dns.TypeTXT && len(d.txt[name]) > 0:
		for _, rr := range d.txt[name] {
			m.Answer = append(m.Answer, dns.Copy(rr))
		}
	default:
		if name != d.zone && len(d.txt[name]) == 0 {
			m.Rcode = dns.RcodeNameError
		}
		if !d.bare {
			m.Ns = append(m.Ns, soa)
		}
	}
}

// served is what the server answers for TXT at name: values and TTLs.
func (d *rfc2136Server) served(t *testing.T, name string) (values []string, ttls []uint32) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeTXT)
	in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, d.addr)
	require.NoError(t, err)
	for _, rr := range in.Answer {
		txt := rr.(*dns.TXT)
		values = append(values, strings.Join(txt.Txt, ""))
		ttls = append(ttls, txt.Hdr.Ttl)
	}
	return values, ttls
}

func (d *rfc2136Server) updates() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applied
}

func dns01(identifier string, wildcard bool, keyAuth string) acmeclient.Presentation {
	return acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: identifier, Wildcard: wildcard, Token: "token", KeyAuthorization: keyAuth}
}

// noSecret checks that err, if any, does not show the TSIG secret.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		assert.NotContains(t, err.Error(), rfc2136Secret)
		assert.NotContains(t, fmt.Sprintf("%+v %#v", err, err), rfc2136Secret)
	}
}

func TestRFC2136PresentAndCleanUp(t *testing.T) {
	for _, alg := range []string{"", "HMACMD5", "HMACSHA1", "HMACSHA256", "hmacsha384", "HMACSHA512"} {
		t.Run("alg="+alg, func(t *testing.T) {
			ctx := context.Background()
			d := startRFC2136Server(t, "example.test.", "certlife.", rfc2136Secret, false)
			r := &RFC2136{Nameserver: d.addr, Zone: "example.test", TSIGKeyName: "Certlife", TSIGAlgorithm: alg, TSIGSecret: rfc2136Secret}
			base, wild := dns01("www.example.test", false, "t1.thumb"), dns01("www.example.test", true, "t2.thumb")
			name := base.DNS01Name()
			require.Equal(t, name, wild.DNS01Name())

			require.NoError(t, r.Present(ctx, base))
			require.NoError(t, r.Present(ctx, wild))
			values, ttls := d.served(t, name)
			assert.ElementsMatch(t, []string{base.DNS01Value(), wild.DNS01Value()}, values)
			assert.Equal(t, []uint32{60, 60}, ttls)

			require.NoError(t, r.Present(ctx, base), "presenting again")
			values, _ = d.served(t, name)
			assert.ElementsMatch(t, []string{base.DNS01Value(), wild.DNS01Value()}, values)

			require.NoError(t, r.CleanUp(ctx, wild))
			values, _ = d.served(t, name)
			assert.Equal(t, []string{base.DNS01Value()}, values)
			require.NoError(t, r.CleanUp(ctx, wild), "cleaning up again")
			values, _ = d.served(t, name)
			assert.Equal(t, []string{base.DNS01Value()}, values)

			require.NoError(t, r.CleanUp(ctx, base))
			values, _ = d.served(t, name)
			assert.Empty(t, values)
			assert.Equal(t, 6, d.updates())
		})
	}
}

func TestRFC2136TTLAndTCP(t *testing.T) {
	// Over TCP the server is not listening: Net "tcp" must fail, the
	// default UDP must not.
	d := startRFC2136Server(t, "example.test.", "", "", false)
	p := dns01("example.test", false, "t.thumb")
	r := &RFC2136{Nameserver: d.addr, Zone: "example.test.", TTL: 120, Timeout: time.Second}
	require.NoError(t, r.Present(context.Background(), p))
	values, ttls := d.served(t, p.DNS01Name())
	assert.Equal(t, []string{p.DNS01Value()}, values)
	assert.Equal(t, []uint32{120}, ttls)

	r.Net = "tcp"
	err := r.CleanUp(context.Background(), p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), d.addr)
	r.Net = "tls"
	assert.ErrorContains(t, r.CleanUp(context.Background(), p), `Net "tls"`)
}

func TestRFC2136BadTSIG(t *testing.T) {
	other := base64.StdEncoding.EncodeToString([]byte("another-secret-0123456789abcdefg"))
	for _, tc := range []struct {
		name  string
		r     RFC2136
		rcode string
	}{
		{name: "wrong secret", r: RFC2136{TSIGKeyName: "certlife.", TSIGSecret: other}, rcode: "NOTAUTH (TSIG error BADSIG)"},
		{name: "unknown key", r: RFC2136{TSIGKeyName: "stranger.", TSIGSecret: rfc2136Secret}, rcode: "NOTAUTH (TSIG error BADKEY)"},
		{name: "unsigned", r: RFC2136{}, rcode: "REFUSED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startRFC2136Server(t, "example.test.", "certlife.", rfc2136Secret, false)
			r := tc.r
			r.Nameserver, r.Zone = d.addr, "example.test."
			p := dns01("example.test", false, "t.thumb")
			err := r.Present(context.Background(), p)
			require.Error(t, err)
			noSecret(t, err)
			assert.Contains(t, err.Error(), "server answered "+tc.rcode)
			for _, s := range []string{d.addr, p.DNS01Name(), "zone example.test."} {
				assert.Contains(t, err.Error(), s)
			}
			values, _ := d.served(t, p.DNS01Name())
			assert.Empty(t, values, "nothing written")
			assert.Zero(t, d.updates())

			err = r.CleanUp(context.Background(), p)
			assert.ErrorContains(t, err, "server answered "+tc.rcode)
			noSecret(t, err)
		})
	}
}

func TestRFC2136ZoneDiscovery(t *testing.T) {
	for _, bare := range []bool{false, true} {
		t.Run(fmt.Sprintf("bare=%v", bare), func(t *testing.T) {
			// bare: negative answers carry no SOA, so the presenter walks
			// up label by label to the apex.
			ctx := context.Background()
			d := startRFC2136Server(t, "example.test.", "certlife.", rfc2136Secret, bare)
			r := &RFC2136{Nameserver: d.addr, TSIGKeyName: "certlife.", TSIGSecret: rfc2136Secret}
			p := dns01("a.b.Example.test", true, "t.thumb") // three labels below the zone
			require.NoError(t, r.Present(ctx, p))
			values, _ := d.served(t, p.DNS01Name())
			assert.Equal(t, []string{p.DNS01Value()}, values)
			require.NoError(t, r.CleanUp(ctx, p))
			values, _ = d.served(t, p.DNS01Name())
			assert.Empty(t, values)

			// A name in no zone of the server.
			err := r.Present(ctx, dns01("www.other.test", false, "t.thumb"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "_acme-challenge.www.other.test.")
			assert.Contains(t, err.Error(), "named no SOA")
			assert.Contains(t, err.Error(), "REFUSED")
			noSecret(t, err)
		})
	}
}

func TestRFC2136WrongZone(t *testing.T) {
	d := startRFC2136Server(t, "example.test.", "", "", false)
	p := dns01("www.example.test", false, "t.thumb")

	// A zone the name is not in: not sent.
	r := &RFC2136{Nameserver: d.addr, Zone: "other.test."}
	assert.ErrorContains(t, r.Present(context.Background(), p), "record name _acme-challenge.www.example.test. is not in zone other.test.")

	// A zone the server does not hold.
	r.Zone = "www.example.test."
	err := r.Present(context.Background(), p)
	assert.ErrorContains(t, err, "server answered NOTAUTH")
	assert.ErrorContains(t, err, "zone www.example.test.")
	assert.Zero(t, d.updates())

	// The test server refuses names outside its zone (what a hand-made
	// update would send).
	m := new(dns.Msg)
	m.SetUpdate("example.test.")
	rr, err := dns.NewRR(`_acme-challenge.other.test. 60 IN TXT "x"`)
	require.NoError(t, err)
	m.Insert([]dns.RR{rr})
	in, _, err := (&dns.Client{}).Exchange(m, d.addr)
	require.NoError(t, err)
	assert.Equal(t, "NOTZONE", dns.RcodeToString[in.Rcode])
	assert.Zero(t, d.updates())
}

func TestRFC2136Unreachable(t *testing.T) {
	p := dns01("example.test", false, "t.thumb")

	// A socket that never answers.
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	// A port where nothing listens.
	closed, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, closed.Close())

	for _, tc := range []struct {
		name, addr, zone string
		ctxTimeout       time.Duration
	}{
		{name: "silent", addr: silent.LocalAddr().String(), zone: "example.test."},
		{name: "silent, discovering the zone", addr: silent.LocalAddr().String()},
		{name: "silent, context deadline first", addr: silent.LocalAddr().String(), zone: "example.test.", ctxTimeout: 200 * time.Millisecond},
		{name: "closed", addr: closed.LocalAddr().String(), zone: "example.test."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeout := 300 * time.Millisecond
			if tc.ctxTimeout != 0 {
				timeout = time.Minute
			}
			r := &RFC2136{Nameserver: tc.addr, Zone: tc.zone, TSIGKeyName: "certlife.", TSIGSecret: rfc2136Secret, Timeout: timeout}
			ctx := context.Background()
			if tc.ctxTimeout != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctxTimeout)
				defer cancel()
				timeout = tc.ctxTimeout
			}
			start := time.Now()
			err := r.Present(ctx, p)
			require.Error(t, err)
			assert.Less(t, time.Since(start), timeout+time.Second)
			assert.Contains(t, err.Error(), tc.addr)
			assert.Contains(t, err.Error(), p.DNS01Name())
			noSecret(t, err)
		})
	}
}

func TestRFC2136Config(t *testing.T) {
	ref := cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: "tsig"}, Key: "secret"}
	good := func() *cmacme.ACMEIssuerDNS01ProviderRFC2136 {
		return &cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "ns1.example.test:53", TSIGKeyName: "certlife.", TSIGAlgorithm: "HMACSHA512", TSIGSecret: ref}
	}

	r, err := newRFC2136(good(), rfc2136Secret)
	require.NoError(t, err)
	assert.Equal(t, &RFC2136{Nameserver: "ns1.example.test:53", TSIGKeyName: "certlife.", TSIGAlgorithm: "HMACSHA512", TSIGSecret: rfc2136Secret}, r)
	r, err = newRFC2136(&cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "[::1]:5353", Protocol: cmacme.RFC2136UpdateProtocolTCP}, "")
	require.NoError(t, err)
	assert.Equal(t, &RFC2136{Nameserver: "[::1]:5353", Net: "tcp"}, r, "protocol TCP")
	// The secret read by the caller counts, with or without the reference.
	_, err = newRFC2136(&cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "ns:53", TSIGKeyName: "k"}, rfc2136Secret)
	require.NoError(t, err)

	const f = "spec.acme.solvers[].dns01.rfc2136."
	for _, tc := range []struct {
		name   string
		edit   func(*cmacme.ACMEIssuerDNS01ProviderRFC2136)
		secret string
		want   string
	}{
		{"no port", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.Nameserver = "x" }, rfc2136Secret, f + `nameserver "x": want host:port`},
		{"no host", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.Nameserver = ":53" }, rfc2136Secret, f + `nameserver ":53": no host`},
		{"bad port", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.Nameserver = "ns:dns" }, rfc2136Secret, f + `nameserver "ns:dns": port "dns"`},
		{"port 0", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.Nameserver = "ns:0" }, rfc2136Secret, f + `nameserver "ns:0": port "0"`},
		{"port too big", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.Nameserver = "ns:65536" }, rfc2136Secret, f + `nameserver "ns:65536": port "65536"`},
		{"bad algorithm", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.TSIGAlgorithm = "HMACSHA3" }, rfc2136Secret, f + `tsigAlgorithm "HMACSHA3": not one of`},
		{"bad protocol", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.Protocol = "QUIC" }, rfc2136Secret, f + `protocol "QUIC": not TCP or UDP`},
		{"secret without key", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.TSIGKeyName, c.TSIGAlgorithm = "", "" }, rfc2136Secret, f + "tsigKeyName: required when tsigSecretSecretRef is set"},
		{"reference without key", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.TSIGKeyName, c.TSIGAlgorithm = "", "" }, "", f + "tsigKeyName: required when tsigSecretSecretRef is set"},
		{"algorithm without key", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) {
			c.TSIGKeyName, c.TSIGSecret = "", cmmeta.SecretKeySelector{}
		}, "", f + `tsigAlgorithm "HMACSHA512": set without tsigKeyName`},
		{"key without secret", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.TSIGSecret = cmmeta.SecretKeySelector{} }, "", f + "tsigSecretSecretRef: required when tsigKeyName is set"},
		{"empty secret", func(*cmacme.ACMEIssuerDNS01ProviderRFC2136) {}, "", f + `tsigSecretSecretRef: Secret "tsig" key "secret" is empty`},
		{"secret not base64", func(*cmacme.ACMEIssuerDNS01ProviderRFC2136) {}, rfc2136Secret[:10] + "!" + rfc2136Secret[10:], f + `tsigSecretSecretRef: Secret "tsig" key "secret": the TSIG secret is not base64`},
		{"secret of no bytes", func(*cmacme.ACMEIssuerDNS01ProviderRFC2136) {}, "====", f + `tsigSecretSecretRef: Secret "tsig" key "secret": the TSIG secret is`},
		{"bad key name", func(c *cmacme.ACMEIssuerDNS01ProviderRFC2136) { c.TSIGKeyName = "a..b" }, rfc2136Secret, f + `tsigKeyName "a..b": not a domain name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.edit(cfg)
			r, err := newRFC2136(cfg, tc.secret)
			assert.Nil(t, r)
			require.ErrorContains(t, err, tc.want)
			noSecret(t, err)
			assert.NotContains(t, err.Error(), rfc2136Secret[:10]) // nor a part of it
		})
	}
	_, err = newRFC2136(nil, "")
	assert.ErrorContains(t, err, "spec.acme.solvers[].dns01.rfc2136: not set")
}

func TestRFC2136InvalidStruct(t *testing.T) {
	ctx := context.Background()
	p := dns01("example.test", false, "t.thumb")
	for _, tc := range []struct {
		r    RFC2136
		want string
	}{
		{RFC2136{}, "no Nameserver"},
		{RFC2136{Nameserver: "ns:53", TSIGSecret: rfc2136Secret}, "TSIGSecret without TSIGKeyName"},
		{RFC2136{Nameserver: "ns:53", TSIGKeyName: "k."}, "TSIG key k. has no TSIGSecret"},
		{RFC2136{Nameserver: "ns:53", TSIGKeyName: "k.", TSIGSecret: "%" + rfc2136Secret}, "TSIG key k.: the TSIG secret is not base64"},
		{RFC2136{Nameserver: "ns:53", TSIGKeyName: "k.", TSIGSecret: rfc2136Secret, TSIGAlgorithm: "hmac-sha256"}, `TSIGAlgorithm "hmac-sha256"`},
	} {
		err := tc.r.Present(ctx, p)
		assert.ErrorContains(t, err, tc.want)
		noSecret(t, err)
		assert.ErrorContains(t, tc.r.CleanUp(ctx, p), tc.want)
	}
	r := &RFC2136{Nameserver: "ns:53"}
	http := p
	http.Type = challenge.TypeHTTP01
	assert.ErrorContains(t, r.Present(ctx, http), "not a DNS-01 presentation")
}

func TestRFC2136NeverPrintsSecret(t *testing.T) {
	r := RFC2136{Nameserver: "ns:53", Zone: "example.test.", TSIGKeyName: "certlife.", TSIGAlgorithm: "HMACSHA256", TSIGSecret: rfc2136Secret, TTL: 60, Timeout: time.Second}
	type holder struct{ R *RFC2136 }
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for _, v := range []any{r, &r, holder{&r}, []RFC2136{r}} {
			out := fmt.Sprintf(format, v)
			assert.NotContains(t, out, rfc2136Secret, format)
			assert.NotContains(t, out, fmt.Sprintf("%x", rfc2136Secret), format)
		}
	}
	assert.Contains(t, fmt.Sprint(r), "REDACTED")
	assert.Contains(t, fmt.Sprint(r), `TSIGKeyName: "certlife."`)
	assert.Equal(t, `operator.RFC2136{Nameserver:"ns:53", Zone:"example.test.", TSIGKeyName:"certlife.", TSIGAlgorithm:"HMACSHA256", TSIGSecret:"REDACTED", TTL:0x3c, Timeout:1000000000, Net:""}`, fmt.Sprintf("%#v", r))
	assert.NotContains(t, fmt.Sprint(RFC2136{}), "REDACTED", "no secret, nothing to redact")
}

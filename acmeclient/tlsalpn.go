package acmeclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/certlife/certlife/challenge"
)

// ACMETLS1Protocol is the ALPN protocol a CA offers, alone, when it
// validates a TLS-ALPN-01 challenge (RFC 8737 §6.2); a server that
// answers TLS-ALPN-01 lists it in its tls.Config.NextProtos.
const ACMETLS1Protocol = "acme-tls/1"

// idPeACMEIdentifier is the id-pe-acmeIdentifier extension (RFC 8737
// §6.1): critical, its value the ASN.1 OCTET STRING of the SHA-256 of
// the key authorization.
var idPeACMEIdentifier = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 31}

// tlsALPN01CacheSize bounds the challenge certificates a TLSALPN01Handler
// keeps built.
const tlsALPN01CacheSize = 256

// TLSALPN01Handler is a TLS-ALPN-01 Presenter and what answers the CA's
// handshake (RFC 8737): for each presented challenge, a self-signed
// certificate whose only subject alternative name is the identifier and
// whose critical acmeIdentifier extension holds the SHA-256 of the key
// authorization, made with a key of its own. Set GetCertificate as the
// tls.Config's GetCertificate (or call it from yours for hellos that
// offer ACMETLS1Protocol) on port 443 of every name it solves for, and
// list ACMETLS1Protocol in the config's NextProtos.
//
// The zero value keeps what it presents in memory. With Store set, every
// presentation is written to the store and every handshake looks it up
// there, so that any replica of a service answers a challenge another
// presented. Set Store before first use. Safe for concurrent use.
type TLSALPN01Handler struct {
	// Store, when set, keeps the presentations (see PresentationStore).
	Store PresentationStore

	mu    sync.Mutex
	local map[string]string // identifier → key authorization (no Store)
	certs map[tlsALPN01CacheKey]*tls.Certificate
	order []tlsALPN01CacheKey // insertion order of certs, for eviction
}

type tlsALPN01CacheKey struct{ identifier, keyAuth string }

var _ Presenter = (*TLSALPN01Handler)(nil)

// NewTLSALPN01Handler returns a handler that keeps its presentations in
// store (nil: in memory).
func NewTLSALPN01Handler(store PresentationStore) *TLSALPN01Handler {
	return &TLSALPN01Handler{Store: store}
}

// tlsALPN01Identifier is the identifier as a TLS-ALPN-01 presentation is
// keyed: a DNS name in lower case without a trailing dot, or an IP
// address in its canonical form. A wildcard is refused: TLS-ALPN-01 does
// not validate wildcards (RFC 8737 §3).
func tlsALPN01Identifier(p Presentation) (string, error) {
	id := strings.TrimSuffix(p.Identifier, ".")
	if p.Wildcard || strings.HasPrefix(id, "*.") {
		return "", fmt.Errorf("acmeclient: TLS-ALPN-01 cannot validate the wildcard *.%s (RFC 8737 §3): use DNS-01", strings.TrimPrefix(id, "*."))
	}
	if id == "" {
		return "", errors.New("acmeclient: TLS-ALPN-01 presentation has no identifier")
	}
	if a, err := netip.ParseAddr(id); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("acmeclient: TLS-ALPN-01 identifier %q has a zone", p.Identifier)
		}
		return a.Unmap().String(), nil
	}
	return strings.ToLower(id), nil
}

// Present answers p's challenge from now on: a hello for p's identifier
// offering ACMETLS1Protocol gets its challenge certificate. With a Store,
// it writes p there.
func (h *TLSALPN01Handler) Present(ctx context.Context, p Presentation) error {
	id, err := tlsALPN01Identifier(p)
	if err != nil {
		return err
	}
	if p.KeyAuthorization == "" {
		return fmt.Errorf("acmeclient: TLS-ALPN-01 presentation for %s has no key authorization", id)
	}
	p.Type, p.Identifier = challenge.TypeTLSALPN01, id
	if h.Store != nil {
		if err := h.Store.PutPresentation(ctx, p); err != nil {
			return fmt.Errorf("acmeclient: TLS-ALPN-01 presentation for %s: %w", id, err)
		}
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.local == nil {
		h.local = map[string]string{}
	}
	h.local[id] = p.KeyAuthorization
	return nil
}

// CleanUp stops answering p's challenge, leaving a later presentation
// for the same identifier (another key authorization) in place.
// Idempotent.
func (h *TLSALPN01Handler) CleanUp(ctx context.Context, p Presentation) error {
	id, err := tlsALPN01Identifier(p)
	if err != nil {
		return nil // nothing of it was ever presented
	}
	p.Type, p.Identifier = challenge.TypeTLSALPN01, id
	if h.Store != nil {
		if err := h.Store.DeletePresentation(ctx, p); err != nil {
			return fmt.Errorf("acmeclient: TLS-ALPN-01 clean-up for %s: %w", id, err)
		}
	} else {
		h.mu.Lock()
		if h.local[id] == p.KeyAuthorization {
			delete(h.local, id)
		}
		h.mu.Unlock()
	}
	h.forget(id, p.KeyAuthorization)
	return nil
}

// Presented is how many identifiers are answered now from memory; a
// handler with a Store keeps nothing there and reports 0.
func (h *TLSALPN01Handler) Presented() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.local)
}

// OffersACMETLS1 reports whether a hello offers exactly ACMETLS1Protocol,
// as a CA validating TLS-ALPN-01 does (RFC 8737 §3): such a hello must be
// answered with a challenge certificate, and only such a hello may be.
func OffersACMETLS1(hello *tls.ClientHelloInfo) bool {
	return hello != nil && len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == ACMETLS1Protocol
}

// GetCertificate returns the challenge certificate for the hello's
// server name, when the hello offers exactly ACMETLS1Protocol and that
// name's challenge is presented. An IP identifier is named by its
// reverse DNS name ("4.3.2.1.in-addr.arpa", RFC 8738 §6). Any other
// hello gets an error, never a certificate: a TLS-ALPN-01 certificate is
// not for serving.
func (h *TLSALPN01Handler) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if !OffersACMETLS1(hello) {
		return nil, fmt.Errorf("acmeclient: TLS-ALPN-01: the hello for %q does not offer exactly %q", hello.ServerName, ACMETLS1Protocol)
	}
	id, err := identifierFromSNI(hello.ServerName)
	if err != nil {
		return nil, err
	}
	var keyAuth string
	if h.Store != nil {
		ctx := hello.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		p, ok, err := h.Store.LookupPresentation(ctx, challenge.TypeTLSALPN01, id)
		if err != nil {
			return nil, fmt.Errorf("acmeclient: TLS-ALPN-01: looking up %s: %w", id, err)
		}
		if ok {
			keyAuth = p.KeyAuthorization
		}
	} else {
		h.mu.Lock()
		keyAuth = h.local[id]
		h.mu.Unlock()
	}
	if keyAuth == "" {
		return nil, fmt.Errorf("acmeclient: TLS-ALPN-01: no challenge is presented for %s", id)
	}
	return h.certificate(id, keyAuth)
}

// identifierFromSNI is the identifier a server name names: a DNS name in
// lower case, or for a reverse name under in-addr.arpa or ip6.arpa the
// IP address (RFC 8738 §6).
func identifierFromSNI(name string) (string, error) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" {
		return "", errors.New("acmeclient: TLS-ALPN-01: the hello names no server (SNI)")
	}
	if rest, ok := strings.CutSuffix(name, ".in-addr.arpa"); ok {
		labels := strings.Split(rest, ".")
		if len(labels) != 4 {
			return "", fmt.Errorf("acmeclient: TLS-ALPN-01: %q is not the reverse name of an IPv4 address", name)
		}
		var b [4]byte
		for i, l := range labels {
			n, err := strconv.ParseUint(l, 10, 8)
			if err != nil || (len(l) > 1 && l[0] == '0') {
				return "", fmt.Errorf("acmeclient: TLS-ALPN-01: %q is not the reverse name of an IPv4 address", name)
			}
			b[3-i] = byte(n)
		}
		return netip.AddrFrom4(b).String(), nil
	}
	if rest, ok := strings.CutSuffix(name, ".ip6.arpa"); ok {
		labels := strings.Split(rest, ".")
		if len(labels) != 32 {
			return "", fmt.Errorf("acmeclient: TLS-ALPN-01: %q is not the reverse name of an IPv6 address", name)
		}
		var b [16]byte
		for i, l := range labels {
			n, err := strconv.ParseUint(l, 16, 4)
			if err != nil || len(l) != 1 {
				return "", fmt.Errorf("acmeclient: TLS-ALPN-01: %q is not the reverse name of an IPv6 address", name)
			}
			nibble := 31 - i // the first label is the lowest nibble
			b[nibble/2] |= byte(n) << (4 * (1 - nibble%2))
		}
		return netip.AddrFrom16(b).Unmap().String(), nil
	}
	return name, nil
}

// ReverseName is the server name a CA sends to validate an IP identifier
// over TLS-ALPN-01 (RFC 8738 §6): "4.3.2.1.in-addr.arpa" for 1.2.3.4,
// the nibbles under "ip6.arpa" for an IPv6 address. For a DNS name it is
// the name itself.
func ReverseName(identifier string) string {
	a, err := netip.ParseAddr(identifier)
	if err != nil {
		return identifier
	}
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return fmt.Sprintf("%d.%d.%d.%d.in-addr.arpa", b[3], b[2], b[1], b[0])
	}
	b := a.As16()
	var sb strings.Builder
	for i := 15; i >= 0; i-- {
		fmt.Fprintf(&sb, "%x.%x.", b[i]&0x0f, b[i]>>4)
	}
	sb.WriteString("ip6.arpa")
	return sb.String()
}

// certificate returns the challenge certificate for identifier and key
// authorization, built once and kept (a bounded number of them).
func (h *TLSALPN01Handler) certificate(id, keyAuth string) (*tls.Certificate, error) {
	k := tlsALPN01CacheKey{id, keyAuth}
	h.mu.Lock()
	c := h.certs[k]
	h.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := TLSALPN01Certificate(id, keyAuth)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev := h.certs[k]; prev != nil {
		return prev, nil // built at the same time by another handshake
	}
	if h.certs == nil {
		h.certs = map[tlsALPN01CacheKey]*tls.Certificate{}
	}
	for len(h.order) >= tlsALPN01CacheSize {
		delete(h.certs, h.order[0])
		h.order = h.order[1:]
	}
	h.certs[k] = c
	h.order = append(h.order, k)
	return c, nil
}

// forget drops the certificate built for identifier and key
// authorization.
func (h *TLSALPN01Handler) forget(id, keyAuth string) {
	k := tlsALPN01CacheKey{id, keyAuth}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.certs[k]; !ok {
		return
	}
	delete(h.certs, k)
	for i, o := range h.order {
		if o == k {
			h.order = append(h.order[:i:i], h.order[i+1:]...)
			break
		}
	}
}

// TLSALPN01Certificate builds the certificate that answers a TLS-ALPN-01
// challenge (RFC 8737 §3): self-signed with a new P-256 key, its only
// subject alternative name the identifier (a DNS name, or an IP address
// as an iPAddress, RFC 8738 §6), and the critical id-pe-acmeIdentifier
// extension holding the SHA-256 of keyAuth as an OCTET STRING. It is
// valid from a day before now for a week; CAs do not check it.
func TLSALPN01Certificate(identifier, keyAuth string) (*tls.Certificate, error) {
	id, err := tlsALPN01Identifier(Presentation{Identifier: identifier})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(keyAuth))
	value, err := asn1.Marshal(sum[:])
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "ACME TLS-ALPN-01 challenge"},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		ExtraExtensions:       []pkix.Extension{{Id: idPeACMEIdentifier, Critical: true, Value: value}},
	}
	if a, err := netip.ParseAddr(id); err == nil {
		tmpl.IPAddresses = []net.IP{a.AsSlice()}
	} else {
		tmpl.DNSNames = []string{id}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("acmeclient: TLS-ALPN-01 certificate for %s: %w", id, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// TLSALPN01Checker is the TLS-ALPN-01 self-check: it makes the handshake
// the CA will make — to the identifier's address on the port, naming the
// identifier (an IP address's reverse name) and offering only
// ACMETLS1Protocol — and checks the certificate it gets, before the
// challenge is accepted.
type TLSALPN01Checker struct {
	// Dialer dials; nil means a dialer with a 10 s timeout. Tests give it
	// a resolver that asks their DNS server.
	Dialer *net.Dialer
	// Port is the port to dial; zero means 443.
	Port int
}

var _ Checker = TLSALPN01Checker{}

// Check dials identifier:port and reports whether the handshake
// negotiates ACMETLS1Protocol with a certificate for the identifier alone
// whose acmeIdentifier extension holds p's key authorization's digest.
func (c TLSALPN01Checker) Check(ctx context.Context, p Presentation) error {
	id, err := tlsALPN01Identifier(p)
	if err != nil {
		return err
	}
	d := c.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: 10 * time.Second}
	}
	port := c.Port
	if port == 0 {
		port = 443
	}
	addr := net.JoinHostPort(id, strconv.Itoa(port))
	td := &tls.Dialer{NetDialer: d, Config: &tls.Config{
		ServerName:         ReverseName(id),
		NextProtos:         []string{ACMETLS1Protocol},
		InsecureSkipVerify: true, // the certificate is self-signed; it is checked below
		MinVersion:         tls.VersionTLS12,
	}}
	conn, err := td.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("acmeclient: TLS-ALPN-01 self-check of %s: %w", id, err)
	}
	defer conn.Close()
	cs := conn.(*tls.Conn).ConnectionState()
	if cs.NegotiatedProtocol != ACMETLS1Protocol {
		return fmt.Errorf("acmeclient: TLS-ALPN-01 self-check of %s: %s did not negotiate %q", id, addr, ACMETLS1Protocol)
	}
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("acmeclient: TLS-ALPN-01 self-check of %s: %s sent no certificate", id, addr)
	}
	return CheckTLSALPN01Certificate(cs.PeerCertificates[0], id, p.KeyAuthorization)
}

// CheckTLSALPN01Certificate reports whether leaf answers the TLS-ALPN-01
// challenge of identifier with keyAuth (RFC 8737 §3): its only subject
// alternative name is the identifier, and its critical acmeIdentifier
// extension holds the SHA-256 of keyAuth.
func CheckTLSALPN01Certificate(leaf *x509.Certificate, identifier, keyAuth string) error {
	id, err := tlsALPN01Identifier(Presentation{Identifier: identifier})
	if err != nil {
		return err
	}
	names := len(leaf.DNSNames) + len(leaf.IPAddresses) + len(leaf.URIs) + len(leaf.EmailAddresses)
	match := false
	if a, err := netip.ParseAddr(id); err == nil {
		match = names == 1 && len(leaf.IPAddresses) == 1 && leaf.IPAddresses[0].Equal(a.AsSlice())
	} else {
		match = names == 1 && len(leaf.DNSNames) == 1 && strings.EqualFold(leaf.DNSNames[0], id)
	}
	if !match {
		return fmt.Errorf("acmeclient: TLS-ALPN-01 certificate for %s names %v %v instead of %s alone", id, leaf.DNSNames, leaf.IPAddresses, id)
	}
	want := sha256.Sum256([]byte(keyAuth))
	for _, ext := range leaf.Extensions {
		if !ext.Id.Equal(idPeACMEIdentifier) {
			continue
		}
		if !ext.Critical {
			return fmt.Errorf("acmeclient: TLS-ALPN-01 certificate for %s: the acmeIdentifier extension is not critical", id)
		}
		var got []byte
		if rest, err := asn1.Unmarshal(ext.Value, &got); err != nil || len(rest) != 0 {
			return fmt.Errorf("acmeclient: TLS-ALPN-01 certificate for %s: the acmeIdentifier extension is not an OCTET STRING", id)
		}
		if !bytes.Equal(got, want[:]) {
			return fmt.Errorf("acmeclient: TLS-ALPN-01 certificate for %s holds another key authorization", id)
		}
		return nil
	}
	return fmt.Errorf("acmeclient: TLS-ALPN-01 certificate for %s has no acmeIdentifier extension", id)
}

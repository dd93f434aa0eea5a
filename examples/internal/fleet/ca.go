package fleet

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"sync"
	"time"

	"github.com/certlife/certlife/certificate"
)

// fault is a misbehaviour of the simulated CA for one request.
type fault uint8

const (
	faultNone fault = iota
	// faultFail: the request fails ("the CA is unavailable").
	faultFail
	// faultWrongKey: a certificate for another key than the CSR's.
	faultWrongKey
	// faultExpired: a certificate that has already expired.
	faultExpired
	// faultRateLimited: the request fails with a Retry-After.
	faultRateLimited
	// faultOutage: the request fails on a day the CA is down.
	faultOutage
	numFaults
)

func (f fault) String() string {
	return [...]string{"none", "fail", "wrong key", "expired", "rate limited", "outage"}[f]
}

// ca is the simulation's certificate authority and its issuer
// (certificate.Issuer): an Ed25519 root that signs with
// x509.CreateCertificate, like an external CA that keeps an order for each
// request it is asked about. The order is made at the first Answer — it
// fixes when the CA answers (at once, or after a delay, meanwhile the
// request stays Pending) and how (a fault, or a certificate) — and kept,
// answered or not, until the host tells the CA that the request is
// deleted (Forget). So the number of orders the CA holds is the count of
// requests the host has not told it about yet.
//
// It does not check a request's CSR signature: the simulation's requests
// are made in the same process, and the check costs as much as signing.
type ca struct {
	cert    *x509.Certificate
	certPEM []byte
	key     ed25519.PrivateKey
	rand    io.Reader

	// plan decides a new order: its fault and how long it stays pending.
	plan func(r *certificate.CertificateRequest, now time.Time) (fault, time.Duration)
	// retryAfter is a rate-limited answer's wait.
	retryAfter time.Duration

	mu     sync.Mutex
	serial int64
	orders map[objKey]order
	// made names the orders made since the last takeMade.
	made []objKey

	// Counts: answers by fault, orders forgotten, the most orders kept at
	// once.
	faults              [numFaults]int
	forgets, ordersPeak int
}

// order is what the CA keeps for one request.
type order struct {
	due      int64 // Unix nanoseconds: when the CA answers
	fault    fault
	answered bool
}

var (
	_ certificate.Issuer    = (*ca)(nil)
	_ certificate.Forgetter = (*ca)(nil)
)

// newCA makes a root valid for ten years from notBefore.
func newCA(rnd io.Reader, commonName string, notBefore time.Time) (*ca, error) {
	pub, key, err := ed25519.GenerateKey(rnd)
	if err != nil {
		return nil, fmt.Errorf("fleet: the CA's key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: commonName},
		NotBefore: notBefore, NotAfter: notBefore.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rnd, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("fleet: the CA's root: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("fleet: the CA's root: %w", err)
	}
	return &ca{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key, rand: rnd,
		serial: 1, orders: map[objKey]order{}}, nil
}

// Answer implements certificate.Issuer.
func (c *ca) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	if certificate.Answered(r) {
		return time.Time{}, nil
	}
	k := objKey{r.Namespace, r.Name}
	c.mu.Lock()
	o, ok := c.orders[k]
	if !ok {
		f, wait := faultNone, time.Duration(0)
		if c.plan != nil {
			f, wait = c.plan(r, now)
		}
		o = order{due: now.Add(wait).UnixNano(), fault: f}
		c.orders[k] = o
		c.made = append(c.made, k)
		c.ordersPeak = max(c.ordersPeak, len(c.orders))
	}
	c.mu.Unlock()
	if due := time.Unix(0, o.due).UTC(); now.Before(due) {
		certificate.SetPending(r, "the CA is working on the order; it answers at "+due.UTC().Format(time.RFC3339), now)
		return due, nil
	}
	if err := c.answer(r, o.fault, now); err != nil {
		return time.Time{}, err
	}
	c.mu.Lock()
	o.answered = true
	if _, ok := c.orders[k]; ok {
		c.orders[k] = o
	}
	c.faults[o.fault]++
	c.mu.Unlock()
	return time.Time{}, nil
}

// answer answers r as the order's fault says.
func (c *ca) answer(r *certificate.CertificateRequest, f fault, now time.Time) error {
	switch f {
	case faultFail:
		certificate.SetFailed(r, "the CA is unavailable", now, time.Time{})
		return nil
	case faultOutage:
		certificate.SetFailed(r, "the CA is down for the day", now, time.Time{})
		return nil
	case faultRateLimited:
		at := now.Add(c.retryAfter)
		certificate.SetFailed(r, "rate limited: too many certificates for this name; retry after "+at.UTC().Format(time.RFC3339), now, at)
		return nil
	}
	block, _ := pem.Decode(r.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		certificate.SetInvalid(r, "the request's CSR is not a PEM CERTIFICATE REQUEST", now)
		return nil
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		certificate.SetInvalid(r, "the request's CSR cannot be read: "+err.Error(), now)
		return nil
	}
	d := certificate.DefaultDuration
	if r.Spec.Duration != nil {
		d = r.Spec.Duration.Duration
	}
	notBefore, notAfter := now, now.Add(d)
	var pub crypto.PublicKey = csr.PublicKey
	switch f {
	case faultWrongKey:
		if pub, _, err = ed25519.GenerateKey(c.rand); err != nil {
			return err
		}
	case faultExpired:
		notBefore, notAfter = now.Add(-2*d), now.Add(-d)
	}
	c.mu.Lock()
	c.serial++
	serial := c.serial
	c.mu.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		RawSubject:   csr.RawSubject, Subject: csr.Subject,
		DNSNames: csr.DNSNames, IPAddresses: csr.IPAddresses, EmailAddresses: csr.EmailAddresses, URIs: csr.URIs,
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: r.Spec.IsCA,
	}
	der, err := x509.CreateCertificate(c.rand, tmpl, c.cert, pub, c.key)
	if err != nil {
		certificate.SetFailed(r, "signing: "+err.Error(), now, time.Time{})
		return nil
	}
	certificate.SetIssued(r, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), c.certPEM, now)
	return nil
}

// Forget implements certificate.Forgetter: the order goes.
func (c *ca) Forget(_ context.Context, namespace, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := objKey{namespace, name}
	if _, ok := c.orders[k]; ok {
		delete(c.orders, k)
		c.forgets++
	}
	return nil
}

// holds reports whether the CA keeps an order for the request.
func (c *ca) holds(namespace, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.orders[objKey{namespace, name}]
	return ok
}

// orderCount is the number of orders the CA keeps.
func (c *ca) orderCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.orders)
}

// takeMade returns the orders made since the last call.
func (c *ca) takeMade() []objKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.made
	c.made = nil
	return m
}

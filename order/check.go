package order

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// CheckCertificate checks the chain a server issued for an order before it
// is handed over: the chain (PEM, leaf first) must decode, the leaf's
// public key must be the CSR's, and the leaf must name exactly the
// identifiers the order asked for (Identifiers: the CSR's DNS names and IP
// addresses, and its common name) — no fewer, no more. It returns what is
// wrong, in words a person can act on, or "" when nothing is. Decide
// calls it on the fetched certificate.
func CheckCertificate(s *Spec, chain []byte) string {
	var certs []*x509.Certificate
	rest := chain
	for n := 1; ; n++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Sprintf("the certificate chain does not decode: PEM block %d is a %q, not a CERTIFICATE", n, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fmt.Sprintf("the certificate chain does not decode: certificate %d: %v", n, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return "the certificate chain does not decode: it holds no PEM CERTIFICATE block"
	}
	leaf := certs[0]
	csr, err := x509.ParseCertificateRequest(s.CSR)
	if err != nil {
		return "the order's CSR does not parse, so the certificate cannot be checked against it: " + err.Error()
	}
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(csr.PublicKey) {
		return fmt.Sprintf("the certificate (serial %x) is for another public key than the CSR's", leaf.SerialNumber)
	}
	wantDNS, wantIPs, problem := Identifiers(s)
	if problem != "" {
		return problem
	}
	want := map[string]bool{}
	for _, n := range wantDNS {
		want[canonicalName(n)] = true
	}
	for _, ip := range wantIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			want[a.Unmap().String()] = true
		}
	}
	have := map[string]bool{}
	for _, n := range leaf.DNSNames {
		have[canonicalName(n)] = true
	}
	for _, ip := range leaf.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			have[a.Unmap().String()] = true
		}
	}
	var missing, extra []string
	for n := range want {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	for n := range have {
		if !want[n] {
			extra = append(extra, n)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	var why []string
	if len(missing) > 0 {
		why = append(why, "does not name "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		why = append(why, "names "+strings.Join(extra, ", ")+", which the order did not ask for")
	}
	if len(why) > 0 {
		return fmt.Sprintf("the certificate (serial %x) %s", leaf.SerialNumber, strings.Join(why, " and "))
	}
	return ""
}

func canonicalName(n string) string { return strings.ToLower(strings.TrimSuffix(n, ".")) }

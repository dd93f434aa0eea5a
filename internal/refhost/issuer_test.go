package refhost

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/order"
)

// The ACME issuer's order carries the CSR's common name as itself: an IP
// address becomes an IP identifier (RFC 8738), never a DNS name; a name
// becomes a DNS identifier once.
func TestACMEOrderIdentifiersFromTheCommonName(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tests := map[string]struct {
		cn       string
		dnsNames []string
		ips      []net.IP
		wantDNS  []string
		wantIPs  []string
	}{
		"an IP address common name is an IP identifier, never a DNS name": {
			cn: "192.0.2.7", dnsNames: []string{"web.example"}, ips: []net.IP{net.ParseIP("192.0.2.7")},
			wantDNS: []string{"web.example"}, wantIPs: []string{"192.0.2.7"},
		},
		"an IP address common name alone is ordered as an IP identifier": {
			cn: "192.0.2.7", wantIPs: []string{"192.0.2.7"},
		},
		"a name common name already among the DNS names is ordered once": {
			cn: "web.example", dnsNames: []string{"web.example", "www.web.example"}, wantDNS: []string{"web.example", "www.web.example"},
		},
		"a name common name alone is ordered as a DNS identifier": {
			cn: "only.example", wantDNS: []string{"only.example"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tmpl := &x509.CertificateRequest{DNSNames: tc.dnsNames, IPAddresses: tc.ips}
			tmpl.Subject.CommonName = tc.cn
			der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
			require.NoError(t, err)
			csr, err := x509.ParseCertificateRequest(der)
			require.NoError(t, err)
			spec := (&ACME{}).orderSpec(&certificate.CertificateRequest{}, csr, t0)
			assert.NotContains(t, spec.DNSNames, "192.0.2.7")
			dns, ips, problem := order.Identifiers(&spec)
			require.Empty(t, problem)
			assert.Equal(t, tc.wantDNS, dns)
			assert.Equal(t, tc.wantIPs, ips)
		})
	}
}

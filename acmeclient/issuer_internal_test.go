package acmeclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// The order for a request: its CSR's names, the common name as itself —
// an IP address becomes an IP identifier (RFC 8738), never a DNS name; a
// name becomes a DNS identifier once — the issuer's solvers, replaces
// from the request, and the validity when asked for (RFC 8555 §7.4).
func TestOrderSpecFromTheRequest(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	iss, err := NewIssuer(IssuerConfig{Client: &Client{}, Store: NewMemoryStore(), Solvers: Solvers{HTTP01: &HTTP01Handler{}}})
	require.NoError(t, err)
	http01 := []order.SolverConfig{{Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{}}}}
	now := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	tests := map[string]struct {
		cn          string
		dnsNames    []string
		ips         []net.IP
		annotations map[string]string
		duration    time.Duration
		validity    bool
		wantDNS     []string
		wantIPs     []string
		want        func(o order.Spec) order.Spec // the rest of the spec
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
		"a renewal names the certificate it replaces (RFC 9773 §5)": {
			dnsNames: []string{"web.example"}, wantDNS: []string{"web.example"},
			annotations: map[string]string{certificate.AnnotationReplaces: "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"},
			want:        func(o order.Spec) order.Spec { o.Replaces = "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"; return o },
		},
		"the validity asked for is from now, to the second, for the request's duration": {
			dnsNames: []string{"web.example"}, wantDNS: []string{"web.example"}, duration: 48 * time.Hour, validity: true,
			want: func(o order.Spec) order.Spec {
				nb := now.Truncate(time.Second)
				na := nb.Add(48 * time.Hour)
				o.NotBefore, o.NotAfter = &nb, &na
				return o
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tmpl := &x509.CertificateRequest{DNSNames: tc.dnsNames, IPAddresses: tc.ips}
			tmpl.Subject.CommonName = tc.cn
			der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
			require.NoError(t, err)
			r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "web-1", Annotations: tc.annotations},
				Spec: certificate.RequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
					IssuerRef: certificate.IssuerRef{Name: "letsencrypt"}}}
			if tc.duration > 0 {
				r.Spec.Duration = &certificate.Duration{Duration: tc.duration}
			}
			iss.cfg.RequestValidity = tc.validity
			spec, problem := iss.orderSpec(r, "https://ca/acct/1", now)
			require.Empty(t, problem)
			want := order.Spec{CSR: der, Issuer: challenge.Issuer{Name: "letsencrypt"}, Account: "https://ca/acct/1", CommonName: tc.cn,
				DNSNames: tc.dnsNames, Solvers: http01}
			for _, ip := range tc.ips {
				want.IPAddresses = append(want.IPAddresses, ip.String())
			}
			if tc.want != nil {
				want = tc.want(want)
			}
			if diff := cmp.Diff(want, spec); diff != "" {
				t.Fatalf("orderSpec() mismatch (-want +got):\n%s", diff)
			}
			dns, ips, problem := order.Identifiers(&spec)
			require.Empty(t, problem)
			require.Equal(t, tc.wantDNS, dns)
			require.Equal(t, tc.wantIPs, ips)
		})
	}
}

// benchIssuer is an issuer whose index holds n states, each with one
// challenge in flight for its own name, and whose store holds them too.
func benchIssuer(b *testing.B, n int) (*Issuer, *MemoryStore) {
	b.Helper()
	store := NewMemoryStore()
	iss, err := NewIssuer(IssuerConfig{Client: &Client{clock: clock.RealClock{}}, Store: store, Solvers: Solvers{HTTP01: &HTTP01Handler{}},
		Scheduler: challenge.SchedulerConfig{MaxInFlight: n}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	for k := range n {
		name := fmt.Sprintf("web-%d", k)
		st := &State{Request: RequestRef{Namespace: "default", Name: name},
			Order: order.Order{Name: name + "-00000000", Namespace: "default", CreationTimestamp: now},
			Challenges: []challenge.Challenge{{Name: name + "-0", CreationTimestamp: now,
				Spec:   challenge.Spec{Type: challenge.TypeHTTP01, DNSName: name + ".example", Token: "t" + name, Account: "acct"},
				Status: challenge.Status{Processing: true, Presented: true}}}}
		if err := store.Put(ctx, st.Order.Name, st); err != nil {
			b.Fatal(err)
		}
	}
	if err := iss.load(ctx, now); err != nil {
		b.Fatal(err)
	}
	return iss, store
}

// BenchmarkSchedule is what a step whose challenge waits for a slot costs
// with n states in flight: the scheduler's pass over the index in memory.
// BenchmarkListTheStore is what every such step cost before the index: a
// listing (and decoding) of the whole store.
func BenchmarkSchedule(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("%d states", n), func(b *testing.B) {
			iss, _ := benchIssuer(b, n)
			ctx := context.Background()
			now := time.Now()
			// Every slot is taken: the step's challenge waits.
			st := &State{Order: order.Order{Name: "waiting-00000000"}, Challenges: []challenge.Challenge{{Name: "waiting-0",
				Spec: challenge.Spec{Type: challenge.TypeHTTP01, DNSName: "web-0.example", Account: "acct"}}}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				started, waiting, err := iss.schedule(ctx, "waiting-00000000", st, now)
				if err != nil || started || waiting == "" {
					b.Fatalf("started %v, waiting %q, error %v", started, waiting, err)
				}
			}
		})
	}
}

func BenchmarkListTheStore(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("%d states", n), func(b *testing.B) {
			_, store := benchIssuer(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := store.List(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// chainCA gives the chain's last certificate as the request's CA only
// when the chain holds more than the leaf and that certificate is a CA
// (RFC 5280 §4.2.1.9: basic constraints, cA true).
func TestChainCAIsACAOrNothing(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	cert := func(cn string, isCA bool) []byte {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true, IsCA: isCA}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	leaf, inter, root, other := cert("leaf", false), cert("intermediate", true), cert("root", true), cert("another leaf", false)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := map[string]struct {
		chain, want []byte
	}{
		"a leaf and its intermediate: the intermediate":     {cat(leaf, inter), inter},
		"a leaf, an intermediate and a root: the root":      {cat(leaf, inter, root), root},
		"the leaf alone: none":                              {leaf, nil},
		"a CA certificate alone (an isCA request): none":    {inter, nil},
		"a chain whose last certificate is no CA: none":     {cat(leaf, other), nil},
		"a last block that does not parse: none":            {cat(leaf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}})), nil},
		"a last block that is not a certificate is skipped": {cat(leaf, inter, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})), inter},
		"nothing: none": {nil, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, string(tc.want), string(chainCA(tc.chain)))
		})
	}
}

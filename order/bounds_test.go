package order

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/challenge"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// withCSR gives the order a CSR for its DNS names, made with a new key,
// and returns the key.
func withCSR(o *Order) (*Order, crypto.Signer) {
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	o.Spec.CSR = must(x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: o.Spec.DNSNames}, key))
	return o, key
}

// selfSigned is a PEM chain of one certificate for key's public key and
// the names (IP addresses among them as IP SANs).
func selfSigned(key crypto.Signer, names []string) []byte {
	ca := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(90 * 24 * time.Hour)}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), ca))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A certificate is checked against the order before it is handed over:
// its chain decodes, its key is the CSR's, its names are the order's
// (RFC 8555 §7.4: the certificate is for the CSR the order was finalized
// with).
func TestCheckCertificate(t *testing.T) {
	o, key := withCSR(newOrder()) // web.example, *.web.example
	other := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	tests := map[string]struct {
		chain []byte
		// want: words the problem holds; none means no problem
		want []string
	}{
		"the CSR's key and exactly the order's names":  {chain: selfSigned(key, []string{"web.example", "*.web.example"})},
		"names compare without case or a trailing dot": {chain: selfSigned(key, []string{"WEB.example.", "*.Web.Example"})},
		"another public key than the CSR's": {
			chain: selfSigned(other, []string{"web.example", "*.web.example"}), want: []string{"another public key than the CSR's"},
		},
		"a name missing": {chain: selfSigned(key, []string{"web.example"}), want: []string{"does not name *.web.example"}},
		"a name the order did not ask for": {
			chain: selfSigned(key, []string{"web.example", "*.web.example", "evil.example"}),
			want:  []string{"names evil.example, which the order did not ask for"},
		},
		"PEM that holds no certificate": {chain: []byte("not PEM at all"), want: []string{"does not decode", "no PEM CERTIFICATE block"}},
		"a certificate block whose DER does not parse": {
			chain: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x01}}),
			want:  []string{"does not decode", "certificate 1"},
		},
		"a block that is not a certificate": {
			chain: append(selfSigned(key, []string{"web.example", "*.web.example"}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})...),
			want:  []string{"PEM block 2", `"PRIVATE KEY"`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := CheckCertificate(&o.Spec, tc.chain)
			if len(tc.want) == 0 {
				assert.Empty(t, got)
				return
			}
			require.NotEmpty(t, got)
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
			assert.NotContains(t, got, "PRIVATE KEY-----", "key material in a message")
		})
	}

	t.Run("an IP address identifier matches an IP SAN (RFC 8738)", func(t *testing.T) {
		o := newOrder()
		o.Spec.DNSNames, o.Spec.IPAddresses = nil, []string{"192.0.2.7"}
		key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
		o.Spec.CSR = must(x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{IPAddresses: []net.IP{net.ParseIP("192.0.2.7")}}, key))
		assert.Empty(t, CheckCertificate(&o.Spec, selfSigned(key, []string{"192.0.2.7"})))
		assert.Contains(t, CheckCertificate(&o.Spec, selfSigned(key, []string{"192.0.2.8"})), "does not name 192.0.2.7")
	})
}

// The bounds that keep an order from waiting without end, and the
// recoveries that wait for nothing.
func TestDecideBounds(t *testing.T) {
	far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) // an HTTP-date Retry-After
	validWith := func(chain func(o *Order, key crypto.Signer) []byte) func() (*Order, []*challenge.Challenge) {
		return func() (*Order, []*challenge.Challenge) {
			o, key := withCSR(newOrder())
			authorized(o)
			o.Status.State, o.Status.CertificateURL = StateValid, "https://ca/cert/1"
			o.Status.ReplacesRefused = "at least one identifier must match"
			o.Status.Certificate = chain(o, key)
			return o, wanted(o, challenge.StateValid)
		}
	}
	otherKey := func(o *Order, _ crypto.Signer) []byte {
		return selfSigned(must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)), o.Spec.DNSNames)
	}
	tests := map[string]struct {
		order func() (*Order, []*challenge.Challenge)
		cfg   Config
		// want: the actions, the reason, the requeue after t0, words of
		// the message; check looks at the result further
		want    string
		reason  string
		requeue time.Duration
		words   []string
		check   func(t *testing.T, o *Order, res Result)
	}{
		"a certificate for another key than the CSR's: the order is made again, once, its challenges deleted": {
			order:  validWith(otherKey),
			want:   "DeleteChallenge{web-1-0: the order's certificate cannot be used} DeleteChallenge{web-1-1: the order's certificate cannot be used} UpdateStatus{state=}",
			reason: ReasonBadCertificate, words: []string{"another public key", "ordering it again, once"},
			check: func(t *testing.T, o *Order, res Result) {
				st := res.Actions[len(res.Actions)-1].(UpdateStatus).Status
				want := Status{BadCertificate: CheckCertificate(&o.Spec, o.Status.Certificate), ReplacesRefused: o.Status.ReplacesRefused}
				assert.Empty(t, cmp.Diff(want, st), "a fresh status that remembers the bad certificate and the refused replaces")
				next := *o
				next.Status = st
				again := Decide(&next, nil, t0, Config{})
				require.Equal(t, ReasonCreating, again.Reason, "the next decision creates the order again: %s", again.Message)
				assert.Empty(t, again.Actions[0].(CreateOrder).Replaces, "without the replaces the server refused")
			},
		},
		"a second bad certificate fails the order, naming both": {
			order: func() (*Order, []*challenge.Challenge) {
				o, owned := validWith(otherKey)()
				o.Status.BadCertificate = "the first was for another public key"
				return o, owned
			},
			want: "UpdateStatus{state=errored}", reason: ReasonBadCertificate,
			words: []string{"second order in a row", "another public key than the CSR's", "the first was for another public key"},
		},
		"a certificate that names what the order asked for is done": {
			order: validWith(func(o *Order, key crypto.Signer) []byte { return selfSigned(key, o.Spec.DNSNames) }),
			want:  "DeleteChallenge{web-1-0: the order has its certificate} DeleteChallenge{web-1-1: the order has its certificate}", reason: ReasonDone,
		},
		"a Retry-After longer than an hour on the order fails it with that Retry-After (RFC 9110 §10.2.3)": {
			order: func() (*Order, []*challenge.Challenge) {
				o := failing(authorized(newOrder()), 1, 0, "rate limited")
				o.Status.RetryAfter = tp(t0.Add(2 * time.Hour))
				return o, nil
			},
			want: "UpdateStatus{state=errored}", reason: ReasonRetryAfterTooLong, words: []string{"the order", "longer than the 1h0m0s"},
			check: func(t *testing.T, _ *Order, res Result) {
				st := res.Actions[0].(UpdateStatus).Status
				require.NotNil(t, st.RetryAfter)
				assert.Equal(t, t0.Add(2*time.Hour), *st.RetryAfter, "the Retry-After stays, for the certificate's backoff")
			},
		},
		"an HTTP-date Retry-After far in the future fails the order the same way": {
			order: func() (*Order, []*challenge.Challenge) {
				o := failing(authorized(newOrder()), 1, 0, "unavailable")
				o.Status.RetryAfter = &far
				return o, nil
			},
			want: "UpdateStatus{state=errored}", reason: ReasonRetryAfterTooLong, words: []string{"2100-01-01T00:00:00Z"},
		},
		"a Retry-After of exactly the bound is waited for": {
			order: func() (*Order, []*challenge.Challenge) {
				o := failing(authorized(newOrder()), 1, 0, "rate limited")
				o.Status.RetryAfter = tp(t0.Add(time.Hour))
				return o, nil
			},
			reason: ReasonRetryingAfterError, requeue: time.Hour,
		},
		"a longer bound is configurable": {
			order: func() (*Order, []*challenge.Challenge) {
				o := failing(authorized(newOrder()), 1, 0, "rate limited")
				o.Status.RetryAfter = tp(t0.Add(2 * time.Hour))
				return o, nil
			},
			cfg:    Config{MaxRetryAfter: 3 * time.Hour},
			reason: ReasonRetryingAfterError, requeue: 2 * time.Hour,
		},
		"a challenge the server asks to wait three hours fails the order with its Retry-After": {
			order: func() (*Order, []*challenge.Challenge) {
				o := authorized(newOrder())
				owned := wanted(o, challenge.StatePending)
				owned[1].Status.RetryAfter = tp(t0.Add(3 * time.Hour))
				return o, owned
			},
			want: "UpdateStatus{state=errored}", reason: ReasonRetryAfterTooLong, words: []string{"the challenge for web.example"},
			check: func(t *testing.T, _ *Order, res Result) {
				st := res.Actions[0].(UpdateStatus).Status
				require.NotNil(t, st.RetryAfter)
				assert.Equal(t, t0.Add(3*time.Hour), *st.RetryAfter)
			},
		},
		"a final challenge's Retry-After holds nothing": {
			order: func() (*Order, []*challenge.Challenge) {
				o := authorized(newOrder())
				owned := wanted(o, challenge.StateValid)
				owned[1].Status.RetryAfter = tp(t0.Add(3 * time.Hour))
				return o, owned
			},
			want: "Finalize{https://ca/order/1/finalize}", reason: ReasonFinalizing,
		},
		"an order past its expiry before it was finalized fails, saying so (RFC 8555 §7.1.6)": {
			order: func() (*Order, []*challenge.Challenge) {
				o := authorized(newOrder())
				o.CreationTimestamp = t0.Add(-time.Hour)
				o.Status.Expires = tp(t0.Add(-time.Second))
				return o, wanted(o, challenge.StatePending)
			},
			want: "UpdateStatus{state=errored}", reason: ReasonOrderExpired, words: []string{"expired at 2026-03-01T11:59:59Z"},
		},
		"an expiry before the order was created here is a clock that disagrees, not believed: 7 days from its creation": {
			order: func() (*Order, []*challenge.Challenge) {
				o := authorized(newOrder())
				o.Status.Expires = tp(t0.Add(-24 * time.Hour)) // a CA on real time, a host on a fake clock days ahead
				return o, wanted(o, challenge.StatePending)
			},
			reason: ReasonWaitingForChallenges, requeue: 7 * 24 * time.Hour,
		},
		"an order the server is issuing is followed past its expiry": {
			order: func() (*Order, []*challenge.Challenge) {
				o := authorized(newOrder())
				o.Status.State, o.Status.Expires = StateProcessing, tp(t0.Add(-time.Second))
				return o, nil
			},
			want: "Sync{https://ca/order/1}", reason: ReasonSyncing,
		},
		"a finalize refused as already finalized reads the order at once, not after the retry delay (RFC 8555 §7.4)": {
			order: func() (*Order, []*challenge.Challenge) {
				o := failing(ready(newOrder()), 1, 0, "order already finalized")
				o.Status.ReadFirst = true
				return o, nil
			},
			want: "Sync{https://ca/order/1}", reason: ReasonSyncing, words: []string{"at once"},
		},
		"after that read found the order unchanged, the finalize waits for the retry delay": {
			order: func() (*Order, []*challenge.Challenge) {
				o := failing(ready(newOrder()), 1, 0, "order not ready")
				o.Status.SyncedAt = tp(t0)
				return o, nil
			},
			reason: ReasonRetryingAfterError, requeue: 5 * time.Second,
		},
		"an order whose replaces the server refused is created without it (RFC 9773 §5)": {
			order: func() (*Order, []*challenge.Challenge) {
				o := newOrder()
				o.Spec.Replaces = "aki.serial"
				o.Status.ReplacesRefused = "at least one identifier must match"
				return o, nil
			},
			want: "CreateOrder{[web.example *.web.example]}", reason: ReasonCreating, words: []string{"without replaces", "at least one identifier"},
			check: func(t *testing.T, _ *Order, res Result) {
				assert.Empty(t, res.Actions[0].(CreateOrder).Replaces)
			},
		},
		"a renewal names what it replaces": {
			order: func() (*Order, []*challenge.Challenge) {
				o := newOrder()
				o.Spec.Replaces = "aki.serial"
				return o, nil
			},
			want: "CreateOrder{[web.example *.web.example]}", reason: ReasonCreating,
			check: func(t *testing.T, _ *Order, res Result) {
				assert.Equal(t, "aki.serial", res.Actions[0].(CreateOrder).Replaces)
			},
		},
		"the challenges carry the order's expiry, for deadlines that end with it": {
			order: func() (*Order, []*challenge.Challenge) {
				o := authorized(newOrder())
				o.Status.Expires = tp(t0.Add(time.Hour))
				return o, nil
			},
			want: "CreateChallenge{web-1-0 dns-01 web.example} CreateChallenge{web-1-1 dns-01 web.example}", reason: ReasonManagingChallenges,
			check: func(t *testing.T, _ *Order, res Result) {
				for _, a := range res.Actions {
					c := a.(CreateChallenge).Challenge
					require.NotNil(t, c.Spec.Expires, c.Name)
					assert.Equal(t, t0.Add(time.Hour), *c.Spec.Expires, c.Name)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, owned := tc.order()
			res := Decide(o, owned, t0, tc.cfg)
			var rq time.Duration
			if !res.RequeueAt.IsZero() {
				rq = res.RequeueAt.Sub(t0)
			}
			require.Equal(t, tc.want, names(res.Actions), "actions (%s)", res.Message)
			require.Equal(t, tc.reason, res.Reason, "reason (%s)", res.Message)
			require.Equal(t, tc.requeue, rq, "requeue after now (%s)", res.Message)
			for _, w := range tc.words {
				assert.Contains(t, res.Message, w)
			}
			if tc.check != nil {
				tc.check(t, o, res)
			}
		})
	}
}

// fullSpec sets every field of Spec and of the types it holds.
func fullSpec() Spec {
	nb, na := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	return Spec{
		CSR: []byte{0x30, 0x01, 0x02}, Issuer: challenge.Issuer{Name: "le", Kind: "ClusterIssuer", Group: "certlife.dev"},
		Account: "https://ca/acct/1", CommonName: "web.example", DNSNames: []string{"web.example", "www.web.example"},
		IPAddresses: []string{"192.0.2.7"},
		Solvers: []SolverConfig{
			{Selector: &Selector{DNSNames: []string{"web.example"}, DNSZones: []string{"example"}, MatchLabels: map[string]string{"team": "a", "env": "prod"}},
				Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{Options: map[string]string{"ingressClass": "nginx"}}}},
			{Solver: challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "rfc2136", Config: map[string]string{"nameserver": "192.0.2.53:53"}}}},
		},
		Profile: "shortlived", NotBefore: &nb, NotAfter: &na, Replaces: "aki.serial", PreferredChain: "Root X2",
	}
}

// SpecHash hashes an explicit, versioned encoding: the hash of a spec
// stored by this version never changes (adding a field to Spec, or to a
// type it holds, hashes it only when it is set, so a stored spec, which
// does not set it, keeps its hash), every field it holds counts, and a
// stored hash of another version is never compared.
func TestSpecHash(t *testing.T) {
	t.Run("the hash of a stored spec is what it was when it was stored", func(t *testing.T) {
		// testdata/spec-v1.json is a spec as a store keeps it (JSON);
		// its hash is pinned. A field added to any type of Spec decodes
		// as its zero value here, and must leave the hash alone.
		b, err := os.ReadFile("testdata/spec-v1.json")
		require.NoError(t, err)
		var s Spec
		require.NoError(t, json.Unmarshal(b, &s))
		require.Empty(t, cmp.Diff(fullSpec(), s), "the fixture is fullSpec()")
		assert.Equal(t, "v1:7138ec0c3386ea98e61611b37013f90a", SpecHash(&s), "the v1 hash of the stored spec changed: "+
			"a field added later must be hashed only when set, and a change to how fields are hashed needs a new SpecHashVersion")
	})

	t.Run("every field counts", func(t *testing.T) {
		base := SpecHash(ptr(fullSpec()))
		require.True(t, strings.HasPrefix(base, SpecHashVersion+":"), base)
		changes := map[string]func(*Spec){
			"csr":                        func(s *Spec) { s.CSR = []byte{0x30} },
			"issuer name":                func(s *Spec) { s.Issuer.Name = "other" },
			"issuer kind":                func(s *Spec) { s.Issuer.Kind = "Issuer" },
			"issuer group":               func(s *Spec) { s.Issuer.Group = "x" },
			"account":                    func(s *Spec) { s.Account = "https://ca/acct/2" },
			"common name":                func(s *Spec) { s.CommonName = "www.web.example" },
			"a DNS name":                 func(s *Spec) { s.DNSNames[1] = "api.web.example" },
			"the DNS names' order":       func(s *Spec) { slices.Reverse(s.DNSNames) },
			"an IP address":              func(s *Spec) { s.IPAddresses = nil },
			"profile":                    func(s *Spec) { s.Profile = "" },
			"notBefore":                  func(s *Spec) { s.NotBefore = nil },
			"notAfter":                   func(s *Spec) { s.NotAfter = ptr(s.NotAfter.Add(time.Second)) },
			"replaces":                   func(s *Spec) { s.Replaces = "" },
			"preferred chain":            func(s *Spec) { s.PreferredChain = "" },
			"a selector's DNS names":     func(s *Spec) { s.Solvers[0].Selector.DNSNames = nil },
			"a selector's zones":         func(s *Spec) { s.Solvers[0].Selector.DNSZones = []string{"web.example"} },
			"a selector's labels":        func(s *Spec) { s.Solvers[0].Selector.MatchLabels["env"] = "dev" },
			"a selector removed":         func(s *Spec) { s.Solvers[0].Selector = nil },
			"HTTP-01 options":            func(s *Spec) { s.Solvers[0].Solver.HTTP01.Options = nil },
			"the DNS-01 provider":        func(s *Spec) { s.Solvers[1].Solver.DNS01.Provider = "route53" },
			"the DNS-01 configuration":   func(s *Spec) { s.Solvers[1].Solver.DNS01.Config["nameserver"] = "x" },
			"the solvers' order":         func(s *Spec) { slices.Reverse(s.Solvers) },
			"a DNS name moved to the CN": func(s *Spec) { s.CommonName, s.DNSNames = s.CommonName+"www.web.example", s.DNSNames[:1] },
			"a name split across two":    func(s *Spec) { s.DNSNames = []string{"web.examplewww.web.example"} },
			"a solver with both kinds":   func(s *Spec) { s.Solvers[1].Solver.HTTP01 = &challenge.HTTP01Solver{} },
			"a TLS-ALPN-01 solver":       func(s *Spec) { s.Solvers[0].Solver = challenge.Solver{TLSALPN01: &challenge.TLSALPN01Solver{}} },
			"TLS-ALPN-01 options": func(s *Spec) {
				s.Solvers[0].Solver = challenge.Solver{TLSALPN01: &challenge.TLSALPN01Solver{Options: map[string]string{"a": "b"}}}
			},
			"TLS-ALPN-01 beside HTTP-01":  func(s *Spec) { s.Solvers[0].Solver.TLSALPN01 = &challenge.TLSALPN01Solver{} },
			"notBefore by a nanosecond":   func(s *Spec) { s.NotBefore = ptr(s.NotBefore.Add(time.Nanosecond)) },
			"an empty label map set":      func(s *Spec) { s.Solvers[1].Solver.DNS01.Config = map[string]string{"": ""} },
			"another spec's label values": func(s *Spec) { s.Solvers[0].Selector.MatchLabels = map[string]string{"team": "aenv", "prod": ""} },
		}
		seen := map[string]string{base: "the full spec"}
		for name, change := range changes {
			s := fullSpec()
			change(&s)
			h := SpecHash(&s)
			if prev, ok := seen[h]; ok {
				t.Errorf("%s: the same hash as %s", name, prev)
			}
			seen[h] = name
		}
		same := fullSpec()
		same.NotAfter = ptr(same.NotAfter.In(time.FixedZone("X", 3600)))
		assert.Equal(t, base, SpecHash(&same), "the same instant in another time zone is the same spec")
	})

	t.Run("a field added to Spec or a type it holds must be hashed only when set", func(t *testing.T) {
		// The fields SpecHash knows. A field that is not here was added
		// after v1: hash it only when it is set (so stored specs keep
		// their hash), then list it here.
		known := []string{
			"Spec.CSR", "Spec.Issuer", "Issuer.Name", "Issuer.Kind", "Issuer.Group", "Spec.Account", "Spec.CommonName",
			"Spec.DNSNames", "Spec.IPAddresses", "Spec.Solvers", "SolverConfig.Selector", "Selector.DNSNames",
			"Selector.DNSZones", "Selector.MatchLabels", "SolverConfig.Solver", "Solver.HTTP01", "HTTP01Solver.Options",
			"Solver.DNS01", "DNS01Solver.Provider", "DNS01Solver.Config", "Spec.Profile", "Spec.NotBefore", "Spec.NotAfter",
			"Spec.Replaces", "Spec.PreferredChain",
			// Added after v1, hashed only when set.
			"Solver.TLSALPN01", "TLSALPN01Solver.Options",
		}
		var fields []string
		var walk func(reflect.Type)
		walked := map[reflect.Type]bool{}
		walk = func(ty reflect.Type) {
			for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
				ty = ty.Elem()
			}
			if ty.Kind() != reflect.Struct || ty == reflect.TypeOf(time.Time{}) || walked[ty] {
				return
			}
			walked[ty] = true
			for i := range ty.NumField() {
				f := ty.Field(i)
				fields = append(fields, ty.Name()+"."+f.Name)
				walk(f.Type)
			}
		}
		walk(reflect.TypeOf(Spec{}))
		assert.ElementsMatch(t, known, fields)
	})

	t.Run("a stored hash of another version is not compared; one of this version is", func(t *testing.T) {
		o := authorized(newOrder())
		o.Status.SpecHash = "0f3c1f2a9d8e7b6a5c4d3e2f1a0b9c8d" // before versions: fmt output of the spec
		res := Decide(o, wanted(o, challenge.StatePending), t0, Config{})
		assert.Equal(t, ReasonWaitingForChallenges, res.Reason, "an order created before an upgrade goes on: %s", res.Message)

		o.Status.SpecHash = SpecHashVersion + ":0f3c1f2a9d8e7b6a5c4d3e2f1a0b9c8d"
		res = Decide(o, wanted(o, challenge.StatePending), t0, Config{})
		assert.Equal(t, ReasonSpecChanged, res.Reason, "a spec changed since its hash of this version: %s", res.Message)
	})
}

func ptr[T any](v T) *T { return &v }

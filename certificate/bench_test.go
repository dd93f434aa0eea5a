package certificate

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
)

// BenchmarkParseCertificateBaseline is the yardstick: one plain
// x509.ParseCertificate of the healthy certificate's ECDSA P-256 leaf.
func BenchmarkParseCertificateBaseline(b *testing.B) {
	f := newFixture(b)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	block, _ := pem.Decode(s.Secret.Data[keys.SecretCertificate])
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTriggerHealthy runs the trigger on a healthy certificate from
// bytes: the secret and the current request are parsed inside.
func BenchmarkTriggerHealthy(b *testing.B) {
	f := newFixture(b)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := Trigger(s, t0, Config{}); res.Reason != ReasonUpToDate {
			b.Fatal(res.Reason, res.Message)
		}
	}
}

// BenchmarkReconcileHealthy runs Reconcile on a healthy certificate (ECDSA
// P-256 leaf + CA, matching current request) from bytes: the secret, its
// key and the request's CSR are parsed inside, every pass. Compare its ns/op with
// BenchmarkParseCertificateBaseline's in the same run.
func BenchmarkReconcileHealthy(b *testing.B) {
	f := newFixture(b)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	settle(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := Reconcile(s, t0, Config{}); len(res.Actions) != 0 {
			b.Fatal(res.Actions)
		}
	}
}

// BenchmarkReconcileReady runs Reconcile on a Ready certificate — its
// secret, key, CA and current request in line — as a host does on every
// resync and watch event, for an ECDSA P-256 and an RSA-2048 key, each
// without a parse cache (everything parsed every pass) and with a warm one
// (Config.ParseCache).
func BenchmarkReconcileReady(b *testing.B) {
	for _, k := range []struct {
		name string
		spec keys.KeySpec
	}{
		{"ECDSA-P256", keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 256}},
		{"RSA-2048", keys.KeySpec{Algorithm: keys.AlgorithmRSA, Size: 2048}},
	} {
		f := newFixture(b)
		s, _ := f.healthyKey(t0.Add(-10*24*time.Hour), k.spec)
		settle(b, s)
		for _, c := range []struct {
			name  string
			cache *keys.ParseCache
		}{{"parse", nil}, {"cache", keys.NewParseCache(0)}} {
			b.Run(k.name+"/"+c.name, func(b *testing.B) {
				cfg := Config{ParseCache: c.cache}
				Reconcile(s, t0, cfg) // warm the cache
				b.ReportAllocs()
				for b.Loop() {
					if res := Reconcile(s, t0, cfg); len(res.Actions) != 0 {
						b.Fatal(res.Actions)
					}
				}
			})
		}
	}
}

// settle applies the one status write readiness asks on a fresh fixture.
func settle(b *testing.B, s *Snapshot) {
	res := Reconcile(s, t0, Config{})
	for _, a := range res.Actions {
		u, ok := a.(UpdateStatus)
		if !ok {
			b.Fatalf("a healthy certificate asked for %v", a)
		}
		s.Certificate.Status = u.Status
	}
}

// BenchmarkReconcileWaitingForIssuer runs Reconcile on a first issuance
// whose request the issuer has marked Pending, with the Issuing and Ready
// conditions already saying so: the pass a host makes on every change
// while an ACME order runs, which writes nothing.
func BenchmarkReconcileWaitingForIssuer(b *testing.B) {
	f := newFixture(b)
	r := f.firstIssuance()
	SetPending(r.req, "waiting for the ACME order web-1-51937a3b", t0.Add(-10*time.Second))
	settle(b, r.s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := Reconcile(r.s, t0, Config{}); len(res.Actions) != 0 {
			b.Fatal(res.Actions)
		}
	}
}

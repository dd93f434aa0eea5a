package certificate

import (
	"testing"

	"github.com/certlife/certlife/keys"
)

// BenchmarkReconcileOversizedSecret runs Reconcile on a Ready certificate
// whose secret someone filled: a tls.crt or a ca.crt of 50,000
// certificates (26 MB) in a secret that drifted (so the decision would
// rewrite it from what it holds, reading all of it), and a tls.key of one
// 100 MiB PEM block. Keys' bounds keep each decision to microseconds and
// kilobytes.
func BenchmarkReconcileOversizedSecret(b *testing.B) {
	for _, c := range []struct {
		name  string
		field string
		n     int
	}{
		{"tls.crt-50000", keys.SecretCertificate, 50000},
		{"ca.crt-50000", keys.SecretCA, 50000},
		{"tls.key-100MiB", keys.SecretPrivateKey, 100 << 20},
	} {
		f := newFixture(b)
		s := f.oversized(b, c.field, c.n, c.field != keys.SecretPrivateKey)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Reconcile(s, t0, Config{})
			}
		})
	}
}

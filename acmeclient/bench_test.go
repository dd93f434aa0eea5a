package acmeclient_test

import (
	"context"
	"crypto/rand"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// BenchmarkIssuer is the time to a certificate with the Issuer at its
// defaults — what a user gets — against Pebble in process (no validation
// sleep, no rejected nonces: the CA answers at once): 50 issuances, one
// after another and by eight workers at once (a workqueue with eight
// workers), each worker stepping its request and sleeping until the
// RequeueAt the step returned. It reports the wall seconds for the 50,
// the seconds per issuance, and the ACME requests per issuance (every
// request beyond RFC 8555's seven is a poll that found nothing new);
// over HTTP-01 and over TLS-ALPN-01.
//
//	go test ./acmeclient -run '^$' -bench BenchmarkIssuer -benchtime 1x
func BenchmarkIssuer(b *testing.B) {
	for _, typ := range []string{"HTTP-01", "TLS-ALPN-01"} {
		for _, workers := range []int{1, 8} {
			b.Run(typ+"/50 at concurrency "+strconv.Itoa(workers), func(b *testing.B) {
				benchIssuer(b, typ == "TLS-ALPN-01", workers)
			})
		}
	}
}

func benchIssuer(b *testing.B, alpn bool, workers int) {
	const n = 50
	e := newEnv(b, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Trace = nil })
	if alpn {
		iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: e.store, Solvers: e.srv.TLSALPN01Solvers(),
			Account: acmeclient.AccountOptions{AgreeToTerms: true}})
		if err != nil {
			b.Fatal(err)
		}
		e.issuer = iss
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Warm up: the account, and a nonce for each signer and
	// worker, as a host that has been running has them.
	warm := make([]*certificate.CertificateRequest, workers)
	for w := range warm {
		warm[w] = benchRequest(b, "warm-"+strconv.Itoa(w))
	}
	issueAll(b, ctx, e.issuer, warm, workers)
	b.ReportAllocs()
	b.ResetTimer()
	var wall time.Duration
	requests := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		reqs := make([]*certificate.CertificateRequest, n)
		for j := range reqs {
			reqs[j] = benchRequest(b, "b"+strconv.Itoa(i)+"-"+strconv.Itoa(j))
		}
		e.client.Transport().ResetCounts()
		b.StartTimer()
		start := time.Now()
		issueAll(b, ctx, e.issuer, reqs, workers)
		wall += time.Since(start)
		requests += e.client.Transport().Counts().Total
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/50")
	b.ReportMetric(wall.Seconds()/float64(n*b.N), "s/issuance")
	b.ReportMetric(float64(requests)/float64(n*b.N), "requests/issuance")
}

func benchRequest(b *testing.B, name string) *certificate.CertificateRequest {
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	if err != nil {
		b.Fatal(err)
	}
	csr, err := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{name + ".example"}}, key)
	if err != nil {
		b.Fatal(err)
	}
	return &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: "bench"},
		Spec: certificate.RequestSpec{Request: csr, IssuerRef: certificate.IssuerRef{Name: "pebble"}}}
}

// issueAll steps every request to its answer with that many workers.
func issueAll(b *testing.B, ctx context.Context, iss *acmeclient.Issuer, reqs []*certificate.CertificateRequest, workers int) {
	queue := make(chan *certificate.CertificateRequest, len(reqs))
	for _, r := range reqs {
		queue <- r
	}
	close(queue)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range queue {
				for {
					res, err := iss.Step(ctx, r)
					if err != nil || ctx.Err() != nil {
						mu.Lock()
						failed = append(failed, r.Name+": "+res.Message)
						mu.Unlock()
						break
					}
					if res.Answered {
						if ready := r.Condition(certificate.RequestConditionReady); ready.Status != certificate.StatusTrue {
							mu.Lock()
							failed = append(failed, r.Name+": "+ready.Message)
							mu.Unlock()
						}
						break
					}
					time.Sleep(time.Until(res.RequeueAt))
				}
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		b.Fatalf("%d not issued: %v", len(failed), failed)
	}
}

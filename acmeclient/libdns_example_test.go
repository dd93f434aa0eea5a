package acmeclient_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// DNS-01 through a DNS provider: any libdns provider package plugs in as
// the Provider of a LibDNSPresenter, and a DNS01Checker checks the
// zone's authoritative servers before the challenge is accepted. Here
// the test DNS server of acmetest is the provider; a host writes, for
// example,
//
//	acmeclient.LibDNSPresenter{Provider: &cloudflare.Provider{APIToken: token}}
//
// with github.com/libdns/cloudflare, and leaves Resolver empty to use
// the system's. A wildcard and its base name are solved at once: two
// values at one record name.
func ExampleLibDNSPresenter() {
	srv, err := acmetest.Start(acmetest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	provider := srv.DNS()            // a libdns provider of the zones it serves
	provider.AddZone("example.net.") // the zone a DNS provider account holds

	solvers := acmeclient.Solvers{
		DNS01: acmeclient.LibDNSPresenter{
			Provider: provider,
			Resolver: srv.DNS().Addr(), // finds the zone (SOA); empty: /etc/resolv.conf
			// FollowCNAME: true writes at the target of an alias of
			// _acme-challenge.<name> (cnameStrategy: Follow).
		},
		DNS01Check: acmeclient.DNS01Checker{
			Resolver:    srv.DNS().Addr(), // finds the zone's servers (NS)
			Port:        srv.DNS().Port(),
			Nameservers: nil, // or the zone's servers, host:port, to ask them directly
		},
	}

	accountKey, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	client, err := acmeclient.New(srv.ClientConfig(accountKey))
	if err != nil {
		panic(err)
	}
	issuer, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{
		Client:  client,
		Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Store:   acmeclient.NewMemoryStore(),
		Solvers: solvers,
	})
	if err != nil {
		panic(err)
	}
	key, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	csr, _ := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{"*.example.net", "example.net"}}, key)
	req := &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Name: "wildcard-1", Namespace: "default"},
		Spec:       certificate.RequestSpec{Request: csr, IssuerRef: certificate.IssuerRef{Name: "letsencrypt"}},
	}
	ctx := context.Background()
	for {
		res, err := issuer.Step(ctx, req)
		if err != nil {
			panic(err)
		}
		if res.Answered {
			break
		}
		time.Sleep(time.Until(res.RequeueAt))
	}
	ready := req.Condition(certificate.RequestConditionReady)
	fmt.Println(ready.Type, ready.Status, ready.Reason)
	fmt.Println("values left at", acmeclient.DNS01Name("example.net"), len(provider.TXT(acmeclient.DNS01Name("example.net"))))
	// Output:
	// Ready True Issued
	// values left at _acme-challenge.example.net. 0
}

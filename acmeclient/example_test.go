package acmeclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"sort"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// The first steps of an order driven by hand, one single-shot call per
// action: each takes the order's status and returns the status to write
// back (an Issuer does all of this for a host). Pebble, in process, stands
// in for the CA.
func Example() {
	srv, err := acmetest.Start(acmetest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	client, err := acmeclient.New(srv.ClientConfig(key))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := client.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true}); err != nil {
		panic(err)
	}

	o := &order.Order{Name: "web-1", Spec: order.Spec{DNSNames: []string{"web.example"}, CSR: []byte("a DER CSR")}}
	for step := 0; step < 2; step++ {
		res := order.Decide(o, nil, time.Now(), order.Config{})
		for _, a := range res.Actions {
			switch a := a.(type) {
			case order.CreateOrder:
				o.Status, err = client.CreateOrder(ctx, o.Status, a)
			case order.GetAuthorization:
				o.Status, err = client.GetAuthorization(ctx, o.Status, a)
			}
			if err != nil {
				panic(err)
			}
		}
		fmt.Println(res.Reason, "→", o.Status.State)
	}
	a := o.Status.Authorizations[0]
	var types []string
	for _, c := range a.Challenges {
		if c.Type == challenge.TypeHTTP01 || c.Type == challenge.TypeDNS01 {
			types = append(types, string(c.Type))
			if o.Status.KeyAuthorizations[c.Token] == "" {
				panic("no key authorization for " + c.Token)
			}
		}
	}
	sort.Strings(types)
	fmt.Println(a.Identifier, a.InitialState, types)
	// Output:
	// Creating → pending
	// FetchingAuthorizations → pending
	// web.example pending [dns-01 http-01]
}

package order_test

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// The first decisions for a new order for one name.
func ExampleDecide() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := &order.Order{Name: "web-1", Spec: order.Spec{
		CSR: []byte{0x30, 0x00}, Issuer: challenge.Issuer{Name: "letsencrypt"},
		DNSNames: []string{"web.example"},
		Solvers:  []order.SolverConfig{{Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{}}}},
	}}
	res := order.Decide(o, nil, now, order.Config{})
	fmt.Println(res.Reason, res.Actions)

	// The host created the order and wrote back what the server said.
	o.Status = order.Status{URL: "https://ca.example/order/1", State: order.StatePending, SpecHash: order.SpecHash(&o.Spec),
		Authorizations: []order.Authorization{{URL: "https://ca.example/authz/1", Identifier: "web.example", InitialState: order.StatePending,
			Challenges: []order.OfferedChallenge{{Type: challenge.TypeHTTP01, URL: "https://ca.example/chall/1", Token: "tok"}}}}}
	res = order.Decide(o, nil, now, order.Config{})
	fmt.Println(res.Reason, res.Actions)
	// Output:
	// Creating [CreateOrder{[web.example]}]
	// ManagingChallenges [CreateChallenge{web-1-0 http-01 web.example}]
}

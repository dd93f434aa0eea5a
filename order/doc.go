// Package order is the ACME Order state machine of seed 002, as a pure
// decision: [Decide] reads an [Order], the Challenge resources it owns and
// `now`, and returns the ACME calls and resource changes to make next —
// [CreateOrder], [GetAuthorization], [CreateChallenge], [DeleteChallenge],
// [Sync], [Finalize], [FetchCertificate], [UpdateStatus], [DeleteOrder] —
// and when to look again. The host carries each out (package acmeclient
// does the ACME calls, one request each) and writes the answer into
// [Status] as the action's doc says. [ChooseSolver] picks the solver for an
// identifier.
package order

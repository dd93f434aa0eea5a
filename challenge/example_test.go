package challenge_test

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/challenge"
)

// One challenge from scheduling to a valid authorization, the host writing
// back what each action found.
func ExampleDecide() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := &challenge.Challenge{Name: "web-1-0", CreationTimestamp: now, Spec: challenge.Spec{
		URL: "https://ca.example/chall/1", AuthorizationURL: "https://ca.example/authz/1",
		Type: challenge.TypeHTTP01, DNSName: "web.example", Token: "tok", Key: "tok.thumb",
		Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{}},
	}}
	for _, c := range challenge.Schedule([]*challenge.Challenge{c}, now, challenge.SchedulerConfig{}) {
		c.Status.Processing = true
	}
	for i := 0; i < 7; i++ {
		res := challenge.Decide(c, now, challenge.Config{})
		fmt.Println(res.Reason, res.Actions)
		for _, a := range res.Actions { // the host's part, faked here
			switch a := a.(type) {
			case challenge.Sync:
				synced := now
				c.Status.SyncedAt = &synced
				if c.Status.Accepted {
					c.Status.State = challenge.StateValid
				} else {
					c.Status.State = challenge.StatePending
				}
			case challenge.Present:
				at := now
				c.Status.Presented, c.Status.PresentedAt = true, &at
			case challenge.SelfCheck:
				at := now
				c.Status.SelfCheckAt, c.Status.SelfCheckPassed = &at, true
			case challenge.Accept:
				c.Status.Accepted, c.Status.State = true, challenge.StateProcessing
			case challenge.UpdateStatus:
				c.Status = a.Status
			}
		}
		now = now.Add(5 * time.Second)
	}
	// Output:
	// Syncing [Sync{https://ca.example/chall/1}]
	// Presenting [Present{http-01 web.example}]
	// SelfChecking [SelfCheck{http-01 web.example}]
	// Accepting [Accept{https://ca.example/chall/1}]
	// WaitingForAuthorization [Sync{https://ca.example/chall/1}]
	// Finished [CleanUp{http-01 web.example} UpdateStatus{processing=false presented=false state=valid}]
	// NotScheduled []
}

// Package host holds the fleet simulation's store and queue, which do not
// depend on any decision package: a versioned in-memory object store whose
// reads can lag behind its writes (the way a Kubernetes informer cache
// does), and a delaying work queue driven by the caller's clock.
//
// The fleet simulation's host builds on these: with a lagging store they prove that a decision taken on a stale
// snapshot never creates a second request, because a deterministic name
// turns the duplicate create into ErrAlreadyExists.
package host

// Package fleethost is the fleet simulation's host: the loop of the
// reference host (examples/refhost, the one to read and copy), made lean
// enough to hold ten thousand certificates and hard on itself — reads that
// lag behind writes, packed storage, a parse cache for its own writes. It
// keeps Certificates, Secrets and CertificateRequests in versioned in-memory stores (a write with a stale
// resource version fails, as with the Kubernetes API; reads may lag behind
// writes, as an informer cache does), and runs the loop:
//
//  1. take the next due key from the queue (the clock is the caller's:
//     k8s.io/utils/clock, real or fake);
//  2. gather one snapshot of the certificate, its secret, requests,
//     next-private-key secrets and the other certificates naming its
//     secret — reading through the (possibly stale) cache;
//  3. certificate.Reconcile;
//  4. carry out the actions in order with package keys for keys and CSRs,
//     stopping at the first error (a conflict, a create that lost a race, an
//     object the cache does not show yet): the next pass repairs it;
//  5. requeue at the result's time, and at once (after the cache lag) when
//     it wrote something.
//
// Requests are answered by an Issuer: a local CA (for tests and the
// simulation, able to misbehave on purpose) or ACME (acmeclient.Issuer,
// which drives the order and challenge machines; a renewal's request
// names the certificate it replaces, as the decision made it).
//
// What it holds per certificate is kept small, since a host holds a whole
// fleet: secrets and requests are stored packed (their small maps as
// sorted pairs, unpacked on each read), parsed secrets and compiled specs
// live in one small LRU cache keyed by resource version (only
// certificates being worked on need them), indexes hold a single name as a string, and expectations are
// dropped once their writes show. In the fleet simulation that is about
// 3.8 KB per certificate, PEM included.
package fleethost

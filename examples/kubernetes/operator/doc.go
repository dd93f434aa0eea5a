// Package operator is a Kubernetes operator built on certlife's public
// packages with controller-runtime, serving cert-manager's API:
// cert-manager.io/v1 Certificates, CertificateRequests, Issuers and
// ClusterIssuers, and acme.cert-manager.io/v1 Orders and Challenges, with
// the reference operator's own Go types and CRDs.
//
//   - The Certificate controller is certlife's host core
//     (certificate/host): each pass is host.Reconciler.Certificate,
//     called from the work queue, over a host.Store kept in the
//     Kubernetes API (store.go) — Certificates, Secrets and
//     CertificateRequests read from the cache (a Secret the cache misses
//     from the API server), written with the resource version read, and
//     converted to and from certlife's types (convert.go). The reconciler
//     gathers, decides with certificate.Reconcile, carries out the
//     actions in order, and says when to look again; an error goes back
//     to the work queue, which retries it.
//   - The CertificateRequest controller answers the requests of the
//     issuers the operator serves — Issuers and ClusterIssuers of
//     cert-manager.io with a ca, selfSigned or acme configuration — with
//     host.Reconciler.Request through certlife's issuer contract (package
//     certificate/localca; package acmeclient, its orders and challenges
//     kept in Order and Challenge resources). It approves every request
//     with neither an Approved nor a Denied condition, as the reference
//     operator's approver does (Options.DisableApprover turns that off),
//     and leaves a request of any other group to that group's issuer.
//   - The Issuer and ClusterIssuer controllers say in status whether an
//     issuer can sign, and register ACME accounts.
//
// Only Secrets labelled LabelManaged (cert-manager's own label) are
// cached. A request whose issuer cannot sign yet stays Pending with the
// reason, and its Certificate gets a Warning Event
// (ReasonIssuerNotReady). A Certificate that asks for what certlife does
// not serve is refused with InvalidSpec naming the field (NotServed).
package operator

// Leader election holds a Lease in the operator's own namespace (certlife
// in the manifests of deploy/) and records its changes of leader as Events
// there: a Role, not a ClusterRole.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=certlife
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=certlife

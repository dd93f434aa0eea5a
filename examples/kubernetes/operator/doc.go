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
//   - The shims keep Certificates for Ingresses (networking.k8s.io/v1)
//     and Gateways (gateway.networking.k8s.io/v1) annotated with
//     cert-manager.io/issuer or cert-manager.io/cluster-issuer, as the
//     reference operator's ingress-shim and gateway-shim do (see
//     ShimOptions).
//
// # HTTP-01 routing
//
// HTTP-01 is answered by the operator's challenge server (ChallengeServer),
// on every replica. For an ACME issuer whose HTTP-01 solver sets
// http01.ingress or http01.gatewayHTTPRoute, and an operator told its
// challenge Service (ACMEOptions.HTTP01Service, the -http01-service flag;
// the manifests of deploy/ set it), each challenge is routed there as
// cert-manager routes it to its solver pod, with no pod: when the
// challenge is presented, before its self-check, the operator makes in
// the challenge's namespace
//
//   - a Service without a selector, of the settings' serviceType
//     (NodePort unless set, as in cert-manager), whose EndpointSlices
//     mirror the ready endpoints of the operator's challenge Service (an
//     Ingress or HTTPRoute can only name a Service of its own namespace);
//   - for http01.ingress, an Ingress with the class (ingressClassName, or
//     class as the kubernetes.io/ingress.class annotation), one rule for
//     the name with the Exact path /.well-known/acme-challenge/<token> to
//     that Service, and the ingressTemplate's labels and annotations; or,
//     with http01.ingress.name, that path added to the named Ingress (in
//     the rule for the name, or a new rule), recorded on it in
//     AnnotationHTTP01Edits;
//   - for http01.gatewayHTTPRoute, an HTTPRoute with the settings'
//     parentRefs and labels, the name, an Exact match of the token's path,
//     and that Service as its backend.
//
// What it makes is named from a hash of the Challenge's name, labelled
// LabelHTTP01 (and cert-manager's solver labels) and owned by the
// Challenge. It goes when the challenge ends; the named Ingress gets back
// exactly what it had (only the paths the operator added go). The
// http01route controller sweeps, on every change and at start, the
// routes of Challenges that ended or are gone — deleted while the
// operator was down, or between a route's making and the challenge being
// recorded presented (a Challenge presented again adopts its route) — and
// never touches what it did not make. The settings travel on the
// Challenge (spec.solver, as in cert-manager), so an issuer changed while
// a challenge is under way does not change how that challenge is routed
// or cleaned up. HTTPRoutes are made when the API server serves
// gateway.networking.k8s.io/v1 when the operator starts. The podTemplate
// settings are not used (there is no pod); the issuer's Ready condition
// says how its settings are served.
//
// Only Secrets labelled LabelManaged (cert-manager's own label) are
// cached. A request whose issuer cannot sign yet stays Pending with the
// reason, and its Certificate gets a Warning Event
// (ReasonIssuerNotReady). A Certificate that asks for what certlife does
// not serve is refused with InvalidSpec naming the field (NotServed).
//
// # Certificates from Ingresses and Gateways
//
// An Ingress annotated cert-manager.io/issuer: NAME (or
// cert-manager.io/cluster-issuer: NAME; cert-manager.io/issuer-kind and
// cert-manager.io/issuer-group name an external issuer) gets one
// Certificate per spec.tls entry, named after the entry's secretName,
// for the entry's hosts, controlled by the Ingress (deleting the Ingress
// deletes it). A Gateway so annotated gets one Certificate per Secret its
// HTTPS and TLS listeners in Terminate mode name, for the hostnames of
// those listeners; cert-manager.io/ignore-tls-listeners lists listeners
// to pass over. kubernetes.io/tls-acme: "true" on an Ingress asks for
// certificates from ShimOptions.DefaultIssuerName; with none, the Ingress
// gets a Warning Event saying no issuer is named.
//
// The Certificate's other fields come from the annotations the
// reference operator reads, under the same names: common-name,
// alt-names, ip-sans, email-sans, the subject-* fields, duration,
// renew-before, renew-before-percentage, usages (default: digital
// signature, key encipherment), revision-history-limit,
// private-key-algorithm, -size, -encoding and -rotation-policy, and
// secret-template (all cert-manager.io/). acme.cert-manager.io/
// http01-edit-in-place: "true", http01-ingress-class and
// http01-ingress-ingressclassname become the Certificate annotations the
// ACME issuer's HTTP-01 solver reads, and a Gateway's Certificates name
// the Gateway for HTTPRoutes. The Certificate carries the resource's
// labels (but kubectl's applyset label).
//
// The Certificates follow the resource: names added or removed, a Secret
// renamed (the old Certificate goes), annotations changed; removing the
// issuer annotations removes the Certificates (the reference operator
// leaves them until the resource is deleted). A value the shim cannot
// use — an unparsable duration, an unknown usage, an RSA size under
// 2048, two issuers named — changes nothing, and a Warning Event
// (BadConfig) on the resource names the annotation and the value; a TLS
// entry or listener it cannot serve (no hosts, a Secret in another
// namespace) is skipped with one. A Certificate of the same name that
// the resource does not control — a user's, another Ingress's — is left
// as it is, with a Warning Event (CertificateNotOwned); once it is gone,
// the resource gets its own. The Gateway shim runs when the Gateway
// API's CRDs are installed when the operator starts.
package operator

// Leader election holds a Lease in the operator's own namespace (certlife
// in the manifests of deploy/) and records its changes of leader as Events
// there: a Role, not a ClusterRole.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=certlife
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=certlife

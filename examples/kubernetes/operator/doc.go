// Package operator is a Kubernetes operator built on certlife's public
// packages with controller-runtime: its controllers gather, call certlife,
// and carry out what certlife decides.
//
//   - The Certificate controller gathers a certificate.Snapshot (Gatherer),
//     calls certificate.Reconcile once per pass, and carries out the
//     actions in order, exactly as their docs in package certificate say:
//     keys and CSRs from package keys, deterministic names whose
//     AlreadyExists is success, deletions whose NotFound is success (and
//     which never reach a newer object of the same name), a Secret written
//     only over the version the decision read, the status last with the
//     version read. A conflict ends the pass and requeues; nothing is
//     overwritten. RequeueAfter is the result's RequeueAt.
//   - The CertificateRequest controller answers requests for CA and
//     SelfSigned issuers through certlife's issuer contract, with package
//     certificate/localca, and for ACME issuers with package acmeclient.
//   - The Issuer and ClusterIssuer controllers say in status whether an
//     issuer can sign.
//
// Only Secrets the operator manages are cached (those labelled
// LabelManaged); a target Secret that is not in the cache is read from the
// API server directly, and one the API server does not have either is
// confirmed missing to certlife (certificate.Snapshot.SecretAbsenceConfirmed).
// A request whose issuer cannot sign yet stays Pending with the reason,
// and its Certificate gets a Warning Event (ReasonIssuerNotReady).
// Conversions between the API types and certlife's
// snapshot types are in tocore.go and fromcore.go.
package operator

// Leader election holds a Lease.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

// Labels and annotations of the operator (certlife's own are in package
// certificate).
const (
	// LabelManaged marks every Secret the operator writes — targets and
	// next private keys — with the value "true". Only Secrets with it are
	// held in the operator's cache; certlife puts it back on a target
	// Secret that lost it (it joins spec.secretTemplate's labels).
	LabelManaged = "operator.certlife.dev/managed"
)

// Field indexes the controllers look objects up by.
const (
	// indexOwner: the UID of an object's controller (Secrets and
	// CertificateRequests).
	indexOwner = "operator.certlife.dev/owner"
	// indexSecretName: a Certificate's spec.secretName.
	indexSecretName = "operator.certlife.dev/secret-name"
	// indexIssuer: a CertificateRequest's issuer, "Kind/name".
	indexIssuer = "operator.certlife.dev/issuer"
	// indexCASecret: the CA Secret an Issuer or ClusterIssuer signs with.
	indexCASecret = "operator.certlife.dev/ca-secret"
	// indexChallengeToken: a Challenge's token.
	indexChallengeToken = "operator.certlife.dev/challenge-token"
)

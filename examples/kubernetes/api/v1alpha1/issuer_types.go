package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issuer signs the CertificateRequests of its own namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=certlife
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Issuer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IssuerSpec   `json:"spec"`
	Status IssuerStatus `json:"status,omitempty"`
}

// IssuerList lists Issuers.
//
// +kubebuilder:object:root=true
type IssuerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Issuer `json:"items"`
}

// ClusterIssuer signs CertificateRequests of every namespace. Secrets it
// names live in the operator's cluster resource namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=certlife
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterIssuer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IssuerSpec   `json:"spec"`
	Status IssuerStatus `json:"status,omitempty"`
}

// ClusterIssuerList lists ClusterIssuers.
//
// +kubebuilder:object:root=true
type ClusterIssuerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterIssuer `json:"items"`
}

// IssuerSpec is exactly one kind of issuer.
//
// +kubebuilder:validation:XValidation:rule="(has(self.ca) ? 1 : 0) + (has(self.selfSigned) ? 1 : 0) + (has(self.acme) ? 1 : 0) == 1",message="set exactly one of ca, selfSigned, acme"
type IssuerSpec struct {
	// CA signs with a CA certificate and key from a Secret.
	// +optional
	CA *CAIssuer `json:"ca,omitempty"`
	// SelfSigned signs each certificate with its own private key.
	// +optional
	SelfSigned *SelfSignedIssuer `json:"selfSigned,omitempty"`
	// ACME gets certificates from an ACME server (RFC 8555).
	// +optional
	ACME *ACMEIssuer `json:"acme,omitempty"`
}

// CAIssuer signs with a CA key pair.
type CAIssuer struct {
	// SecretName is a Secret holding the CA certificate (tls.crt) and its
	// key (tls.key): in the Issuer's namespace, or for a ClusterIssuer in
	// the cluster resource namespace.
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
}

// SelfSignedIssuer signs each certificate with the certificate's own key.
type SelfSignedIssuer struct{}

// ACMEIssuer gets certificates from an ACME server: one Order per
// CertificateRequest, with a Challenge per name to prove.
type ACMEIssuer struct {
	// Server is the ACME directory URL.
	// +kubebuilder:validation:Pattern=`^https://`
	Server string `json:"server"`
	// Email is the account's contact address.
	// +optional
	Email string `json:"email,omitempty"`
	// PrivateKeySecretRef names the Secret key holding the account's
	// private key; it is generated when missing.
	PrivateKeySecretRef SecretKeySelector `json:"privateKeySecretRef"`
	// ExternalAccountBinding binds the account to one at the CA
	// (RFC 8555 §7.3.4).
	// +optional
	ExternalAccountBinding *ACMEExternalAccountBinding `json:"externalAccountBinding,omitempty"`
	// Profile asks the server for a certificate profile, such as
	// "classic", "tlsserver" or "shortlived".
	// +optional
	Profile string `json:"profile,omitempty"`
	// PreferredChain is the common name of the root of the chain to
	// prefer when the server offers several.
	// +optional
	PreferredChain string `json:"preferredChain,omitempty"`
	// CABundle is the PEM CA the server's TLS certificate chains to, for
	// a private ACME server; unset means the system roots.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
	// Solvers solve the server's challenges; the first whose selector
	// matches a name most closely solves it.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Solvers []ACMESolver `json:"solvers"`
}

// ACMEExternalAccountBinding is a key ID and MAC key from the CA.
type ACMEExternalAccountBinding struct {
	// KeyID the CA gave.
	// +kubebuilder:validation:MinLength=1
	KeyID string `json:"keyID"`
	// KeySecretRef names the Secret key holding the base64url MAC key.
	KeySecretRef SecretKeySelector `json:"keySecretRef"`
}

// ACMESolver is one way of solving challenges, for the names its selector
// chooses.
//
// +kubebuilder:validation:XValidation:rule="has(self.http01) != has(self.dns01)",message="set exactly one of http01, dns01"
type ACMESolver struct {
	// Selector chooses the names this solver applies to; unset means
	// every name.
	// +optional
	Selector *ACMESolverSelector `json:"selector,omitempty"`
	// HTTP01 answers http-01 challenges (RFC 8555 §8.3).
	// +optional
	HTTP01 *ACMEHTTP01Solver `json:"http01,omitempty"`
	// DNS01 answers dns-01 challenges (RFC 8555 §8.4).
	// +optional
	DNS01 *ACMEDNS01Solver `json:"dns01,omitempty"`
}

// ACMESolverSelector chooses names; every condition set must hold.
type ACMESolverSelector struct {
	// DNSNames the solver applies to, exactly.
	// +optional
	// +listType=atomic
	DNSNames []string `json:"dnsNames,omitempty"`
	// DNSZones the solver applies to, with their subdomains.
	// +optional
	// +listType=atomic
	DNSZones []string `json:"dnsZones,omitempty"`
	// MatchLabels of the Certificate.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// ACMEHTTP01Solver answers http-01 challenges from the operator's own
// challenge server (its -http01-address, on every replica), to which the
// names' traffic on port 80 at /.well-known/acme-challenge/ must be routed
// (a Service and an Ingress rule, or a load balancer, that the cluster's
// administrator sets up once).
type ACMEHTTP01Solver struct{}

// ACMEDNS01Solver answers dns-01 challenges by writing TXT records.
type ACMEDNS01Solver struct {
	// RFC2136 updates a zone's primary server with dynamic updates.
	// +optional
	RFC2136 *ACMEDNS01RFC2136 `json:"rfc2136,omitempty"`
	// Nameservers the self-check asks instead of the zone's own, as
	// host:port.
	// +optional
	// +listType=atomic
	Nameservers []string `json:"nameservers,omitempty"`
}

// ACMEDNS01RFC2136 writes TXT records with RFC 2136 dynamic updates.
type ACMEDNS01RFC2136 struct {
	// Nameserver is the primary server, host:port.
	// +kubebuilder:validation:MinLength=1
	Nameserver string `json:"nameserver"`
	// TSIGKeyName names the TSIG key; unset means unsigned updates.
	// +optional
	TSIGKeyName string `json:"tsigKeyName,omitempty"`
	// TSIGAlgorithm of the key.
	// +optional
	// +kubebuilder:validation:Enum=HMACSHA256;HMACSHA384;HMACSHA512
	TSIGAlgorithm string `json:"tsigAlgorithm,omitempty"`
	// TSIGSecretRef names the Secret key holding the base64 TSIG secret.
	// +optional
	TSIGSecretRef *SecretKeySelector `json:"tsigSecretRef,omitempty"`
}

// IssuerStatus says whether the issuer can sign.
type IssuerStatus struct {
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ACME is the registered account.
	// +optional
	ACME *ACMEIssuerStatus `json:"acme,omitempty"`
}

// ACMEIssuerStatus is the ACME account of an issuer.
type ACMEIssuerStatus struct {
	// URI of the account.
	// +optional
	URI string `json:"uri,omitempty"`
	// LastRegisteredEmail is the contact the account was registered with.
	// +optional
	LastRegisteredEmail string `json:"lastRegisteredEmail,omitempty"`
}

func init() {
	SchemeBuilder.Register(&Issuer{}, &IssuerList{}, &ClusterIssuer{}, &ClusterIssuerList{})
}

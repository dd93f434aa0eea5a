package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Order is one ACME order (RFC 8555 §7.1.3) for one CertificateRequest,
// kept so the work survives a restart. certlife's order.Order, field for
// field; the ACME issuer's controllers own it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=certlife;acme
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.issuerRef.name`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Last Error",type=string,JSONPath=`.status.lastError`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Order struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OrderSpec   `json:"spec"`
	Status OrderStatus `json:"status,omitempty"`
}

// OrderList lists Orders.
//
// +kubebuilder:object:root=true
type OrderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Order `json:"items"`
}

// OrderSpec asks for exactly one certificate; it cannot be changed.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the spec of an Order cannot be changed"
type OrderSpec struct {
	// Request is the certificate signing request to finalize with, PEM.
	// (A string, not bytes: the API server cannot evaluate the spec's
	// immutability rule over a base64 field.)
	// +kubebuilder:validation:MinLength=1
	Request string `json:"request"`
	// IssuerRef names the ACME issuer (and so the account).
	IssuerRef IssuerReference `json:"issuerRef"`
	// Account is the ACME account URL.
	// +optional
	Account string `json:"account,omitempty"`
	// +optional
	CommonName string `json:"commonName,omitempty"`
	// +optional
	// +listType=atomic
	DNSNames []string `json:"dnsNames,omitempty"`
	// +optional
	// +listType=atomic
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// Solvers are the issuer's solvers, as they were when the order was
	// made.
	// +listType=atomic
	Solvers []OrderSolver `json:"solvers"`
	// +optional
	Profile string `json:"profile,omitempty"`
	// NotBefore and NotAfter ask for a validity (RFC 8555 §7.4).
	// +optional
	NotBefore *metav1.MicroTime `json:"notBefore,omitempty"`
	// +optional
	NotAfter *metav1.MicroTime `json:"notAfter,omitempty"`
	// Replaces is the ARI identifier of the certificate this one renews
	// (RFC 9773 §5).
	// +optional
	Replaces string `json:"replaces,omitempty"`
	// +optional
	PreferredChain string `json:"preferredChain,omitempty"`
}

// OrderSolver is one solver with the names it applies to.
type OrderSolver struct {
	// +optional
	Selector *ACMESolverSelector `json:"selector,omitempty"`
	Solver   ChallengeSolver     `json:"solver"`
}

// ChallengeSolver is the solver of a challenge: exactly one of HTTP01
// and DNS01.
//
// +kubebuilder:validation:XValidation:rule="has(self.http01) != has(self.dns01)",message="set exactly one of http01, dns01"
type ChallengeSolver struct {
	// +optional
	HTTP01 *ChallengeHTTP01Solver `json:"http01,omitempty"`
	// +optional
	DNS01 *ChallengeDNS01Solver `json:"dns01,omitempty"`
}

// ChallengeHTTP01Solver is an http-01 solver's options.
type ChallengeHTTP01Solver struct {
	// +optional
	Options map[string]string `json:"options,omitempty"`
}

// ChallengeDNS01Solver is a dns-01 provider and its configuration.
type ChallengeDNS01Solver struct {
	// +kubebuilder:validation:MinLength=1
	Provider string `json:"provider"`
	// +optional
	Config map[string]string `json:"config,omitempty"`
}

// OrderState is an ACME order status (RFC 8555 §7.1.6), or errored.
//
// +kubebuilder:validation:Enum=pending;ready;processing;valid;invalid;expired;errored
type OrderState string

// OrderStatus is what the server said, and the host's record of its calls.
type OrderStatus struct {
	// +optional
	URL string `json:"url,omitempty"`
	// +optional
	FinalizeURL string `json:"finalizeURL,omitempty"`
	// +optional
	CertificateURL string `json:"certificateURL,omitempty"`
	// +optional
	State OrderState `json:"state,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	// +listType=atomic
	Authorizations []ACMEAuthorization `json:"authorizations,omitempty"`
	// Certificate is the fetched chain, PEM, leaf first.
	// +optional
	Certificate []byte `json:"certificate,omitempty"`
	// +optional
	FailureTime *metav1.MicroTime `json:"failureTime,omitempty"`
	// +optional
	SyncedAt *metav1.MicroTime `json:"syncedAt,omitempty"`
	// ChangedAt is when a call last found the order changed; reads that
	// find it unchanged are spaced out from it.
	// +optional
	ChangedAt *metav1.MicroTime `json:"changedAt,omitempty"`
	// +optional
	Expires *metav1.MicroTime `json:"expires,omitempty"`
	// +optional
	SpecHash string `json:"specHash,omitempty"`
	// +optional
	LastError string `json:"lastError,omitempty"`
	// +optional
	Transient bool `json:"transient,omitempty"`
	// +optional
	LastErrorTime *metav1.MicroTime `json:"lastErrorTime,omitempty"`
	// +optional
	FailedAttempts int `json:"failedAttempts,omitempty"`
	// +optional
	RetryAfter *metav1.MicroTime `json:"retryAfter,omitempty"`
	// KeyAuthorizations maps a challenge token to its key authorization
	// (RFC 8555 §8.1); they are public by design (the CA reads them).
	// +optional
	KeyAuthorizations map[string]string `json:"keyAuthorizations,omitempty"`
	// AnsweredAt is when the CertificateRequest was answered from this
	// order; the order is kept a while after, so that an answer lost in a
	// crash is given again from the same order.
	// +optional
	AnsweredAt *metav1.MicroTime `json:"answeredAt,omitempty"`
	// ReplacesRefused is the server's words when it refused to create the
	// order with spec.replaces; the order was created without it.
	// +optional
	ReplacesRefused string `json:"replacesRefused,omitempty"`
	// ReadFirst: the last failure says the order may have moved on at
	// the server (a finalize refused as not ready or already finalized);
	// it is read at once.
	// +optional
	ReadFirst bool `json:"readFirst,omitempty"`
	// BadCertificate says what was wrong with the certificate of an
	// earlier order for this spec; the order was made again once.
	// +optional
	BadCertificate string `json:"badCertificate,omitempty"`
}

// ACMEAuthorization is what the server said about one identifier.
type ACMEAuthorization struct {
	URL string `json:"url"`
	// +optional
	Identifier string `json:"identifier,omitempty"`
	// +optional
	Wildcard bool `json:"wildcard,omitempty"`
	// +optional
	InitialState string `json:"initialState,omitempty"`
	// +optional
	// +listType=atomic
	Challenges []ACMEOfferedChallenge `json:"challenges,omitempty"`
	// +optional
	FetchedAt *metav1.MicroTime `json:"fetchedAt,omitempty"`
}

// ACMEOfferedChallenge is one challenge an authorization offers.
type ACMEOfferedChallenge struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Token string `json:"token"`
}

// Challenge is one ACME challenge being solved (RFC 8555 §8). certlife's
// challenge.Challenge, field for field; the ACME issuer's controllers own
// it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=certlife;acme
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.dnsName`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Last Error",type=string,JSONPath=`.status.lastError`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Challenge struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ChallengeSpec   `json:"spec"`
	Status ChallengeStatus `json:"status,omitempty"`
}

// ChallengeList lists Challenges.
//
// +kubebuilder:object:root=true
type ChallengeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Challenge `json:"items"`
}

// ChallengeSpec cannot be changed once the challenge exists.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the spec of a Challenge cannot be changed"
type ChallengeSpec struct {
	AuthorizationURL string `json:"authorizationURL"`
	URL              string `json:"url"`
	// +kubebuilder:validation:Enum=http-01;dns-01
	Type    string `json:"type"`
	DNSName string `json:"dnsName"`
	Token   string `json:"token"`
	// Key is the key authorization the solver presents (RFC 8555 §8.1).
	Key string `json:"key"`
	// +optional
	Wildcard  bool            `json:"wildcard,omitempty"`
	Solver    ChallengeSolver `json:"solver"`
	IssuerRef IssuerReference `json:"issuerRef"`
	// +optional
	Account string `json:"account,omitempty"`
	// Expires is when the challenge's order expires; self-checking ends
	// before it.
	// +optional
	Expires *metav1.MicroTime `json:"expires,omitempty"`
}

// ChallengeStatus is the host's record of the challenge.
type ChallengeStatus struct {
	// Processing is set by the scheduler when the challenge may run.
	// +optional
	Processing bool `json:"processing,omitempty"`
	// +optional
	Presented bool `json:"presented,omitempty"`
	// +optional
	PresentedAt *metav1.MicroTime `json:"presentedAt,omitempty"`
	// +optional
	State string `json:"state,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	SyncedAt *metav1.MicroTime `json:"syncedAt,omitempty"`
	// ChangedAt is when a call last moved the challenge on.
	// +optional
	ChangedAt *metav1.MicroTime `json:"changedAt,omitempty"`
	// +optional
	SelfCheckAt *metav1.MicroTime `json:"selfCheckAt,omitempty"`
	// +optional
	SelfCheckPassed bool `json:"selfCheckPassed,omitempty"`
	// +optional
	Accepted bool `json:"accepted,omitempty"`
	// +optional
	LastError string `json:"lastError,omitempty"`
	// +optional
	Transient bool `json:"transient,omitempty"`
	// +optional
	RetryAfter *metav1.MicroTime `json:"retryAfter,omitempty"`
	// +optional
	LastErrorTime *metav1.MicroTime `json:"lastErrorTime,omitempty"`
	// +optional
	FailedAttempts int `json:"failedAttempts,omitempty"`
	// +optional
	NextAttemptAt *metav1.MicroTime `json:"nextAttemptAt,omitempty"`
}

func init() {
	SchemeBuilder.Register(&Order{}, &OrderList{}, &Challenge{}, &ChallengeList{})
}

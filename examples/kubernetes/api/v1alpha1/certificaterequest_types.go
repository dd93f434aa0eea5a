package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CertificateRequest is one attempt to get a certificate signed: a CSR for
// the issuer its issuerRef names, and the issuer's answer in status. The
// Certificate controller creates them (named <certificate>-<revision>);
// issuers answer them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cr;crs,categories=certlife
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.issuerRef.name`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.metadata.annotations.certlife\.dev/certificate-revision`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CertificateRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CertificateRequestSpec   `json:"spec"`
	Status CertificateRequestStatus `json:"status,omitempty"`
}

// CertificateRequestList lists CertificateRequests.
//
// +kubebuilder:object:root=true
type CertificateRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CertificateRequest `json:"items"`
}

// CertificateRequestSpec is what a request asks the issuer. It cannot be
// changed: a different request is a new object.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the spec of a CertificateRequest cannot be changed"
type CertificateRequestSpec struct {
	// Request is the PEM certificate signing request.
	// +kubebuilder:validation:MinLength=1
	Request []byte `json:"request"`
	// IssuerRef names the issuer asked.
	IssuerRef IssuerReference `json:"issuerRef"`
	// Duration asked; unset means the issuer decides.
	// +optional
	// +kubebuilder:validation:Type=string
	Duration *metav1.Duration `json:"duration,omitempty"`
	// IsCA asks for a CA certificate.
	// +optional
	IsCA bool `json:"isCA,omitempty"`
	// Usages asked.
	// +optional
	// +listType=atomic
	Usages []KeyUsage `json:"usages,omitempty"`
}

// CertificateRequestStatus is the issuer's answer (certlife's issuer
// contract: Ready=True Issued with the certificate; Ready=False Failed
// with failureTime, and Denied or InvalidRequest when so; Ready=False
// Pending while it works).
type CertificateRequestStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Certificate is the issued chain, PEM, leaf first.
	// +optional
	Certificate []byte `json:"certificate,omitempty"`
	// CA is the issuing CA, PEM, when the issuer knows it.
	// +optional
	CA []byte `json:"ca,omitempty"`
	// FailureTime is when the request failed.
	// +optional
	FailureTime *metav1.Time `json:"failureTime,omitempty"`
	// RetryAfter is when the issuer allows another attempt.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
}

func init() {
	SchemeBuilder.Register(&CertificateRequest{}, &CertificateRequestList{})
}

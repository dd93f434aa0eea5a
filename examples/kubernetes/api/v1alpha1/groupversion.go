// Package v1alpha1 is the certlife.dev/v1alpha1 API of the example
// operator: Certificate, CertificateRequest, Issuer and ClusterIssuer, and
// the ACME Order and Challenge that keep ACME work across restarts.
//
// The types mirror certlife's snapshot types field for field where they
// share a meaning (package operator converts between them); the schema
// carries every rule a schema can hold — enums, minimums, patterns, CEL
// rules — and certificate.Validate answers the rest in status
// (Ready=False, InvalidSpec).
//
// +kubebuilder:object:generate=true
// +groupName=certlife.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is certlife.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "certlife.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types of this group version.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

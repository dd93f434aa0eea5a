package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Certificate asks for an X.509 certificate and its private key, kept in a
// Secret and renewed before it expires.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cert;certs,categories=certlife
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secretName`
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.issuerRef.name`,priority=1
// +kubebuilder:printcolumn:name="Renewal",type=date,JSONPath=`.status.renewalTime`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CertificateSpec   `json:"spec"`
	Status CertificateStatus `json:"status,omitempty"`
}

// CertificateList lists Certificates.
//
// +kubebuilder:object:root=true
type CertificateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Certificate `json:"items"`
}

// CertificateSpec is what a certificate asks for. certlife's
// certificate.Spec, field for field.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.renewBefore) && has(self.renewBeforePercentage))",message="set renewBefore or renewBeforePercentage, not both"
// +kubebuilder:validation:XValidation:rule="has(self.commonName) || (has(self.dnsNames) && size(self.dnsNames) > 0) || (has(self.ipAddresses) && size(self.ipAddresses) > 0) || (has(self.uris) && size(self.uris) > 0) || (has(self.emailAddresses) && size(self.emailAddresses) > 0)",message="name at least one of commonName, dnsNames, ipAddresses, uris, emailAddresses"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) < (has(self.duration) ? duration(self.duration) : duration('2160h'))",message="renewBefore must be less than the duration (2160h when unset)"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) >= (has(self.duration) ? duration(self.duration) : duration('2160h')) || (has(self.duration) ? duration(self.duration) : duration('2160h')) - duration(self.renewBefore) >= duration('10m')",message="renewBefore must leave at least 10m of the duration (2160h when unset) before renewal is due, or the certificate would be due for renewal as soon as it arrives"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBeforePercentage) || (has(self.duration) ? duration(self.duration) : duration('2160h')).getSeconds() * (100 - self.renewBeforePercentage) >= 60000",message="renewBeforePercentage must leave at least 10m of the duration (2160h when unset) before renewal is due, or the certificate would be due for renewal as soon as it arrives"
type CertificateSpec struct {
	// SecretName is the Secret the certificate and its key are written
	// to (tls.crt, tls.key, ca.crt).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`

	// CommonName is the subject common name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	CommonName string `json:"commonName,omitempty"`
	// DNSNames are subject alternative names.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	DNSNames []string `json:"dnsNames,omitempty"`
	// IPAddresses are subject alternative names, textual.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=45
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// URIs are subject alternative names.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=2048
	URIs []string `json:"uris,omitempty"`
	// EmailAddresses are subject alternative names.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=320
	EmailAddresses []string `json:"emailAddresses,omitempty"`
	// Subject holds the distinguished-name fields beyond the common name.
	// +optional
	Subject *X509Subject `json:"subject,omitempty"`

	// Duration asked of the issuer; unset means the issuer decides (90
	// days is assumed for validation). At least 1h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h')",message="must be at least 1h"
	Duration *metav1.Duration `json:"duration,omitempty"`
	// RenewBefore renews this long before expiry. At least 5m, and at
	// least 10m less than the duration: a certificate is in use that long
	// before its renewal is due.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m')",message="must be at least 5m"
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
	// RenewBeforePercentage renews when this percentage of the lifetime
	// remains, which must leave at least 10m of the duration before the
	// renewal is due. Exclusive with renewBefore.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	RenewBeforePercentage *int32 `json:"renewBeforePercentage,omitempty"`

	// IssuerRef names the Issuer or ClusterIssuer that signs the
	// certificate.
	IssuerRef IssuerReference `json:"issuerRef"`
	// IsCA asks for a CA certificate.
	// +optional
	IsCA bool `json:"isCA,omitempty"`
	// Usages are the key usages and extended key usages; unset means
	// digital signature and key encipherment.
	// +optional
	// +listType=atomic
	Usages []KeyUsage `json:"usages,omitempty"`

	// PrivateKey says what key to generate; unset means RSA 2048 in
	// PKCS#1, rotated on every issuance.
	// +optional
	PrivateKey *PrivateKey `json:"privateKey,omitempty"`

	// SecretTemplate holds labels and annotations copied onto the Secret.
	// +optional
	SecretTemplate *SecretTemplate `json:"secretTemplate,omitempty"`
	// AdditionalOutputFormats adds tls-combined.pem (CombinedPEM) or
	// key.der (DER) to the Secret.
	// +optional
	// +listType=set
	AdditionalOutputFormats []OutputFormat `json:"additionalOutputFormats,omitempty"`
	// Keystores adds PKCS#12 and JKS keystores to the Secret.
	// +optional
	Keystores *Keystores `json:"keystores,omitempty"`

	// RevisionHistoryLimit is how many CertificateRequests of issued
	// revisions are kept; unset means 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Renewal is the renewal policy: Automatic (the default), Disabled,
	// or Scheduled inside windows.
	// +optional
	Renewal *RenewalSpec `json:"renewal,omitempty"`
}

// X509Subject holds distinguished-name fields.
type X509Subject struct {
	// +optional
	// +listType=atomic
	Organizations []string `json:"organizations,omitempty"`
	// +optional
	// +listType=atomic
	Countries []string `json:"countries,omitempty"`
	// +optional
	// +listType=atomic
	OrganizationalUnits []string `json:"organizationalUnits,omitempty"`
	// +optional
	// +listType=atomic
	Localities []string `json:"localities,omitempty"`
	// +optional
	// +listType=atomic
	Provinces []string `json:"provinces,omitempty"`
	// +optional
	// +listType=atomic
	StreetAddresses []string `json:"streetAddresses,omitempty"`
	// +optional
	// +listType=atomic
	PostalCodes []string `json:"postalCodes,omitempty"`
	// +optional
	SerialNumber string `json:"serialNumber,omitempty"`
}

// IssuerReference names an issuer.
type IssuerReference struct {
	// Name of the Issuer (in the certificate's namespace) or
	// ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Kind is Issuer (the default) or ClusterIssuer.
	// +optional
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	Kind string `json:"kind,omitempty"`
	// Group is the issuer's API group; unset means certlife.dev. Requests
	// for another group are left to that group's issuer.
	// +optional
	Group string `json:"group,omitempty"`
}

// KeyUsage is a key usage or extended key usage.
//
// +kubebuilder:validation:Enum=signing;digital signature;content commitment;key encipherment;key agreement;data encipherment;cert sign;crl sign;encipher only;decipher only;any;server auth;client auth;code signing;email protection;timestamping;ocsp signing
type KeyUsage string

// PrivateKey says what private key a certificate wants.
//
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(self.algorithm) || self.algorithm != 'ECDSA' || self.size in [256, 384, 521]",message="an ECDSA size is 256, 384 or 521"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || (has(self.algorithm) && self.algorithm != 'RSA') || (self.size >= 2048 && self.size <= 8192)",message="an RSA size is between 2048 and 8192"
type PrivateKey struct {
	// Algorithm is RSA (the default), ECDSA or Ed25519.
	// +optional
	// +kubebuilder:validation:Enum=RSA;ECDSA;Ed25519
	Algorithm string `json:"algorithm,omitempty"`
	// Size is the RSA modulus in bits (2048 to 8192, default 2048) or the
	// ECDSA curve (256, 384 or 521, default 256); ignored for Ed25519.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Size int `json:"size,omitempty"`
	// Encoding of tls.key: PKCS1 (the default) or PKCS8.
	// +optional
	// +kubebuilder:validation:Enum=PKCS1;PKCS8
	Encoding string `json:"encoding,omitempty"`
	// RotationPolicy: Always (the default) makes a new key for every
	// issuance; Never reuses the key in the Secret.
	// +optional
	// +kubebuilder:validation:Enum=Always;Never
	RotationPolicy string `json:"rotationPolicy,omitempty"`
}

// SecretTemplate holds labels and annotations copied onto the Secret.
type SecretTemplate struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// OutputFormat is an additional output of the Secret.
//
// +kubebuilder:validation:Enum=CombinedPEM;DER
type OutputFormat string

// Keystores asks for keystores in the Secret.
type Keystores struct {
	// PKCS12 adds keystore.p12 (and truststore.p12 when there is a CA).
	// +optional
	PKCS12 *PKCS12Keystore `json:"pkcs12,omitempty"`
	// JKS adds keystore.jks (and truststore.jks when there is a CA).
	// +optional
	JKS *JKSKeystore `json:"jks,omitempty"`
}

// PKCS12Keystore asks for a PKCS#12 keystore.
type PKCS12Keystore struct {
	// PasswordSecretRef names the key of a Secret, in the certificate's
	// namespace, holding the keystore password.
	PasswordSecretRef SecretKeySelector `json:"passwordSecretRef"`
	// Profile is the encryption: Modern2023 (the default), LegacyRC2 or
	// LegacyDES.
	// +optional
	// +kubebuilder:validation:Enum=Modern2023;LegacyRC2;LegacyDES
	Profile string `json:"profile,omitempty"`
}

// JKSKeystore asks for a JKS keystore.
type JKSKeystore struct {
	// PasswordSecretRef names the key of a Secret, in the certificate's
	// namespace, holding the keystore password.
	PasswordSecretRef SecretKeySelector `json:"passwordSecretRef"`
	// Alias of the key entry; unset means "certificate".
	// +optional
	Alias string `json:"alias,omitempty"`
}

// SecretKeySelector names one key of a Secret.
type SecretKeySelector struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret's data.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// RenewalSpec is the renewal policy.
type RenewalSpec struct {
	// Policy is Automatic (the default), Disabled or Scheduled.
	// +optional
	// +kubebuilder:validation:Enum=Automatic;Disabled;Scheduled
	Policy string `json:"policy,omitempty"`
	// Windows during which a Scheduled certificate may renew (any of
	// them); the fail-safe renews outside them when expiry is near.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Windows []RenewalWindow `json:"windows,omitempty"`
}

// RenewalWindow is a time of day on some days of the week, in one time
// zone.
type RenewalWindow struct {
	// DaysOfWeek the window starts on, "Monday" … "Sunday" (or "Mon" …
	// "Sun"); unset means every day.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=7
	DaysOfWeek []string `json:"daysOfWeek,omitempty"`
	// Start is the local start time, "HH:MM".
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`
	// End is the local end time, "HH:MM" or "24:00"; earlier than the
	// start rolls over to the next day.
	// +kubebuilder:validation:Pattern=`^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`
	End string `json:"end"`
	// TimeZone is an IANA time zone name such as "Europe/Oslo"; unset
	// means UTC.
	// +optional
	TimeZone string `json:"timezone,omitempty"`
}

// CertificateStatus is certlife's certificate.Status — the only way its
// stages talk to each other — and what the operator adds about waiting.
type CertificateStatus struct {
	// Conditions: Ready, Issuing, and the renewal conditions
	// (RenewalDisabled, RenewalDeferred, RenewalWindowBypassed,
	// RenewalConfigInvalid, RenewalWindowsIgnored). Setting Issuing=True
	// by hand triggers an issuance at once.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision of the certificate in the Secret; unset before the first
	// issuance.
	// +optional
	Revision *int `json:"revision,omitempty"`
	// NextPrivateKeySecretName names the Secret holding the key of the
	// issuance in progress.
	// +optional
	NextPrivateKeySecretName string `json:"nextPrivateKeySecretName,omitempty"`
	// LastFailureTime and FailedIssuanceAttempts drive the backoff after
	// failed issuance.
	// +optional
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`
	// +optional
	FailedIssuanceAttempts *int `json:"failedIssuanceAttempts,omitempty"`
	// RetryAfter is the earliest next attempt the CA allowed.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
	// NotBefore and NotAfter of the certificate in the Secret.
	// +optional
	NotBefore *metav1.Time `json:"notBefore,omitempty"`
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// RenewalTime is when renewal is due.
	// +optional
	RenewalTime *metav1.Time `json:"renewalTime,omitempty"`
	// Renewal reports the renewal policy in force and its windows.
	// +optional
	Renewal *RenewalStatus `json:"renewal,omitempty"`

	// Backoff, set while a failed issuance holds the next attempt back,
	// says when it is tried again and why (the operator's addition:
	// certlife's trigger says it, this records it).
	// +optional
	Backoff *BackoffStatus `json:"backoff,omitempty"`
}

// RenewalStatus reports the renewal policy in force.
type RenewalStatus struct {
	// +optional
	Policy string `json:"policy,omitempty"`
	// +optional
	Windows *RenewalWindowsStatus `json:"windows,omitempty"`
}

// RenewalWindowsStatus reports the windows of a Scheduled certificate.
type RenewalWindowsStatus struct {
	// Valid is "True" or "False".
	Valid string `json:"valid"`
	// MatchedWindow names the window the last renewal happened in, such
	// as "windows[1]".
	// +optional
	MatchedWindow string `json:"matchedWindow,omitempty"`
}

// BackoffStatus says when a certificate whose issuance failed is tried
// again.
type BackoffStatus struct {
	// NextAttemptTime is when issuance is tried again.
	NextAttemptTime metav1.Time `json:"nextAttemptTime"`
	// Message is certlife's word on it: why issuance is needed, how often
	// it failed, the backoff.
	// +optional
	Message string `json:"message,omitempty"`
}

func init() {
	SchemeBuilder.Register(&Certificate{}, &CertificateList{})
}

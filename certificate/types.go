package certificate

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Annotations and labels certlife reads and writes, with their meaning.
const (
	// AnnotationRevision on a CertificateRequest: the certificate revision
	// the request is for (status.revision + 1 when it was created).
	AnnotationRevision = "certlife.dev/certificate-revision"
	// AnnotationCertificateName on a Secret or request: the certificate
	// that owns it.
	AnnotationCertificateName = "certlife.dev/certificate-name"
	// AnnotationIssuerName, AnnotationIssuerKind and AnnotationIssuerGroup
	// on a Secret: the issuer that signed the certificate in it.
	AnnotationIssuerName  = "certlife.dev/issuer-name"
	AnnotationIssuerKind  = "certlife.dev/issuer-kind"
	AnnotationIssuerGroup = "certlife.dev/issuer-group"
	// Certificate details on a Secret, read from the certificate it holds,
	// so `kubectl get secret -o yaml` shows what is in it: the common name,
	// and the DNS names, IP addresses, URIs and email addresses, each list
	// comma-separated ("" for none).
	AnnotationCommonName = "certlife.dev/common-name"
	AnnotationAltNames   = "certlife.dev/alt-names"
	AnnotationIPSANs     = "certlife.dev/ip-sans"
	AnnotationURISANs    = "certlife.dev/uri-sans"
	AnnotationEmailSANs  = "certlife.dev/email-sans"
	// AnnotationCreatedAt on a CertificateRequest: when the requestmanager
	// asked for it, on the clock of the decisions (RFC 3339), which the
	// stages compare with the times they record. A request without it is
	// timed by its creationTimestamp, which an API server sets on its own
	// clock.
	AnnotationCreatedAt = "certlife.dev/created-at"
	// AnnotationReplaces on a CertificateRequest: the ARI certificate
	// identifier (RFC 9773 §4.1) of the certificate the request renews
	// (CreateRequest.Replaces). An ACME issuer names it in its order's
	// "replaces" (RFC 9773 §5).
	AnnotationReplaces = "certlife.dev/replaces"
	// LabelNextPrivateKey marks a Secret that holds the next private key of
	// a certificate during issuance; its value is "true".
	LabelNextPrivateKey = "certlife.dev/next-private-key"
	// AnnotationAllowTakeover on a Secret, with the value "true", hands the
	// secret over to the certificate whose spec.secretName names it: the
	// certificate may replace what it holds. A certificate never writes a
	// secret that already holds data, is not owned by it, and carries
	// neither certlife's annotations (AnnotationCertificateName,
	// AnnotationIssuerName) nor the reference operator's
	// (AnnotationCertManagerCertificateName,
	// AnnotationCertManagerIssuerName) — such as a CA key pair a user made
	// by hand — unless this annotation says so (ReasonSecretNotOwned).
	AnnotationAllowTakeover = "certlife.dev/allow-takeover"
	// AnnotationCertManagerCertificateName and
	// AnnotationCertManagerIssuerName on a Secret: written by the
	// reference operator (cert-manager) on the secrets it issues into.
	// Either marks a secret it wrote, which a certificate may take over
	// without AnnotationAllowTakeover, as it may one certlife wrote.
	AnnotationCertManagerCertificateName = "cert-manager.io/certificate-name"
	AnnotationCertManagerIssuerName      = "cert-manager.io/issuer-name"
)

// Defaults of IssuerRef.
const (
	DefaultIssuerKind  = "Issuer"
	DefaultIssuerGroup = "certlife.dev"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("2160h0m0s"), as Kubernetes' metav1.Duration does.
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON reads a duration string such as "90m" or "2160h".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %q: %w", s, err)
	}
	d.Duration = v
	return nil
}

// ObjectMeta is the part of a Kubernetes object's metadata certlife reads.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp time.Time         `json:"creationTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	// OwnerUID is the UID of the controlling owner, empty for none.
	OwnerUID string `json:"ownerUID,omitempty"`
}

// Meta returns the object's metadata; through embedding it gives
// generic code (package certificate/host's stores) the metadata of a
// Certificate, Secret or CertificateRequest.
func (m *ObjectMeta) Meta() *ObjectMeta { return m }

// IssuerRef names the issuer that signs a certificate's requests.
type IssuerRef struct {
	Name string `json:"name"`
	// Kind; empty means DefaultIssuerKind.
	Kind string `json:"kind,omitempty"`
	// Group; empty means DefaultIssuerGroup.
	Group string `json:"group,omitempty"`
}

// WithDefaults fills Kind and Group.
func (r IssuerRef) WithDefaults() IssuerRef {
	if r.Kind == "" {
		r.Kind = DefaultIssuerKind
	}
	if r.Group == "" {
		r.Group = DefaultIssuerGroup
	}
	return r
}

// SecretTemplate holds labels and annotations copied onto the secret.
type SecretTemplate struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// OutputFormat is an additional secret output.
type OutputFormat string

// Output formats.
const (
	OutputCombinedPEM OutputFormat = "CombinedPEM" // tls-combined.pem
	OutputDER         OutputFormat = "DER"         // key.der
)

// Keystores asks for PKCS#12 and JKS keystores in the secret.
type Keystores struct {
	PKCS12 *keys.PKCS12Spec `json:"pkcs12,omitempty"`
	JKS    *keys.JKSSpec    `json:"jks,omitempty"`
}

// Spec is what a certificate asks for.
type Spec struct {
	// SecretName is the secret the certificate and key are written to.
	// Required.
	SecretName string `json:"secretName"`

	CommonName     string        `json:"commonName,omitempty"`
	DNSNames       []string      `json:"dnsNames,omitempty"`
	IPAddresses    []string      `json:"ipAddresses,omitempty"`
	URIs           []string      `json:"uris,omitempty"`
	EmailAddresses []string      `json:"emailAddresses,omitempty"`
	Subject        *keys.Subject `json:"subject,omitempty"`
	// LiteralSubject is the whole subject as an RFC 4514 string, such as
	// "CN=app,OU=web,DC=corp,DC=example", encoded as written, in the order
	// written (keys.ParseLiteralSubject): for clients that match a
	// subject's exact form, such as LDAP. Exclusive with CommonName and
	// Subject; its CN, if any, is the common name.
	LiteralSubject string `json:"literalSubject,omitempty"`
	// OtherNames are subject alternative names of the otherName form
	// with UTF8String values, such as a user principal name (OID
	// 1.3.6.1.4.1.311.20.2.3).
	OtherNames []keys.OtherName `json:"otherNames,omitempty"`

	// Duration requested from the issuer; nil means the issuer decides
	// (DefaultDuration is assumed for validation). At least one hour.
	Duration *Duration `json:"duration,omitempty"`
	// RenewBefore, when set, renews this long before expiry.
	RenewBefore *Duration `json:"renewBefore,omitempty"`
	// RenewBeforePercentage, when set, renews when this percentage of the
	// lifetime remains. Exclusive with RenewBefore.
	RenewBeforePercentage *int32 `json:"renewBeforePercentage,omitempty"`

	IssuerRef IssuerRef `json:"issuerRef"`
	// FallbackIssuerRefs are further issuers, tried in order after
	// IssuerRef when it fails (at most MaxFallbackIssuers, each named as
	// IssuerRef is, no issuer twice). Each issuance starts with
	// IssuerRef; the next request of the same issuance goes to the next
	// issuer in the list (after the last, back to IssuerRef) when the
	// current one failed Config.FallbackAfterFailures issuances in a row,
	// asked through a Retry-After to wait longer than
	// Config.FallbackRetryAfter, or has left the request unanswered for
	// Config.FallbackPending; an issuer the host reports unhealthy
	// (Snapshot.IssuerHealth) is skipped. The issuer in use and why is in
	// Status.Issuer and in the Issuing condition's message. A certificate
	// issued by any of these issuers is in line with the spec: it is not
	// re-issued for its issuer, and its renewal starts again with
	// IssuerRef. Empty: IssuerRef alone, and none of the above applies.
	FallbackIssuerRefs []IssuerRef `json:"fallbackIssuerRefs,omitempty"`
	// IsCA asks for a CA certificate.
	IsCA bool `json:"isCA,omitempty"`
	// Usages are the key usages and extended key usages asked. Empty
	// means the defaults: the request lists keys.DefaultUsages (digital
	// signature and key encipherment, and cert sign for a CA), as the
	// reference operator's requests do, and the issuer chooses what fits
	// the key — certificate/localca grants keys.DefaultUsagesFor it:
	// digital signature, plus key encipherment for an RSA leaf only, and
	// cert sign and CRL sign for a CA. "cert sign" requires IsCA.
	Usages []keys.Usage `json:"usages,omitempty"`
	// EncodeUsagesInRequest says whether the usages are encoded in the
	// request's CSR as well as listed in its spec; nil means true. Set it
	// to false for an issuer that refuses CSRs carrying them.
	EncodeUsagesInRequest *bool `json:"encodeUsagesInRequest,omitempty"`
	// NameConstraints, for a CA (isCA), are the names it may certify
	// (RFC 5280 §4.2.1.10), asked in the CSR; certificate/localca puts
	// them into the CA certificate it signs.
	NameConstraints *keys.NameConstraints `json:"nameConstraints,omitempty"`

	// PrivateKey spec; nil means keys' defaults.
	PrivateKey *keys.KeySpec `json:"privateKey,omitempty"`

	SecretTemplate          *SecretTemplate `json:"secretTemplate,omitempty"`
	AdditionalOutputFormats []OutputFormat  `json:"additionalOutputFormats,omitempty"`
	Keystores               *Keystores      `json:"keystores,omitempty"`

	// RevisionHistoryLimit is how many old requests to keep; nil means
	// DefaultRevisionHistoryLimit.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Renewal is the renewal policy: Automatic, Disabled, or Scheduled
	// inside renewal windows; nil means Automatic.
	Renewal *renewal.Spec `json:"renewal,omitempty"`

	// IssueTemporaryCertificate asks for a temporary certificate in the
	// secret while an issuance runs and the secret holds no usable
	// certificate and key (on the first issuance, typically): one for the
	// next private key, signed by a throwaway issuer no client trusts
	// (keys.TemporaryCertificate), so that workloads that mount the
	// secret can start. The certificate is not Ready while the secret
	// holds it (ReasonTemporaryCertificate); the issued certificate
	// replaces it. cert-manager asks for it with the annotation
	// cert-manager.io/issue-temporary-certificate: "true".
	IssueTemporaryCertificate bool `json:"issueTemporaryCertificate,omitempty"`
}

// MaxFallbackIssuers is the most issuers Spec.FallbackIssuerRefs may
// name.
const MaxFallbackIssuers = 5

// IssuerRefs lists the issuers a request may name, their defaults
// filled: IssuerRef, then FallbackIssuerRefs in order.
func (s *Spec) IssuerRefs() []IssuerRef {
	out := make([]IssuerRef, 0, 1+len(s.FallbackIssuerRefs))
	out = append(out, s.IssuerRef.WithDefaults())
	for _, r := range s.FallbackIssuerRefs {
		out = append(out, r.WithDefaults())
	}
	return out
}

// DefaultDuration is assumed when Spec.Duration is unset (90 days).
const DefaultDuration = 90 * 24 * time.Hour

// DefaultRevisionHistoryLimit of requests kept after issuance.
const DefaultRevisionHistoryLimit = 1

// KeySpec returns the private key spec with defaults.
func (s *Spec) KeySpec() keys.KeySpec {
	if s == nil || s.PrivateKey == nil {
		return keys.KeySpec{}.WithDefaults()
	}
	return s.PrivateKey.WithDefaults()
}

// Template returns what the certificate asks to be certified.
func (s *Spec) Template() keys.RequestTemplate {
	if s == nil {
		return keys.RequestTemplate{}
	}
	return keys.RequestTemplate{
		CommonName: s.CommonName, DNSNames: s.DNSNames, IPAddresses: s.IPAddresses,
		URIs: s.URIs, EmailAddresses: s.EmailAddresses, Subject: s.Subject,
		LiteralSubject: s.LiteralSubject, OtherNames: s.OtherNames,
		Usages: s.Usages, EncodeUsagesInRequest: s.EncodeUsagesInRequest,
		IsCA: s.IsCA, NameConstraints: s.NameConstraints,
	}
}

// Condition types on a Certificate.
const (
	ConditionReady   = "Ready"
	ConditionIssuing = "Issuing"
)

// Condition statuses.
const (
	StatusTrue    = "True"
	StatusFalse   = "False"
	StatusUnknown = "Unknown"
)

// Condition is a Kubernetes-style status condition.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitempty"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
}

// Status is what the stages record about a certificate, and the only way
// they talk to each other.
type Status struct {
	Conditions []Condition `json:"conditions,omitempty"`
	// Revision of the certificate in the secret; nil before the first
	// issuance.
	Revision *int `json:"revision,omitempty"`
	// NextPrivateKeySecretName names the secret holding the key of the
	// issuance in progress.
	NextPrivateKeySecretName string `json:"nextPrivateKeySecretName,omitempty"`
	// LastFailureTime and FailedIssuanceAttempts drive the backoff
	// (package backoff).
	LastFailureTime        *time.Time `json:"lastFailureTime,omitempty"`
	FailedIssuanceAttempts *int       `json:"failedIssuanceAttempts,omitempty"`
	// RetryAfter is the earliest next attempt the CA allowed (rate limit).
	RetryAfter *time.Time `json:"retryAfter,omitempty"`
	// Issuer is the issuer the issuance in progress (or, after it, the
	// last one) uses among spec.issuerRef and spec.fallbackIssuerRefs,
	// and why; nil for a certificate without fallback issuers.
	Issuer *IssuerStatus `json:"issuer,omitempty"`

	NotBefore   *time.Time `json:"notBefore,omitempty"`
	NotAfter    *time.Time `json:"notAfter,omitempty"`
	RenewalTime *time.Time `json:"renewalTime,omitempty"`

	// Renewal is the renewal policy in effect and its windows, for users to
	// read.
	Renewal *renewal.Status `json:"renewal,omitempty"`
	// RenewalInfo is what the CA last said of the current certificate's
	// renewal window (ACME Renewal Information, RFC 9773), for users to
	// read; nil when the certificate's issuer gives none.
	RenewalInfo *RenewalInfoStatus `json:"renewalInfo,omitempty"`
}

// IssuerStatus is which of a certificate's issuers its requests name, and
// why (Spec.FallbackIssuerRefs).
type IssuerStatus struct {
	// Revision is the revision the choice is for: status.revision + 1
	// while that revision is being issued; the revision issued, after.
	// A new revision starts again with spec.issuerRef.
	Revision int `json:"revision"`
	// Index is the issuer: 0 is spec.issuerRef, i > 0 is
	// spec.fallbackIssuerRefs[i-1].
	Index int `json:"index"`
	// IssuerRef is that issuer, its defaults filled, for users to read.
	IssuerRef IssuerRef `json:"issuerRef"`
	// FailedAttempts counts the issuances of Revision that failed in a
	// row with this issuer.
	FailedAttempts int `json:"failedAttempts,omitempty"`
	// Reason says why this issuer (ReasonFirstIssuer,
	// ReasonIssuerFailedRepeatedly, ReasonIssuerRetryAfter,
	// ReasonIssuerNotReady, ReasonIssuerUnhealthy); Message in words.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Skipped are the issuers this choice of Revision passed over because
	// a host reported them unhealthy (Snapshot.IssuerHealth), each with
	// when it may be tried again. Every host deciding on Revision skips
	// them too until then, with the issuers its own report names: hosts
	// that share the certificate (replicas, each with its own circuits)
	// decide on what they know together, and none undoes another's
	// choice for what only the other knew.
	Skipped []IssuerSkip `json:"skipped,omitempty"`
}

// Equal reports whether s and o are the same choice, skipped issuers
// included.
func (s IssuerStatus) Equal(o IssuerStatus) bool {
	return s.Revision == o.Revision && s.Index == o.Index && s.IssuerRef == o.IssuerRef &&
		s.FailedAttempts == o.FailedAttempts && s.Reason == o.Reason && s.Message == o.Message &&
		slices.EqualFunc(s.Skipped, o.Skipped, func(a, b IssuerSkip) bool { return a.IssuerRef == b.IssuerRef && a.Until.Equal(b.Until) })
}

// RenewalInfoStatus is what the CA last said of a certificate's renewal
// window, and when it is asked again. Its times are whole seconds, as
// stores that keep RFC 3339 times (the Kubernetes API) keep them, so
// that a status read back compares equal to the one written.
type RenewalInfoStatus struct {
	// SuggestedWindow is the CA's suggested renewal window; nil before
	// the CA has given one.
	SuggestedWindow *renewal.ARIWindow `json:"suggestedWindow,omitempty"`
	// LastChecked is when the CA was last asked, NextCheck when it will
	// be asked again.
	LastChecked *time.Time `json:"lastChecked,omitempty"`
	NextCheck   *time.Time `json:"nextCheck,omitempty"`
	// LastError says why the last request failed; empty after one that
	// did not.
	LastError string `json:"lastError,omitempty"`
}

// Condition returns the condition of type t, or nil.
func (s *Status) Condition(t string) *Condition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// Certificate is the resource a user writes.
type Certificate struct {
	ObjectMeta `json:"metadata"`
	Spec       Spec   `json:"spec"`
	Status     Status `json:"status,omitempty"`
}

// Secret holds a certificate, its key, and anything else the spec asks.
type Secret struct {
	ObjectMeta `json:"metadata"`
	Data       map[string][]byte `json:"data,omitempty"`
}

// Request condition types and reasons.
const (
	RequestConditionReady          = "Ready"
	RequestConditionDenied         = "Denied"
	RequestConditionInvalidRequest = "InvalidRequest"
	RequestReasonPending           = "Pending"
	RequestReasonFailed            = "Failed"
	RequestReasonIssued            = "Issued"
)

// RequestSpec is what a CertificateRequest asks the issuer.
type RequestSpec struct {
	// Request is the PEM certificate signing request.
	Request   []byte       `json:"request"`
	IssuerRef IssuerRef    `json:"issuerRef"`
	Duration  *Duration    `json:"duration,omitempty"`
	IsCA      bool         `json:"isCA,omitempty"`
	Usages    []keys.Usage `json:"usages,omitempty"`
}

// RequestStatus is what the issuer answered.
type RequestStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
	// Certificate is the issued chain, PEM, leaf first.
	Certificate []byte `json:"certificate,omitempty"`
	// CA is the issuing CA, PEM, when the issuer knows it.
	CA []byte `json:"ca,omitempty"`
	// FailureTime is when the request failed.
	FailureTime *time.Time `json:"failureTime,omitempty"`
	// RetryAfter is when the issuer allows another attempt (rate limits).
	RetryAfter *time.Time `json:"retryAfter,omitempty"`
}

// CertificateRequest is one attempt to get a certificate signed.
type CertificateRequest struct {
	ObjectMeta `json:"metadata"`
	Spec       RequestSpec   `json:"spec"`
	Status     RequestStatus `json:"status,omitempty"`
}

// Condition returns the request's condition of type t, or nil.
func (r *CertificateRequest) Condition(t string) *Condition {
	if r == nil {
		return nil
	}
	for i := range r.Status.Conditions {
		if r.Status.Conditions[i].Type == t {
			return &r.Status.Conditions[i]
		}
	}
	return nil
}

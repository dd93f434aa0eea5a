package operator

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// The conversions between cert-manager's cert-manager.io/v1 objects and
// certlife's certificate types, both ways. What certlife reads and writes
// travels exactly (times to the second, as the API server keeps them);
// what cert-manager's status has no field for travels in the annotations
// below; a spec field certlife does not serve is named by NotServed, never
// silently dropped.

// Annotations the operator keeps on cert-manager's resources for what
// certlife records and cert-manager.io/v1 has no field for.
const (
	// AnnotationRetryAfter on a Certificate or a CertificateRequest: the
	// earliest next attempt the CA allowed (its Retry-After, RFC 3339),
	// which the certificate's backoff honours. An issuer that answers a
	// request with a failure may set it.
	AnnotationRetryAfter = "certlife.dev/retry-after"
	// AnnotationRenewalStatus on a Certificate: the renewal policy in
	// effect and its windows (whether they are valid, and the window the
	// last renewal happened in), as JSON — only when it says more than
	// the spec's policy does, as for a certificate renewed in windows.
	AnnotationRenewalStatus = "certlife.dev/renewal-status"
	// AnnotationFallbackIssuers on a Certificate names, in order, the
	// issuers its requests go to when the one before fails
	// (certificate.Spec.FallbackIssuerRefs): a comma-separated list of
	// "Kind/name" or "Kind.group/name" ("ClusterIssuer/zerossl,
	// Issuer/backup-ca"); a name alone is an Issuer of cert-manager.io.
	// A value that cannot be read makes the spec invalid, naming the
	// annotation.
	AnnotationFallbackIssuers = "certlife.dev/fallback-issuers"
	// AnnotationIssuerStatus on a Certificate: which of its issuers the
	// current revision uses and why (certificate.Status.Issuer), as JSON;
	// set only for a Certificate with fallback issuers.
	AnnotationIssuerStatus = "certlife.dev/issuer-status"
)

// fallbackIssuers reads AnnotationFallbackIssuers; nil for none.
func fallbackIssuers(v string) ([]certificate.IssuerRef, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []certificate.IssuerRef
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		ref := certificate.IssuerRef{Kind: cmapi.IssuerKind, Group: GroupName, Name: item}
		if kind, name, ok := strings.Cut(item, "/"); ok {
			ref.Name = name
			ref.Kind, ref.Group, _ = strings.Cut(kind, ".")
			if ref.Group == "" {
				ref.Group = GroupName
			}
		}
		if ref.Name == "" || ref.Kind == "" || strings.Contains(ref.Name, "/") {
			return nil, fmt.Errorf("%q is not Kind/name, Kind.group/name or name", item)
		}
		out = append(out, ref)
	}
	return out, nil
}

// LabelManaged marks every Secret the operator writes — targets and next
// private keys — with the value "true": cert-manager's own label for the
// Secrets its controller manages, so Secrets the reference operator wrote
// are in the operator's cache from the start. Only Secrets with it are
// cached; certlife puts it back on a target Secret that lost it (it joins
// spec.secretTemplate's labels).
const LabelManaged = cmapi.PartOfCertManagerControllerLabelKey

// GroupName is the API group of the issuers the operator serves, and the
// group of an issuerRef that names none.
const GroupName = "cert-manager.io"

// certificateKeys maps certlife's annotation keys on Secrets and requests
// to cert-manager's: what certlife writes is what the reference operator
// writes, and a Secret the reference operator wrote reads as certlife's.
var certificateKeys = map[string]string{
	certificate.AnnotationCertificateName:      cmapi.CertificateNameKey,
	certificate.AnnotationIssuerName:           cmapi.IssuerNameAnnotationKey,
	certificate.AnnotationIssuerKind:           cmapi.IssuerKindAnnotationKey,
	certificate.AnnotationIssuerGroup:          cmapi.IssuerGroupAnnotationKey,
	certificate.AnnotationCommonName:           cmapi.CommonNameAnnotationKey,
	certificate.AnnotationAltNames:             cmapi.AltNamesAnnotationKey,
	certificate.AnnotationIPSANs:               cmapi.IPSANAnnotationKey,
	certificate.AnnotationURISANs:              cmapi.URISANAnnotationKey,
	certificate.AnnotationEmailSANs:            cmapi.EmailsAnnotationKey,
	certificate.AnnotationRevision:             cmapi.CertificateRequestRevisionAnnotationKey,
	certificate.AnnotationPrivateKeySecretName: cmapi.CertificateRequestPrivateKeyAnnotationKey,
}

// certificateLabels maps certlife's labels to cert-manager's.
var certificateLabels = map[string]string{
	certificate.LabelNextPrivateKey: cmapi.IsNextPrivateKeySecretLabelKey,
}

var (
	certManagerKeys   = inverse(certificateKeys)
	certManagerLabels = inverse(certificateLabels)
)

func inverse(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// keysToCore renames cert-manager's keys in m to certlife's (to: the
// inverse table); a certlife key already there gives way to
// cert-manager's. drop lists keys left out.
func keysToCore(m, to map[string]string, drop ...string) map[string]string {
	if len(m) == 0 {
		return maps.Clone(m)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if _, theirs := to[k]; !theirs && !slices.Contains(drop, k) {
			out[k] = v
		}
	}
	for k, v := range m {
		if ours, theirs := to[k]; theirs {
			out[ours] = v
		}
	}
	return out
}

// keysFromCore renames certlife's keys in m to cert-manager's (to: the
// table), which win over any of cert-manager's already there.
func keysFromCore(m, to map[string]string) map[string]string {
	if len(m) == 0 {
		return maps.Clone(m)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if _, ours := to[k]; !ours {
			out[k] = v
		}
	}
	for k, v := range m {
		if theirs, ours := to[k]; ours {
			out[theirs] = v
		}
	}
	return out
}

// Passwords are a certificate's keystore passwords, read from the Secrets
// its spec.keystores names (the inline password fields are read by the
// conversion itself).
type Passwords struct {
	PKCS12, JKS keys.Password
}

// CertificateToCore converts a Certificate for a decision: its metadata,
// spec and status. The managed label (LabelManaged) joins
// spec.secretTemplate's labels, so certlife writes it onto the Secret and
// puts it back when it goes missing (a Secret without it falls out of the
// operator's cache). A field certlife does not serve is left out (see
// NotServed, which the operator checks first).
func CertificateToCore(c *cmapi.Certificate, pw Passwords) *certificate.Certificate {
	spec := specToCore(c, pw)
	meta := metaToCore(&c.ObjectMeta)
	meta.Annotations = keysToCore(c.Annotations, nil, AnnotationRetryAfter, AnnotationRenewalStatus, AnnotationFallbackIssuers, AnnotationIssuerStatus)
	return &certificate.Certificate{ObjectMeta: meta, Spec: spec, Status: statusToCore(c, &spec)}
}

func specToCore(c *cmapi.Certificate, pw Passwords) certificate.Spec {
	s := &c.Spec
	out := certificate.Spec{
		SecretName:     s.SecretName,
		CommonName:     s.CommonName,
		DNSNames:       slices.Clone(s.DNSNames),
		IPAddresses:    slices.Clone(s.IPAddresses),
		URIs:           slices.Clone(s.URIs),
		EmailAddresses: slices.Clone(s.EmailAddresses),
		Duration:       durationToCore(s.Duration),
		RenewBefore:    durationToCore(s.RenewBefore),
		IssuerRef:      issuerRefToCore(s.IssuerRef),
		// An unreadable list is none here; NotServed refuses it.
		FallbackIssuerRefs: func() []certificate.IssuerRef {
			r, _ := fallbackIssuers(c.Annotations[AnnotationFallbackIssuers])
			return r
		}(),
		LiteralSubject: s.LiteralSubject,
		IsCA:           s.IsCA,
		Usages:         usagesToCore(s.Usages),
		SecretTemplate: &certificate.SecretTemplate{Labels: map[string]string{LabelManaged: "true"}},
		// The reference operator's annotation: a temporary certificate in
		// the Secret while the first issuance runs.
		IssueTemporaryCertificate: c.Annotations[cmapi.IssueTemporaryCertificateAnnotation] == "true",
	}
	if e := s.EncodeUsagesInRequest; e != nil {
		out.EncodeUsagesInRequest = new(*e)
	}
	for _, o := range s.OtherNames {
		out.OtherNames = append(out.OtherNames, keys.OtherName{OID: o.OID, UTF8Value: o.UTF8Value})
	}
	if nc := s.NameConstraints; nc != nil {
		out.NameConstraints = &keys.NameConstraints{Critical: nc.Critical,
			Permitted: nameConstraintItemToCore(nc.Permitted), Excluded: nameConstraintItemToCore(nc.Excluded)}
	}
	if p := s.RenewBeforePercentage; p != nil {
		out.RenewBeforePercentage = new(*p)
	}
	if l := s.RevisionHistoryLimit; l != nil {
		out.RevisionHistoryLimit = new(*l)
	}
	if sub := s.Subject; sub != nil {
		out.Subject = &keys.Subject{
			Organizations: slices.Clone(sub.Organizations), Countries: slices.Clone(sub.Countries),
			OrganizationalUnits: slices.Clone(sub.OrganizationalUnits), Localities: slices.Clone(sub.Localities),
			Provinces: slices.Clone(sub.Provinces), StreetAddresses: slices.Clone(sub.StreetAddresses),
			PostalCodes: slices.Clone(sub.PostalCodes), SerialNumber: sub.SerialNumber,
		}
	}
	if k := s.PrivateKey; k != nil {
		// Empty encoding and rotation policy mean PKCS1 and Always in both
		// APIs.
		out.PrivateKey = &keys.KeySpec{
			Algorithm: keys.Algorithm(k.Algorithm), Size: k.Size,
			Encoding: keys.Encoding(k.Encoding), RotationPolicy: keys.RotationPolicy(k.RotationPolicy),
		}
	}
	if t := s.SecretTemplate; t != nil {
		maps.Copy(out.SecretTemplate.Labels, t.Labels)
		out.SecretTemplate.Labels[LabelManaged] = "true" // the operator's, whatever the template says
		out.SecretTemplate.Annotations = maps.Clone(t.Annotations)
	}
	for _, f := range s.AdditionalOutputFormats {
		out.AdditionalOutputFormats = append(out.AdditionalOutputFormats, certificate.OutputFormat(f.Type))
	}
	if k := s.Keystores; k != nil {
		ks := &certificate.Keystores{}
		if p := k.PKCS12; p != nil && p.Create {
			profile := keys.PKCS12Profile(p.Profile)
			if profile == "" {
				profile = keys.PKCS12LegacyRC2 // cert-manager's default
			}
			ks.PKCS12 = &keys.PKCS12Spec{Password: password(pw.PKCS12, p.Password), Profile: profile}
		}
		if j := k.JKS; j != nil && j.Create {
			ks.JKS = &keys.JKSSpec{Password: password(pw.JKS, j.Password)}
			if j.Alias != nil {
				ks.JKS.Alias = *j.Alias
			}
		}
		if ks.PKCS12 != nil || ks.JKS != nil {
			out.Keystores = ks
		}
	}
	out.Renewal = renewalToCore(s.Renewal)
	return out
}

func nameConstraintItemToCore(i *cmapi.NameConstraintItem) *keys.NameConstraintItem {
	if i == nil {
		return nil
	}
	return &keys.NameConstraintItem{DNSDomains: slices.Clone(i.DNSDomains), IPRanges: slices.Clone(i.IPRanges),
		EmailAddresses: slices.Clone(i.EmailAddresses), URIDomains: slices.Clone(i.URIDomains)}
}

// password is the keystore password: the one read from the Secret, else
// the spec's literal one.
func password(fromSecret keys.Password, literal *string) keys.Password {
	if fromSecret == "" && literal != nil {
		return keys.Password(*literal)
	}
	return fromSecret
}

// renewalToCore converts spec.renewal: policy Disabled is certlife's
// Disabled; windows (with policy RenewBefore or none) make it Scheduled
// inside them; RenewBefore alone is Automatic. A window certlife cannot
// express is left out (NotServed names it).
func renewalToCore(r *cmapi.CertificateRenewal) *renewal.Spec {
	if r == nil {
		return nil
	}
	out := &renewal.Spec{Policy: renewal.PolicyAutomatic}
	switch {
	case r.Policy == cmapi.CertificateRenewalPolicyDisabled:
		out.Policy = renewal.PolicyDisabled
	case len(r.Windows) > 0:
		out.Policy = renewal.PolicyScheduled
	}
	for i, w := range r.Windows {
		if cw, problem := windowToCore(w, i); problem == nil {
			out.Windows = append(out.Windows, cw)
		}
	}
	return out
}

// statusToCore converts a Certificate's status, with what the operator
// keeps for certlife in its annotations: the CA's Retry-After, and the
// renewal status when the spec's policy does not imply it.
func statusToCore(c *cmapi.Certificate, spec *certificate.Spec) certificate.Status {
	s := &c.Status
	out := certificate.Status{
		LastFailureTime: timeToCore(s.LastFailureTime),
		NotBefore:       timeToCore(s.NotBefore),
		NotAfter:        timeToCore(s.NotAfter),
		RenewalTime:     timeToCore(s.RenewalTime),
		RetryAfter:      annotatedTime(c.Annotations[AnnotationRetryAfter]),
	}
	if s.Conditions != nil {
		out.Conditions = make([]certificate.Condition, len(s.Conditions))
		for i, c := range s.Conditions {
			out.Conditions[i] = certificate.Condition{
				Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message,
				LastTransitionTime: timeOrZero(c.LastTransitionTime), ObservedGeneration: c.ObservedGeneration,
			}
		}
	}
	if s.Revision != nil {
		out.Revision = new(*s.Revision)
	}
	if s.NextPrivateKeySecretName != nil {
		out.NextPrivateKeySecretName = *s.NextPrivateKeySecretName
	}
	if s.FailedIssuanceAttempts != nil {
		out.FailedIssuanceAttempts = new(*s.FailedIssuanceAttempts)
	}
	out.RenewalInfo = renewalInfoToCore(s.ACME)
	if raw, ok := c.Annotations[AnnotationIssuerStatus]; ok {
		var is *certificate.IssuerStatus
		if json.Unmarshal([]byte(raw), &is) == nil {
			out.Issuer = is
		}
	}
	out.Renewal = impliedRenewal(&out, spec)
	if raw, ok := c.Annotations[AnnotationRenewalStatus]; ok {
		var rs *renewal.Status
		if json.Unmarshal([]byte(raw), &rs) == nil {
			out.Renewal = rs
		}
	}
	return out
}

// renewalInfoToCore reads status.acme.ari, the fields cert-manager
// writes for ACME Renewal Information, as certlife's RenewalInfo.
func renewalInfoToCore(a *cmapi.CertificateACMEStatus) *certificate.RenewalInfoStatus {
	if a == nil || a.ARI == nil {
		return nil
	}
	out := &certificate.RenewalInfoStatus{
		LastChecked: timeToCore(a.ARI.LastChecked),
		NextCheck:   timeToCore(a.ARI.NextCheck),
		LastError:   a.ARI.LastError,
	}
	if w := a.ARI.SuggestedWindow; w != nil && w.Start != nil && w.End != nil {
		out.SuggestedWindow = &renewal.ARIWindow{Start: w.Start.UTC(), End: w.End.UTC(), ExplanationURL: a.ARI.ExplanationURL}
	}
	return out
}

// renewalInfoFromCore is certlife's RenewalInfo as status.acme.ari; nil
// for none.
func renewalInfoFromCore(ri *certificate.RenewalInfoStatus) *cmapi.CertificateACMEStatus {
	if ri == nil {
		return nil
	}
	ari := &cmapi.CertificateACMEARIStatus{
		LastChecked: timeFromCore(ri.LastChecked),
		NextCheck:   timeFromCore(ri.NextCheck),
		LastError:   ri.LastError,
	}
	if w := ri.SuggestedWindow; w != nil {
		start, end := metav1.NewTime(w.Start), metav1.NewTime(w.End)
		ari.SuggestedWindow = &cmapi.ACMERenewalWindow{Start: &start, End: &end}
		ari.ExplanationURL = w.ExplanationURL
	}
	return &cmapi.CertificateACMEStatus{ARI: ari}
}

// impliedRenewal is the renewal status certlife records for a certificate
// that has had a certificate (notAfter or a revision is set) and whose
// policy uses no windows: the policy, Automatic when the spec names none.
// The operator keeps the renewal status in AnnotationRenewalStatus only
// when it differs from this.
func impliedRenewal(s *certificate.Status, spec *certificate.Spec) *renewal.Status {
	if s.NotAfter == nil && s.Revision == nil {
		return nil
	}
	p := renewal.PolicyAutomatic
	if spec.Renewal != nil && spec.Renewal.Policy != "" {
		p = spec.Renewal.Policy
	}
	return &renewal.Status{Policy: p}
}

// CertificateStatusFromCore writes certlife's status s into c: its
// status fields (status.acme.ari from s.RenewalInfo, as cert-manager
// writes it when it uses ACME Renewal Information), times to the
// second, and the annotations for what
// cert-manager.io/v1's status has no field for (AnnotationRetryAfter,
// AnnotationRenewalStatus), removed when there is nothing to say. spec
// is c's spec in certlife's terms.
func CertificateStatusFromCore(c *cmapi.Certificate, s certificate.Status, spec *certificate.Spec) {
	st := &c.Status
	st.Conditions = nil
	if s.Conditions != nil {
		st.Conditions = make([]cmapi.CertificateCondition, len(s.Conditions))
		for i, c := range s.Conditions {
			st.Conditions[i] = cmapi.CertificateCondition{
				Type: cmapi.CertificateConditionType(c.Type), Status: cmmeta.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
				LastTransitionTime: timeFromCore(nilIfZero(c.LastTransitionTime)), ObservedGeneration: c.ObservedGeneration,
			}
		}
	}
	st.LastFailureTime = timeFromCore(s.LastFailureTime)
	st.NotBefore = timeFromCore(s.NotBefore)
	st.NotAfter = timeFromCore(s.NotAfter)
	st.RenewalTime = timeFromCore(s.RenewalTime)
	st.ACME = renewalInfoFromCore(s.RenewalInfo)
	st.Revision, st.NextPrivateKeySecretName, st.FailedIssuanceAttempts = nil, nil, nil
	if s.Revision != nil {
		st.Revision = new(*s.Revision)
	}
	if s.NextPrivateKeySecretName != "" {
		st.NextPrivateKeySecretName = new(s.NextPrivateKeySecretName)
	}
	if s.FailedIssuanceAttempts != nil {
		st.FailedIssuanceAttempts = new(*s.FailedIssuanceAttempts)
	}
	setAnnotation(&c.ObjectMeta, AnnotationRetryAfter, annotationTime(s.RetryAfter))
	renewalJSON := ""
	if !reflect.DeepEqual(s.Renewal, impliedRenewal(&s, spec)) {
		b, _ := json.Marshal(s.Renewal) // "null" for none
		renewalJSON = string(b)
	}
	setAnnotation(&c.ObjectMeta, AnnotationRenewalStatus, renewalJSON)
	issuerJSON := ""
	if s.Issuer != nil {
		b, _ := json.Marshal(s.Issuer)
		issuerJSON = string(b)
	}
	setAnnotation(&c.ObjectMeta, AnnotationIssuerStatus, issuerJSON)
}

// setAnnotation sets key to v, or removes it when v is empty.
func setAnnotation(m *metav1.ObjectMeta, key, v string) {
	if v == "" {
		if _, ok := m.Annotations[key]; ok {
			m.Annotations = maps.Clone(m.Annotations)
			delete(m.Annotations, key)
		}
		return
	}
	if m.Annotations[key] == v {
		return
	}
	m.Annotations = maps.Clone(m.Annotations)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = v
}

// RequestToCore converts a CertificateRequest: cert-manager's annotations
// (certificate-name, certificate-revision, private-key-secret-name) read
// as certlife's, the issuerRef with its defaults (Issuer, cert-manager.io),
// and AnnotationRetryAfter as the status's RetryAfter. cert-manager's
// spec.username, uid, groups and extra, which its webhook fills in, are
// not certlife's and stay behind.
func RequestToCore(r *cmapi.CertificateRequest) *certificate.CertificateRequest {
	meta := metaToCore(&r.ObjectMeta)
	meta.Annotations = keysToCore(r.Annotations, certManagerKeys, AnnotationRetryAfter)
	out := &certificate.CertificateRequest{
		ObjectMeta: meta,
		Spec: certificate.RequestSpec{
			Request:   r.Spec.Request,
			IssuerRef: issuerRefToCore(r.Spec.IssuerRef),
			Duration:  durationToCore(r.Spec.Duration),
			IsCA:      r.Spec.IsCA,
			Usages:    usagesToCore(r.Spec.Usages),
		},
		Status: certificate.RequestStatus{
			Certificate: r.Status.Certificate,
			CA:          r.Status.CA,
			FailureTime: timeToCore(r.Status.FailureTime),
			RetryAfter:  annotatedTime(r.Annotations[AnnotationRetryAfter]),
		},
	}
	if cs := r.Status.Conditions; cs != nil {
		out.Status.Conditions = make([]certificate.Condition, len(cs))
		for i, c := range cs {
			out.Status.Conditions[i] = certificate.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason,
				Message: c.Message, LastTransitionTime: timeOrZero(c.LastTransitionTime)}
		}
	}
	return out
}

// RequestFromCore converts a request certlife asks for (a CreateRequest
// action) into a CertificateRequest with cert-manager's annotations,
// owned by its certificate (OwnerUID, named by the certificate-name
// annotation).
func RequestFromCore(r *certificate.CertificateRequest) *cmapi.CertificateRequest {
	out := &cmapi.CertificateRequest{
		ObjectMeta: metaFromCore(r.ObjectMeta),
		Spec: cmapi.CertificateRequestSpec{
			Request:   r.Spec.Request,
			IssuerRef: issuerRefFromCore(r.Spec.IssuerRef),
			Duration:  durationFromCore(r.Spec.Duration),
			IsCA:      r.Spec.IsCA,
			Usages:    usagesFromCore(r.Spec.Usages),
		},
	}
	out.Annotations = keysFromCore(r.Annotations, certificateKeys)
	if r.OwnerUID != "" {
		out.OwnerReferences = []metav1.OwnerReference{certificateOwner(r.Annotations[certificate.AnnotationCertificateName], r.OwnerUID)}
	}
	RequestStatusFromCore(out, r.Status)
	return out
}

// RequestStatusFromCore writes an issuer's answer s into r: its status,
// times to the second, and AnnotationRetryAfter.
func RequestStatusFromCore(r *cmapi.CertificateRequest, s certificate.RequestStatus) {
	r.Status = cmapi.CertificateRequestStatus{
		Certificate: s.Certificate,
		CA:          s.CA,
		FailureTime: timeFromCore(s.FailureTime),
	}
	if s.Conditions != nil {
		r.Status.Conditions = make([]cmapi.CertificateRequestCondition, len(s.Conditions))
		for i, c := range s.Conditions {
			r.Status.Conditions[i] = cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionType(c.Type),
				Status: cmmeta.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
				LastTransitionTime: timeFromCore(nilIfZero(c.LastTransitionTime))}
		}
	}
	setAnnotation(&r.ObjectMeta, AnnotationRetryAfter, annotationTime(s.RetryAfter))
}

// SecretToCore converts a Secret: cert-manager's annotations and labels
// read as certlife's, with the reference operator's ways of writing them
// read as what they mean — an empty issuer kind or group is Issuer or
// cert-manager.io, and a Secret whose details it wrote without e-mail
// addresses has none — so that a Secret it wrote is not taken for drift.
// Its data is shared, not copied: a decision never changes its input.
func SecretToCore(s *corev1.Secret) *certificate.Secret {
	meta := metaToCore(&s.ObjectMeta)
	meta.Labels = keysToCore(s.Labels, certManagerLabels)
	meta.Annotations = keysToCore(s.Annotations, certManagerKeys)
	if a := meta.Annotations; a[certificate.AnnotationIssuerName] != "" {
		if a[certificate.AnnotationIssuerKind] == "" {
			a[certificate.AnnotationIssuerKind] = cmapi.IssuerKind
		}
		if a[certificate.AnnotationIssuerGroup] == "" {
			a[certificate.AnnotationIssuerGroup] = GroupName
		}
	}
	if a := meta.Annotations; a != nil {
		if _, details := a[certificate.AnnotationAltNames]; details {
			if _, ok := a[certificate.AnnotationEmailSANs]; !ok {
				a[certificate.AnnotationEmailSANs] = ""
			}
		}
	}
	return &certificate.Secret{ObjectMeta: meta, Data: s.Data}
}

// SecretFromCore converts a secret certlife asks for, with cert-manager's
// annotations and labels, owned by its certificate when OwnerUID is set
// (named by the certificate-name annotation). Its type is the caller's.
func SecretFromCore(s *certificate.Secret) *corev1.Secret {
	out := &corev1.Secret{ObjectMeta: metaFromCore(s.ObjectMeta), Data: s.Data}
	out.Labels = keysFromCore(s.Labels, certificateLabels)
	out.Annotations = keysFromCore(s.Annotations, certificateKeys)
	if s.OwnerUID != "" {
		out.OwnerReferences = []metav1.OwnerReference{certificateOwner(s.Annotations[certificate.AnnotationCertificateName], s.OwnerUID)}
	}
	return out
}

// certificateOwner is the controller reference of an object a
// Certificate owns.
func certificateOwner(name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateKind, Name: name, UID: types.UID(uid),
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

func metaToCore(m *metav1.ObjectMeta) certificate.ObjectMeta {
	out := certificate.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: string(m.UID), Generation: m.Generation,
		ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp.Time,
		Labels: maps.Clone(m.Labels), Annotations: maps.Clone(m.Annotations),
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		out.OwnerUID = string(ref.UID)
	}
	return out
}

func metaFromCore(m certificate.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: types.UID(m.UID), Generation: m.Generation,
		ResourceVersion: m.ResourceVersion, Labels: maps.Clone(m.Labels), Annotations: maps.Clone(m.Annotations),
	}
	if !m.CreationTimestamp.IsZero() {
		out.CreationTimestamp = metav1.NewTime(m.CreationTimestamp)
	}
	return out
}

// issuerRefToCore fills cert-manager's defaults: kind Issuer, group
// cert-manager.io (certlife's own default group is another).
func issuerRefToCore(r cmmeta.IssuerReference) certificate.IssuerRef {
	out := certificate.IssuerRef{Name: r.Name, Kind: r.Kind, Group: r.Group}
	if out.Kind == "" {
		out.Kind = cmapi.IssuerKind
	}
	if out.Group == "" {
		out.Group = GroupName
	}
	return out
}

func issuerRefFromCore(r certificate.IssuerRef) cmmeta.IssuerReference {
	return cmmeta.IssuerReference{Name: r.Name, Kind: r.Kind, Group: r.Group}
}

func durationToCore(d *metav1.Duration) *certificate.Duration {
	if d == nil {
		return nil
	}
	return &certificate.Duration{Duration: d.Duration}
}

func durationFromCore(d *certificate.Duration) *metav1.Duration {
	if d == nil {
		return nil
	}
	return &metav1.Duration{Duration: d.Duration}
}

func usagesToCore(us []cmapi.KeyUsage) []keys.Usage {
	if us == nil {
		return nil
	}
	out := make([]keys.Usage, len(us))
	for i, u := range us {
		out[i] = keys.Usage(u)
	}
	return out
}

func usagesFromCore(us []keys.Usage) []cmapi.KeyUsage {
	if us == nil {
		return nil
	}
	out := make([]cmapi.KeyUsage, len(us))
	for i, u := range us {
		out[i] = cmapi.KeyUsage(u)
	}
	return out
}

func timeToCore(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return new(t.Time)
}

func timeOrZero(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func nilIfZero(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// timeFromCore keeps a time to the second, as the API server stores it,
// so that a status compares equal to itself after a write and a read.
func timeFromCore(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return &metav1.Time{Time: t.Truncate(time.Second)}
}

// annotationTime writes a time into an annotation, to the second; "" for
// none.
func annotationTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// annotatedTime reads a time annotationTime wrote; nil for none or one
// that does not parse.
func annotatedTime(s string) *time.Time {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		return nil
	}
	return &t
}

package operator

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/cert-manager/cert-manager/pkg/util"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationError is an annotation on an Ingress or a Gateway whose value
// the operator cannot use: the Certificates made from that resource are
// left as they are, and a Warning Event (BadConfig) says which annotation
// and value.
type AnnotationError struct {
	// Annotation is the annotation's key, Value its value.
	Annotation, Value string
	// Reason says what is wrong with the value.
	Reason string
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("annotation %s: %q %s", e.Annotation, e.Value, e.Reason)
}

// shimIssuer is the issuer the annotations name, or the default one: an
// error names the annotations that conflict, or says no issuer is named.
func shimIssuer(o ShimOptions, annotations map[string]string) (cmmeta.IssuerReference, error) {
	ref := cmmeta.IssuerReference{Name: o.DefaultIssuerName, Kind: o.DefaultIssuerKind, Group: o.DefaultIssuerGroup}
	if ref.Kind == "" {
		ref.Kind = cmapi.IssuerKind
	}
	if ref.Group == "" {
		ref.Group = GroupName
	}
	issuer, hasIssuer := annotations[cmapi.IngressIssuerNameAnnotationKey]
	cluster, hasCluster := annotations[cmapi.IngressClusterIssuerNameAnnotationKey]
	kind, hasKind := annotations[cmapi.IssuerKindAnnotationKey]
	group, hasGroup := annotations[cmapi.IssuerGroupAnnotationKey]
	var problems []string
	if hasIssuer && hasCluster {
		problems = append(problems, fmt.Sprintf("both %s and %s are set", cmapi.IngressIssuerNameAnnotationKey, cmapi.IngressClusterIssuerNameAnnotationKey))
	}
	if hasCluster && hasKind {
		problems = append(problems, fmt.Sprintf("both %s and %s are set", cmapi.IngressClusterIssuerNameAnnotationKey, cmapi.IssuerKindAnnotationKey))
	}
	if hasCluster && hasGroup {
		problems = append(problems, fmt.Sprintf("both %s and %s are set", cmapi.IngressClusterIssuerNameAnnotationKey, cmapi.IssuerGroupAnnotationKey))
	}
	switch {
	case hasCluster:
		ref.Name, ref.Kind = cluster, cmapi.ClusterIssuerKind
	case hasIssuer:
		ref.Name, ref.Kind = issuer, cmapi.IssuerKind
	}
	if hasKind {
		ref.Kind = kind
	}
	if hasGroup {
		ref.Group = group
	}
	if ref.Name == "" && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("no issuer is named: set %s or %s (or give the operator a default issuer)", cmapi.IngressIssuerNameAnnotationKey, cmapi.IngressClusterIssuerNameAnnotationKey))
	}
	if len(problems) > 0 {
		return cmmeta.IssuerReference{}, fmt.Errorf("cannot tell the issuer: %s", strings.Join(problems, "; "))
	}
	return ref, nil
}

// shimManagedAnnotations are the Certificate annotations the shims set
// from the resource's annotations, and remove when those are removed.
var shimManagedAnnotations = []string{
	cmacme.ACMECertificateHTTP01IngressNameOverride,
	cmapi.IssueTemporaryCertificateAnnotation,
	cmacme.ACMECertificateHTTP01IngressClassOverride,
	cmacme.ACMECertificateHTTP01IngressClassNameOverride,
	cmacme.ACMECertificateHTTP01ParentRefKind,
	cmacme.ACMECertificateHTTP01ParentRefName,
}

// solverAnnotations are the annotations a Certificate made from the
// resource carries for an ACME issuer's HTTP-01 solver, as the
// reference operator sets them: with edit-in-place, the Ingress to edit
// (and a temporary certificate meanwhile); an ingress class or class
// name to use instead of the issuer's; and, for a Gateway, the Gateway
// an HTTPRoute attaches to.
func solverAnnotations(kind, name string, annotations map[string]string) map[string]string {
	out := map[string]string{}
	if annotations[cmacme.IngressEditInPlaceAnnotationKey] == "true" {
		out[cmacme.ACMECertificateHTTP01IngressNameOverride] = name
		out[cmapi.IssueTemporaryCertificateAnnotation] = "true"
	}
	if v := annotations[cmapi.IngressACMEIssuerHTTP01IngressClassAnnotationKey]; v != "" {
		out[cmacme.ACMECertificateHTTP01IngressClassOverride] = v
	}
	if v := annotations[cmapi.IngressACMEIssuerHTTP01IngressClassNameAnnotationKey]; v != "" {
		out[cmacme.ACMECertificateHTTP01IngressClassNameOverride] = v
	}
	if kind == kindGateway {
		out[cmacme.ACMECertificateHTTP01ParentRefKind] = kindGateway
		out[cmacme.ACMECertificateHTTP01ParentRefName] = name
	}
	return out
}

// splitList splits a comma-separated annotation value, each item trimmed
// of spaces and empty items dropped.
func splitList(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// knownUsages are the usage names a Certificate may ask for.
var knownUsages = map[cmapi.KeyUsage]bool{}

func init() {
	for _, u := range []cmapi.KeyUsage{cmapi.UsageSigning, cmapi.UsageDigitalSignature, cmapi.UsageContentCommitment, cmapi.UsageKeyEncipherment,
		cmapi.UsageKeyAgreement, cmapi.UsageDataEncipherment, cmapi.UsageCertSign, cmapi.UsageCRLSign, cmapi.UsageEncipherOnly,
		cmapi.UsageDecipherOnly, cmapi.UsageAny, cmapi.UsageServerAuth, cmapi.UsageClientAuth, cmapi.UsageCodeSigning,
		cmapi.UsageEmailProtection, cmapi.UsageSMIME, cmapi.UsageIPsecEndSystem, cmapi.UsageIPsecTunnel, cmapi.UsageIPsecUser,
		cmapi.UsageTimestamping, cmapi.UsageOCSPSigning, cmapi.UsageMicrosoftSGC, cmapi.UsageNetscapeSGC} {
		knownUsages[u] = true
	}
}

// applyAnnotations sets on spec what the resource's annotations ask for,
// as the reference operator reads them; the first value it cannot use is
// an *AnnotationError.
func applyAnnotations(spec *cmapi.CertificateSpec, a map[string]string) error {
	bad := func(key, reason string, args ...any) error {
		return &AnnotationError{Annotation: key, Value: a[key], Reason: fmt.Sprintf(reason, args...)}
	}
	if v, ok := a[cmapi.CommonNameAnnotationKey]; ok {
		spec.CommonName = v
	}
	if v := a[cmapi.AltNamesAnnotationKey]; v != "" {
		spec.DNSNames = append(spec.DNSNames, splitList(v)...)
	}
	if v := a[cmapi.IPSANAnnotationKey]; v != "" {
		for _, ip := range splitList(v) {
			if net.ParseIP(ip) == nil {
				return bad(cmapi.IPSANAnnotationKey, "lists %q, which is not an IP address", ip)
			}
			spec.IPAddresses = append(spec.IPAddresses, ip)
		}
	}
	if v, ok := a[cmapi.EmailsAnnotationKey]; ok {
		spec.EmailAddresses = splitList(v)
	}

	var subject cmapi.X509Subject
	for _, f := range []struct {
		key string
		to  *[]string
	}{
		{cmapi.SubjectOrganizationsAnnotationKey, &subject.Organizations},
		{cmapi.SubjectOrganizationalUnitsAnnotationKey, &subject.OrganizationalUnits},
		{cmapi.SubjectCountriesAnnotationKey, &subject.Countries},
		{cmapi.SubjectProvincesAnnotationKey, &subject.Provinces},
		{cmapi.SubjectLocalitiesAnnotationKey, &subject.Localities},
		{cmapi.SubjectPostalCodesAnnotationKey, &subject.PostalCodes},
		{cmapi.SubjectStreetAddressesAnnotationKey, &subject.StreetAddresses},
	} {
		v, ok := a[f.key]
		if !ok {
			continue
		}
		// A comma-separated list in CSV's quoting: "Acme, Inc.",Other.
		items, err := util.SplitWithEscapeCSV(v)
		if err != nil {
			return bad(f.key, "is not a comma-separated list (quote an item holding a comma): %v", err)
		}
		*f.to = items
	}
	if v, ok := a[cmapi.SubjectSerialNumberAnnotationKey]; ok {
		subject.SerialNumber = v
	}
	if !subjectEmpty(&subject) {
		spec.Subject = &subject
	}

	for _, f := range []struct {
		key string
		to  **metav1.Duration
	}{{cmapi.DurationAnnotationKey, &spec.Duration}, {cmapi.RenewBeforeAnnotationKey, &spec.RenewBefore}} {
		v, ok := a[f.key]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return bad(f.key, "is not a duration such as 2160h")
		}
		*f.to = &metav1.Duration{Duration: d}
	}
	if v, ok := a[cmapi.RenewBeforePercentageAnnotationKey]; ok {
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return bad(cmapi.RenewBeforePercentageAnnotationKey, "is not a whole number")
		}
		spec.RenewBeforePercentage = new(int32(p))
	}
	if v, ok := a[cmapi.UsagesAnnotationKey]; ok {
		var usages []cmapi.KeyUsage
		for s := range strings.SplitSeq(v, ",") {
			u := cmapi.KeyUsage(strings.TrimSpace(s))
			if !knownUsages[u] {
				return bad(cmapi.UsagesAnnotationKey, "lists %q, which is not a key usage", string(u))
			}
			usages = append(usages, u)
		}
		spec.Usages = usages
	}
	if v, ok := a[cmapi.RevisionHistoryLimitAnnotationKey]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return bad(cmapi.RevisionHistoryLimitAnnotationKey, "is not a whole number of at least 1")
		}
		spec.RevisionHistoryLimit = new(int32(n))
	}

	key := func() *cmapi.CertificatePrivateKey {
		if spec.PrivateKey == nil {
			spec.PrivateKey = &cmapi.CertificatePrivateKey{}
		}
		return spec.PrivateKey
	}
	if v, ok := a[cmapi.PrivateKeyAlgorithmAnnotationKey]; ok {
		switch alg := cmapi.PrivateKeyAlgorithm(v); alg {
		case cmapi.RSAKeyAlgorithm, cmapi.ECDSAKeyAlgorithm, cmapi.Ed25519KeyAlgorithm:
			key().Algorithm = alg
		default:
			return bad(cmapi.PrivateKeyAlgorithmAnnotationKey, "is not a key algorithm: RSA, ECDSA or Ed25519")
		}
	}
	if v, ok := a[cmapi.PrivateKeyEncodingAnnotationKey]; ok {
		switch enc := cmapi.PrivateKeyEncoding(v); enc {
		case cmapi.PKCS1, cmapi.PKCS8:
			key().Encoding = enc
		default:
			return bad(cmapi.PrivateKeyEncodingAnnotationKey, "is not a key encoding: PKCS1 or PKCS8")
		}
	}
	if v, ok := a[cmapi.PrivateKeySizeAnnotationKey]; ok {
		size, err := strconv.Atoi(v)
		if err != nil {
			return bad(cmapi.PrivateKeySizeAnnotationKey, "is not a whole number")
		}
		alg := cmapi.RSAKeyAlgorithm // the default algorithm
		if spec.PrivateKey != nil && spec.PrivateKey.Algorithm != "" {
			alg = spec.PrivateKey.Algorithm
		}
		switch {
		case alg == cmapi.RSAKeyAlgorithm && (size < 2048 || size > 8192):
			return bad(cmapi.PrivateKeySizeAnnotationKey, "is not an RSA key size (2048 to 8192)")
		case alg == cmapi.ECDSAKeyAlgorithm && size != 256 && size != 384 && size != 521:
			return bad(cmapi.PrivateKeySizeAnnotationKey, "is not an ECDSA key size (256, 384 or 521)")
		}
		key().Size = size
	}
	if v, ok := a[cmapi.PrivateKeyRotationPolicyAnnotationKey]; ok {
		switch p := cmapi.PrivateKeyRotationPolicy(v); p {
		case cmapi.RotationPolicyNever, cmapi.RotationPolicyAlways:
			key().RotationPolicy = p
		default:
			return bad(cmapi.PrivateKeyRotationPolicyAnnotationKey, "is not a rotation policy: Never or Always")
		}
	}
	if v, ok := a[cmapi.IngressSecretTemplate]; ok {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		var t cmapi.CertificateSecretTemplate
		if err := dec.Decode(&t); err != nil {
			return bad(cmapi.IngressSecretTemplate, "is not a secret template ({\"labels\": {…}, \"annotations\": {…}}): %v", err)
		}
		for k := range t.Annotations {
			if strings.HasPrefix(k, "cert-manager.io/") {
				return bad(cmapi.IngressSecretTemplate, "sets annotation %s: a secret template may not set cert-manager.io/ annotations", k)
			}
		}
		if len(t.Annotations) > 0 || len(t.Labels) > 0 {
			spec.SecretTemplate = &t
		}
	}
	return nil
}

func subjectEmpty(s *cmapi.X509Subject) bool {
	return len(s.Organizations) == 0 && len(s.OrganizationalUnits) == 0 && len(s.Countries) == 0 && len(s.Provinces) == 0 &&
		len(s.Localities) == 0 && len(s.PostalCodes) == 0 && len(s.StreetAddresses) == 0 && s.SerialNumber == ""
}

// splitHosts splits a TLS entry's hosts into DNS names and IP addresses,
// each once, in order.
func splitHosts(hosts []string) (dnsNames, ips []string) {
	seen := map[string]bool{}
	for _, h := range hosts {
		if seen[h] {
			continue
		}
		seen[h] = true
		if net.ParseIP(h) != nil {
			ips = append(ips, h)
		} else {
			dnsNames = append(dnsNames, h)
		}
	}
	return dnsNames, ips
}

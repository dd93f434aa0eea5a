package certificate

import (
	"crypto/x509"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/certlife/certlife/keys"
)

// secretMetadata is the labels and annotations certlife writes on a
// certificate's secret for the leaf it holds: secretTemplate's labels and
// annotations, and certlife's own annotations (the certificate, the
// issuer, the certificate's details), which win over the template's.
func secretMetadata(c *Certificate, leaf *x509.Certificate) (labels, annotations map[string]string) {
	ref := c.Spec.IssuerRef.WithDefaults()
	annotations = map[string]string{
		AnnotationCertificateName: c.Name,
		AnnotationIssuerName:      ref.Name, AnnotationIssuerKind: ref.Kind, AnnotationIssuerGroup: ref.Group,
	}
	if leaf != nil {
		annotations[AnnotationCommonName] = leaf.Subject.CommonName
		annotations[AnnotationAltNames] = strings.Join(leaf.DNSNames, ",")
		annotations[AnnotationIPSANs] = strings.Join(ipStrings(leaf.IPAddresses), ",")
		annotations[AnnotationURISANs] = strings.Join(uriStrings(leaf.URIs), ",")
		annotations[AnnotationEmailSANs] = strings.Join(leaf.EmailAddresses, ",")
	}
	if t := c.Spec.SecretTemplate; t != nil {
		labels = maps.Clone(t.Labels)
		for k, v := range t.Annotations {
			if _, ours := annotations[k]; !ours {
				annotations[k] = v
			}
		}
	}
	return labels, annotations
}

// secretDrift lists how the secret differs from what the spec asks around
// the certificate it holds: labels and annotations (what secretMetadata
// writes), and its data beside tls.crt (keys.DataMismatches). Nil when it
// does not, and when there is nothing to judge by: no secret, no usable key
// pair (the trigger re-issues then), or an invalid spec. Labels and
// annotations the secret has beyond those are its own business and never
// drift.
//
// It compares in place, without building secretMetadata's maps, for it runs
// on every pass; TestSecretDriftAgreesWithSecretMetadata holds the two
// together.
func secretDrift(p *pass) []string {
	if p.secret == nil || p.specErr != nil || p.parsed == nil || p.parsed.Leaf == nil || !p.parsed.KeyMatches {
		return nil
	}
	c, leaf, sec := p.cert, p.parsed.Leaf, p.secret
	var drift []string
	ref := c.Spec.IssuerRef.WithDefaults()
	// certlife's annotations, in the order of their keys.
	drift = annotationDrift(drift, sec.Annotations, AnnotationAltNames, leaf.DNSNames, nil)
	drift = annotationDrift(drift, sec.Annotations, AnnotationCertificateName, nil, &c.Name)
	drift = annotationDrift(drift, sec.Annotations, AnnotationCommonName, nil, &leaf.Subject.CommonName)
	drift = annotationDrift(drift, sec.Annotations, AnnotationEmailSANs, leaf.EmailAddresses, nil)
	if len(leaf.IPAddresses) > 0 {
		drift = annotationDrift(drift, sec.Annotations, AnnotationIPSANs, ipStrings(leaf.IPAddresses), nil)
	} else {
		drift = annotationDrift(drift, sec.Annotations, AnnotationIPSANs, nil, nil)
	}
	drift = annotationDrift(drift, sec.Annotations, AnnotationIssuerGroup, nil, &ref.Group)
	drift = annotationDrift(drift, sec.Annotations, AnnotationIssuerKind, nil, &ref.Kind)
	drift = annotationDrift(drift, sec.Annotations, AnnotationIssuerName, nil, &ref.Name)
	if len(leaf.URIs) > 0 {
		drift = annotationDrift(drift, sec.Annotations, AnnotationURISANs, uriStrings(leaf.URIs), nil)
	} else {
		drift = annotationDrift(drift, sec.Annotations, AnnotationURISANs, nil, nil)
	}
	if t := c.Spec.SecretTemplate; t != nil {
		drift = templateDrift(drift, "label", sec.Labels, t.Labels, nil)
		drift = templateDrift(drift, "annotation", sec.Annotations, t.Annotations, isCertlifeAnnotation)
	}
	return append(drift, keys.DataMismatches(sec.Data, p.parsed, outputSpec(&c.Spec))...)
}

// annotationDrift checks one of certlife's annotations: want is one value
// when set, else the list joined with commas.
func annotationDrift(drift []string, have map[string]string, key string, list []string, want *string) []string {
	v, ok := have[key]
	switch {
	case !ok:
		return append(drift, "annotation "+key+" is missing")
	case want != nil && v == *want:
		return drift
	case want == nil && joinedEqual(v, list):
		return drift
	}
	w := strings.Join(list, ",")
	if want != nil {
		w = *want
	}
	return append(drift, "annotation "+key+" is "+quote(v)+", not "+quote(w))
}

// joinedEqual reports whether s is parts joined with commas.
func joinedEqual(s string, parts []string) bool {
	for i, p := range parts {
		if i > 0 {
			if s == "" || s[0] != ',' {
				return false
			}
			s = s[1:]
		}
		if !strings.HasPrefix(s, p) {
			return false
		}
		s = s[len(p):]
	}
	return s == ""
}

// templateDrift checks the secretTemplate's labels or annotations, in the
// order of their keys, skipping those skip names.
func templateDrift(drift []string, kind string, have, want map[string]string, skip func(string) bool) []string {
	var bad []string
	for k, v := range want {
		if skip != nil && skip(k) {
			continue
		}
		if h, ok := have[k]; !ok || h != v {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	for _, k := range bad {
		if h, ok := have[k]; !ok {
			drift = append(drift, kind+" "+k+" is missing")
		} else {
			drift = append(drift, kind+" "+k+" is "+quote(h)+", not "+quote(want[k]))
		}
	}
	return drift
}

func isCertlifeAnnotation(k string) bool {
	switch k {
	case AnnotationCertificateName, AnnotationIssuerName, AnnotationIssuerKind, AnnotationIssuerGroup,
		AnnotationCommonName, AnnotationAltNames, AnnotationIPSANs, AnnotationURISANs, AnnotationEmailSANs:
		return true
	}
	return false
}

func ipStrings(ips []net.IP) []string { return mapStrings(ips, net.IP.String) }

func uriStrings(us []*url.URL) []string { return mapStrings(us, (*url.URL).String) }

func mapStrings[T any](vs []T, str func(T) string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = str(v)
	}
	return out
}

func quote(s string) string { return `"` + s + `"` }

// outputSpec is what the spec asks the secret's data to hold.
func outputSpec(s *Spec) keys.OutputSpec {
	out := keys.OutputSpec{KeyEncoding: s.KeySpec().Encoding}
	for _, f := range s.AdditionalOutputFormats {
		switch f {
		case OutputCombinedPEM:
			out.CombinedPEM = true
		case OutputDER:
			out.DER = true
		}
	}
	if k := s.Keystores; k != nil {
		out.PKCS12, out.JKS = k.PKCS12, k.JKS
	}
	return out
}

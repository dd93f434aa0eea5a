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
	return secretMetadataBy(c, leaf, c.Spec.IssuerRef.WithDefaults())
}

// secretMetadataBy is secretMetadata for a certificate issued by ref, one
// of the spec's issuers.
func secretMetadataBy(c *Certificate, leaf *x509.Certificate, ref IssuerRef) (labels, annotations map[string]string) {
	annotations = make(map[string]string, 9)
	certlifeAnnotations(c, leaf, ref, func(k, v string) bool {
		annotations[k] = v
		return true
	})
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

// certlifeAnnotations gives each annotation certlife writes on the secret
// of c issued by ref to put, in turn, while put returns true; it reports
// whether put returned true for all. Those of the leaf's details come
// only with a leaf.
func certlifeAnnotations(c *Certificate, leaf *x509.Certificate, ref IssuerRef, put func(k, v string) bool) bool {
	if !put(AnnotationCertificateName, c.Name) || !put(AnnotationIssuerName, ref.Name) ||
		!put(AnnotationIssuerKind, ref.Kind) || !put(AnnotationIssuerGroup, ref.Group) {
		return false
	}
	return leaf == nil || put(AnnotationCommonName, leaf.Subject.CommonName) &&
		put(AnnotationAltNames, strings.Join(leaf.DNSNames, ",")) &&
		put(AnnotationIPSANs, strings.Join(ipStrings(leaf.IPAddresses), ",")) &&
		put(AnnotationURISANs, strings.Join(uriStrings(leaf.URIs), ",")) &&
		put(AnnotationEmailSANs, strings.Join(leaf.EmailAddresses, ","))
}

// secretDrift lists how the secret differs from what the spec asks around
// the certificate it holds: labels and annotations (what secretMetadata
// writes), and its data beside tls.crt (keys.DataMismatches). Nil when it
// does not, and when there is nothing to judge by: no secret, no usable key
// pair (the trigger re-issues then), or an invalid spec. Labels and
// annotations the secret has beyond those are its own business and never
// drift. certlife's own annotations come first, then the secretTemplate's
// labels and annotations, each in the order of their keys.
func secretDrift(p *pass) []string {
	if p.secret == nil || p.specErr != nil || p.parsed == nil || p.parsed.Leaf == nil || !p.parsed.KeyMatches {
		return nil
	}
	c, sec := p.cert, p.secret
	var drift []string
	if ref := p.issuedBy(); !metadataInPlace(c, p.parsed.Leaf, ref, sec) {
		labels, annotations := secretMetadataBy(c, p.parsed.Leaf, ref)
		drift = metadataDrift(nil, "annotation", sec.Annotations, annotations, isCertlifeAnnotation)
		drift = metadataDrift(drift, "label", sec.Labels, labels, nil)
		drift = metadataDrift(drift, "annotation", sec.Annotations, annotations, func(k string) bool { return !isCertlifeAnnotation(k) })
	}
	return append(drift, keys.DataMismatches(sec.Data, p.parsed, outputSpec(&c.Spec))...)
}

// metadataInPlace reports whether sec carries every label and annotation
// secretMetadataBy(c, leaf, ref) gives, with the same values: what
// secretDrift finds no metadata drift for, checked without building the
// maps, since nearly every pass finds none. leaf is not nil.
func metadataInPlace(c *Certificate, leaf *x509.Certificate, ref IssuerRef, sec *Secret) bool {
	a := sec.Annotations
	if !certlifeAnnotations(c, leaf, ref, func(k, v string) bool { return holds(a, k, v) }) {
		return false
	}
	if t := c.Spec.SecretTemplate; t != nil {
		for k, v := range t.Labels {
			if !holds(sec.Labels, k, v) {
				return false
			}
		}
		for k, v := range t.Annotations {
			// certlife's own win over the template's (secretMetadataBy):
			// with a leaf, every certlife annotation is one of them.
			if !isCertlifeAnnotation(k) && !holds(a, k, v) {
				return false
			}
		}
	}
	return true
}

func holds(m map[string]string, k, v string) bool {
	h, ok := m[k]
	return ok && h == v
}

// metadataDrift names, in the order of their keys, the entries of want
// that have lacks or holds with another value, among those only accepts
// (all when only is nil).
func metadataDrift(drift []string, kind string, have, want map[string]string, only func(string) bool) []string {
	var bad []string
	for k, v := range want {
		if only != nil && !only(k) {
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

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
		annotations[AnnotationIPSANs] = joinStrings(leaf.IPAddresses, net.IP.String)
		annotations[AnnotationURISANs] = joinStrings(leaf.URIs, (*url.URL).String)
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

func joinStrings[T any](vs []T, str func(T) string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = str(v)
	}
	return strings.Join(parts, ",")
}

// secretDrift lists how the secret differs from what the spec asks around
// the certificate it holds: labels and annotations (secretMetadata), and
// its data beside tls.crt (keys.DataMismatches). Nil when it does not, and
// when there is nothing to judge by: no secret, no usable key pair (the
// trigger re-issues then), or an invalid spec. Labels and annotations the
// secret has beyond those are its own business and never drift.
func secretDrift(p *pass) []string {
	if p.secret == nil || p.specErr != nil || p.parsed == nil || p.parsed.Leaf == nil || !p.parsed.KeyMatches {
		return nil
	}
	labels, annotations := secretMetadata(p.cert, p.parsed.Leaf)
	var drift []string
	drift = metadataDrift(drift, "label", p.secret.Labels, labels)
	drift = metadataDrift(drift, "annotation", p.secret.Annotations, annotations)
	return append(drift, keys.DataMismatches(p.secret.Data, p.parsed, outputSpec(&p.cert.Spec))...)
}

func metadataDrift(drift []string, kind string, have, want map[string]string) []string {
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v, ok := have[k]
		switch {
		case !ok:
			drift = append(drift, kind+" "+k+" is missing")
		case v != want[k]:
			drift = append(drift, kind+" "+k+" is "+quote(v)+", not "+quote(want[k]))
		}
	}
	return drift
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

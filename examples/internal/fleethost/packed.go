package fleethost

import (
	"slices"
	"strings"

	"github.com/certlife/certlife/certificate"
)

// Packed forms of the objects the stores hold. A Kubernetes-shaped object
// keeps its labels, annotations and data in small maps, and a Go map of a
// few entries costs 300–400 bytes; held as sorted pairs the same entries
// cost 32–40 bytes each. Secrets and requests are held packed (a secret
// drops from about 880 bytes to 470 without its PEM, a request from about
// 780 to 570); certificates are held as they are, since their maps are
// usually empty. Reads unpack: a few hundred nanoseconds per object.
//
// As with the clones, byte slices are shared: nothing in the host changes
// one in place.

type pair struct{ k, v string }

type bytesPair struct {
	k string
	v []byte
}

// packedMeta is ObjectMeta with its maps as pairs (Labels and Annotations
// are nil in meta).
type packedMeta struct {
	meta                certificate.ObjectMeta
	labels, annotations []pair
}

type packedSecret struct {
	packedMeta
	data []bytesPair
}

type packedRequest struct {
	packedMeta
	spec   certificate.RequestSpec
	status certificate.RequestStatus
}

func packMeta(m certificate.ObjectMeta) packedMeta {
	p := packedMeta{meta: m, labels: packMap(m.Labels), annotations: packMap(m.Annotations)}
	p.meta.Labels, p.meta.Annotations = nil, nil
	return p
}

func (p *packedMeta) unpack() certificate.ObjectMeta {
	m := p.meta
	m.Labels, m.Annotations = unpackMap(p.labels), unpackMap(p.annotations)
	return m
}

func packSecret(s *certificate.Secret) *packedSecret {
	if s == nil {
		return nil
	}
	p := &packedSecret{packedMeta: packMeta(s.ObjectMeta)}
	if s.Data != nil {
		p.data = make([]bytesPair, 0, len(s.Data))
		for k, v := range s.Data {
			p.data = append(p.data, bytesPair{k, v})
		}
		slices.SortFunc(p.data, func(a, b bytesPair) int { return strings.Compare(a.k, b.k) })
	}
	return p
}

func unpackSecret(p *packedSecret) *certificate.Secret {
	if p == nil {
		return nil
	}
	s := &certificate.Secret{ObjectMeta: p.unpack()}
	if p.data != nil {
		s.Data = make(map[string][]byte, len(p.data))
		for _, e := range p.data {
			s.Data[e.k] = e.v
		}
	}
	return s
}

func packRequest(r *certificate.CertificateRequest) *packedRequest {
	if r == nil {
		return nil
	}
	p := &packedRequest{packedMeta: packMeta(r.ObjectMeta), spec: r.Spec, status: r.Status}
	p.status.Conditions = append([]certificate.Condition(nil), r.Status.Conditions...)
	return p
}

func unpackRequest(p *packedRequest) *certificate.CertificateRequest {
	if p == nil {
		return nil
	}
	r := &certificate.CertificateRequest{ObjectMeta: p.unpack(), Spec: p.spec, Status: p.status}
	r.Status.Conditions = append([]certificate.Condition(nil), p.status.Conditions...)
	return r
}

func packMap(m map[string]string) []pair {
	if m == nil {
		return nil
	}
	out := make([]pair, 0, len(m))
	for k, v := range m {
		out = append(out, pair{k, v})
	}
	slices.SortFunc(out, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	return out
}

func unpackMap(p []pair) map[string]string {
	if p == nil {
		return nil
	}
	m := make(map[string]string, len(p))
	for _, e := range p {
		m[e.k] = e.v
	}
	return m
}

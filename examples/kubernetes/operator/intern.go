package operator

import (
	"bytes"
	"crypto/sha256"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/keys"
)

// interner lets cached objects share equal byte strings and strings:
// every Secret and request of one CA carries the same CA certificate
// (ca.crt, status.ca), a request's status.certificate is its Secret's
// tls.crt, and every object repeats the same label and annotation keys.
// Decoded separately, each copy is its own allocation; shared, one.
//
// Shared data is never written: the cache hands out deep copies, and the
// operator's transforms only replace a field with an equal value.
type interner struct {
	mu    sync.Mutex
	bytes map[[sha256.Size]byte]sharedBytes
	strs  map[string]string
}

// sharedBytes is a canonical byte string, held weakly: it goes when the
// last object holding it goes.
type sharedBytes struct {
	p weak.Pointer[byte]
	n int
}

// minSharedBytes: shorter byte strings are not worth a table entry.
const minSharedBytes = 128

// maxSharedStrings bounds the string table; strings past it are left as
// they are.
const maxSharedStrings = 4096

func newInterner() *interner {
	return &interner{bytes: map[[sha256.Size]byte]sharedBytes{}, strs: map[string]string{}}
}

// shareBytes returns the canonical copy of b.
func (in *interner) shareBytes(b []byte) []byte {
	if len(b) < minSharedBytes {
		return b
	}
	sum := sha256.Sum256(b)
	in.mu.Lock()
	defer in.mu.Unlock()
	if e, ok := in.bytes[sum]; ok {
		if p := e.p.Value(); p != nil && e.n == len(b) {
			if c := unsafe.Slice(p, e.n); bytes.Equal(c, b) {
				return c
			}
		}
	}
	c := bytes.Clone(b) // its own allocation, starting at &c[0]
	in.bytes[sum] = sharedBytes{p: weak.Make(&c[0]), n: len(c)}
	runtime.AddCleanup(&c[0], in.forget, sum)
	return c
}

// forget drops a table entry whose byte string is gone.
func (in *interner) forget(sum [sha256.Size]byte) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if e, ok := in.bytes[sum]; ok && e.p.Value() == nil {
		delete(in.bytes, sum)
	}
}

// str returns the canonical copy of s.
func (in *interner) str(s string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.strs[s]; ok {
		return c
	}
	if len(in.strs) < maxSharedStrings {
		in.strs[s] = s
	}
	return s
}

// strMap shares a map's keys, and its values when values is true.
func (in *interner) strMap(m map[string]string, values bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = in.str(v)
		}
		out[in.str(k)] = v
	}
	return out
}

// meta shares an object's namespace, label and annotation keys, label
// values, and owner references' API versions and kinds.
func (in *interner) meta(m *metav1.ObjectMeta) {
	m.Namespace = in.str(m.Namespace)
	m.Labels = in.strMap(m.Labels, true)
	m.Annotations = in.strMap(m.Annotations, false)
	for i := range m.OwnerReferences {
		m.OwnerReferences[i].APIVersion = in.str(m.OwnerReferences[i].APIVersion)
		m.OwnerReferences[i].Kind = in.str(m.OwnerReferences[i].Kind)
	}
}

func (in *interner) certificateConditions(cs []cmapi.CertificateCondition) {
	for i := range cs {
		cs[i].Type, cs[i].Reason = cmapi.CertificateConditionType(in.str(string(cs[i].Type))), in.str(cs[i].Reason)
	}
}

func (in *interner) requestConditions(cs []cmapi.CertificateRequestCondition) {
	for i := range cs {
		cs[i].Type, cs[i].Reason = cmapi.CertificateRequestConditionType(in.str(string(cs[i].Type))), in.str(cs[i].Reason)
		cs[i].Message = in.str(cs[i].Message)
	}
}

// transform is the cache transform: strips what no decision reads (see
// stripMetadata) and shares what the objects repeat.
func (in *interner) transform(obj any) (any, error) {
	obj, _ = stripMetadata(obj)
	switch o := obj.(type) {
	case *corev1.Secret:
		in.meta(&o.ObjectMeta)
		for _, k := range []string{keys.SecretCertificate, keys.SecretCA} {
			if b, ok := o.Data[k]; ok {
				o.Data[k] = in.shareBytes(b)
			}
		}
	case *cmapi.CertificateRequest:
		in.meta(&o.ObjectMeta)
		o.Status.Certificate = in.shareBytes(o.Status.Certificate)
		o.Status.CA = in.shareBytes(o.Status.CA)
		in.requestConditions(o.Status.Conditions)
	case *cmapi.Certificate:
		in.meta(&o.ObjectMeta)
		in.certificateConditions(o.Status.Conditions)
	}
	return obj, nil
}

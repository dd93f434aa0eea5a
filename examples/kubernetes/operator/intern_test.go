package operator

import (
	"bytes"
	"runtime"
	"testing"
	"time"
	"unsafe"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/keys"
)

// The cache transform replaces fields only with equal values, and equal
// certificates in a Secret and its request end up in one allocation.
func TestTransformSharesEqualValues(t *testing.T) {
	ca := bytes.Repeat([]byte("C"), 600)
	chain := bytes.Repeat([]byte("L"), 700)
	in := newInterner()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{LabelManaged: "true"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}},
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "a": "b"}},
		Data: map[string][]byte{keys.SecretCertificate: bytes.Clone(chain), keys.SecretCA: bytes.Clone(ca), keys.SecretPrivateKey: []byte("key")}}
	r := &cmapi.CertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
		Status: cmapi.CertificateRequestStatus{Certificate: bytes.Clone(chain), CA: bytes.Clone(ca)}}
	want := s.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, corev1.LastAppliedConfigAnnotation)

	_, err := in.transform(s)
	require.NoError(t, err)
	_, err = in.transform(r)
	require.NoError(t, err)
	assert.Equal(t, want, s, "only equal values replace the fields")
	assert.Equal(t, chain, r.Status.Certificate)
	assert.Same(t, unsafe.SliceData(s.Data[keys.SecretCertificate]), unsafe.SliceData(r.Status.Certificate), "one chain")
	assert.Same(t, unsafe.SliceData(s.Data[keys.SecretCA]), unsafe.SliceData(r.Status.CA), "one CA")

	other := bytes.Repeat([]byte("D"), 600)
	assert.NotSame(t, unsafe.SliceData(in.shareBytes(other)), unsafe.SliceData(s.Data[keys.SecretCA]), "different bytes are not shared")
	short := []byte("short")
	assert.Same(t, unsafe.SliceData(short), unsafe.SliceData(in.shareBytes(short)), "short byte strings are left as they are")
}

// A shared byte string goes when its last holder goes, and its table
// entry with it.
func TestSharedBytesAreFreed(t *testing.T) {
	in := newInterner()
	b := in.shareBytes(bytes.Repeat([]byte("x"), 1000))
	require.Len(t, in.bytes, 1)
	runtime.KeepAlive(b)
	b = nil
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		in.mu.Lock()
		n := len(in.bytes)
		in.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the table entry of a freed byte string was not removed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := in.shareBytes(bytes.Repeat([]byte("x"), 1000))
	assert.Equal(t, bytes.Repeat([]byte("x"), 1000), c, "a byte string shared again after its first copy went")
}

package fleethost

import (
	"crypto/rand"
	"reflect"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fill sets every field reachable from v to a non-zero value, so that a
// field the packed forms forget (one added to ObjectMeta later, say) shows
// as a difference after a round trip.
func fill(t *testing.T, v reflect.Value, depth int) {
	t.Helper()
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(t, v.Index(i), depth+1)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for _, k := range []string{"a", "b", "c"} {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(t, e, depth+1)
			v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2027, 1, 2, 3, 4, 5, 6, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth+1)
			}
		}
	case reflect.Interface, reflect.Func, reflect.Chan:
		// none in these types
	default:
		t.Fatalf("fill: unhandled kind %s", v.Kind())
	}
}

func TestPackedRoundTrip(t *testing.T) {
	var sec certificate.Secret
	fill(t, reflect.ValueOf(&sec).Elem(), 0)
	assert.Equal(t, &sec, unpackSecret(packSecret(&sec)), "secret round trip")
	var req certificate.CertificateRequest
	fill(t, reflect.ValueOf(&req).Elem(), 0)
	assert.Equal(t, &req, unpackRequest(packRequest(&req)), "request round trip")
	// nil maps stay nil, empty maps stay empty.
	empty := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: "e", Annotations: map[string]string{}}, Data: map[string][]byte{}}
	if got := unpackSecret(packSecret(empty)); assert.Equal(t, empty, got, "empty and nil maps") {
		assert.Nil(t, got.Labels, "nil labels did not stay nil")
	}
	assert.Nil(t, unpackSecret(packSecret(nil)), "a nil secret did not stay nil")
	assert.Nil(t, unpackRequest(packRequest(nil)), "a nil request did not stay nil")
}

// A packed store's reads are the caller's: changing one changes neither
// the store nor other reads, and writes are not aliased either.
func TestPackedStoreReadsAreCopies(t *testing.T) {
	h, err := New(Options{Clock: testingclock.NewFakePassiveClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)), Rand: rand.Reader})
	require.NoError(t, err)
	in := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: "s", Annotations: map[string]string{"k": "v"}},
		Data: map[string][]byte{"tls.crt": []byte("x")}}
	_, err = h.Secrets.Create("s", in)
	require.NoError(t, err)
	in.Annotations["k"] = "changed by the writer"
	a, _, _ := h.Secrets.Peek("s")
	a.Annotations["k"] = "changed by a reader"
	a.Data["tls.key"] = []byte("y")
	b, _, _ := h.Secrets.Get("s")
	require.Equal(t, "v", b.Annotations["k"], "store changed through a write or a read: %+v", b)
	require.Len(t, b.Data, 1, "store changed through a write or a read: %+v", b)
}

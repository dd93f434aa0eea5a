package host

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/certlife/certlife/certificate"
)

// A copy equals its original and shares nothing with it: changing any
// slice, map or pointer of the copy leaves the original as it was.
func TestCopyRequestSharesNothing(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "web-1", Labels: map[string]string{"a": "b"}},
		Spec:   certificate.RequestSpec{Request: []byte("csr")},
		Status: certificate.RequestStatus{Certificate: []byte("crt"), FailureTime: &when, Conditions: []certificate.Condition{{Type: "Ready", Status: "False"}}}}
	rc := copyRequest(r)
	if !reflect.DeepEqual(r, rc) {
		t.Fatalf("the copy differs: %+v", rc)
	}
	rc.Labels["a"] = "changed"
	rc.Spec.Request[0], rc.Status.Certificate[0] = 'X', 'X'
	*rc.Status.FailureTime = time.Time{}
	rc.Status.Conditions[0].Status = "True"
	if r.Labels["a"] != "b" || string(r.Spec.Request) != "csr" || string(r.Status.Certificate) != "crt" || !r.Status.FailureTime.Equal(when) || r.Status.Conditions[0].Status != "False" {
		t.Errorf("changing the copy changed the original: %+v", r)
	}
	if copyRequest(nil) != nil {
		t.Errorf("the copy of nil is not nil")
	}
}

// Every field of a request, filled: the copy equals the original and no
// pointer, slice or map of it is the original's. A field added to a
// request and forgotten by copyRequest fails here.
func TestCopyRequestCopiesEveryField(t *testing.T) {
	obj := &certificate.CertificateRequest{}
	v := reflect.ValueOf(obj)
	fill(v.Elem(), 0)
	cp := copyRequest(obj)
	if !reflect.DeepEqual(obj, cp) {
		t.Errorf("the copy differs from the original:\n%+v\n%+v", obj, cp)
	}
	for _, path := range shared(v.Elem(), reflect.ValueOf(cp).Elem(), "CertificateRequest") {
		t.Errorf("the copy shares %s with the original", path)
	}
}

// fill sets every exported field reachable from v to a non-zero value.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	}
}

// shared lists the paths at which a and b hold the same pointer, slice
// backing array or map.
func shared(a, b reflect.Value, path string) []string {
	var out []string
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			return []string{path}
		}
		return shared(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() == 0 || b.Len() == 0 {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			return []string{path}
		}
		for i := range min(a.Len(), b.Len()) {
			out = append(out, shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			return []string{path}
		}
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); bv.IsValid() {
				out = append(out, shared(a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k))...)
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				out = append(out, shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)...)
			}
		}
	}
	return out
}

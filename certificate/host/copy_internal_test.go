package host

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/certlife/certlife/certificate"
)

// A deep copy equals its original and shares nothing with it: changing
// any slice, map or pointer of the copy leaves the original as it was.
func TestDeepCopySharesNothing(t *testing.T) {
	rev := 3
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Labels: map[string]string{"a": "b"}},
		Spec:       certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example"}, Duration: &certificate.Duration{Duration: time.Hour}},
		Status: certificate.Status{Revision: &rev, NotAfter: &when,
			Conditions: []certificate.Condition{{Type: "Ready", Status: "True", LastTransitionTime: when}}},
	}
	cp := deepCopy(c)
	if !reflect.DeepEqual(c, cp) {
		t.Fatalf("the copy differs: %+v", cp)
	}
	cp.Labels["a"] = "changed"
	cp.Spec.DNSNames[0] = "changed"
	cp.Spec.Duration.Duration = 0
	*cp.Status.Revision = 9
	cp.Status.Conditions[0].Status = "False"
	*cp.Status.NotAfter = time.Time{}
	if c.Labels["a"] != "b" || c.Spec.DNSNames[0] != "web.example" || c.Spec.Duration.Duration != time.Hour ||
		*c.Status.Revision != 3 || c.Status.Conditions[0].Status != "True" || !c.Status.NotAfter.Equal(when) {
		t.Errorf("changing the copy changed the original: %+v", c)
	}

	s := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: "web-tls"}, Data: map[string][]byte{"tls.key": []byte("key")}}
	sc := deepCopy(s)
	sc.Data["tls.key"][0] = 'X'
	if string(s.Data["tls.key"]) != "key" {
		t.Errorf("changing the copy's data changed the original's: %q", s.Data["tls.key"])
	}

	r := &certificate.CertificateRequest{Spec: certificate.RequestSpec{Request: []byte("csr")},
		Status: certificate.RequestStatus{Certificate: []byte("crt"), FailureTime: &when}}
	rc := deepCopy(r)
	rc.Spec.Request[0], rc.Status.Certificate[0] = 'X', 'X'
	*rc.Status.FailureTime = time.Time{}
	if string(r.Spec.Request) != "csr" || string(r.Status.Certificate) != "crt" || !r.Status.FailureTime.Equal(when) {
		t.Errorf("changing the copy changed the original: %+v", r)
	}
}

// Every field of each kind, filled: the copy equals the original and no
// pointer, slice or map of it is the original's. A field added to a kind
// and forgotten by deepCopy fails here.
func TestDeepCopyCopiesEveryField(t *testing.T) {
	for _, obj := range []any{&certificate.Certificate{}, &certificate.Secret{}, &certificate.CertificateRequest{}} {
		v := reflect.ValueOf(obj)
		fill(v.Elem(), 0)
		var cp any
		switch o := obj.(type) {
		case *certificate.Certificate:
			cp = deepCopy(o)
		case *certificate.Secret:
			cp = deepCopy(o)
		case *certificate.CertificateRequest:
			cp = deepCopy(o)
		}
		if !reflect.DeepEqual(obj, cp) {
			t.Errorf("%T: the copy differs from the original:\n%+v\n%+v", obj, obj, cp)
		}
		for _, path := range shared(v.Elem(), reflect.ValueOf(cp).Elem(), v.Type().Elem().Name()) {
			t.Errorf("%T: the copy shares %s with the original", obj, path)
		}
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

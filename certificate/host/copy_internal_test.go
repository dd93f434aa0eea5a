package host

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
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
	// The copy's values share one allocation; each stays its own.
	s.Data = map[string][]byte{"a": []byte("aa"), "b": []byte("bb"), "c": []byte("cc"), "empty": {}, "nil": nil}
	sc = deepCopy(s)
	for k := range sc.Data {
		sc.Data[k] = append(sc.Data[k], "++"...)
	}
	if !reflect.DeepEqual(s.Data, map[string][]byte{"a": []byte("aa"), "b": []byte("bb"), "c": []byte("cc"), "empty": {}, "nil": nil}) {
		t.Errorf("appending to the copy's values changed the original: %q", s.Data)
	}
	for _, k := range []string{"a", "b", "c"} {
		if got := string(sc.Data[k]); got != k+k+"++" {
			t.Errorf("appending to the copy's values ran into each other: %s = %q", k, got)
		}
	}
	if sc = deepCopy(s); sc.Data["nil"] != nil || sc.Data["empty"] == nil {
		t.Errorf("the copy's nil and empty values are not as the original's: %#v", sc.Data)
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

// BenchmarkDeepCopy copies what ReadYourWrites hands out for each read a
// kept write answers: an issued certificate as a host holds it (key spec,
// renewal status, conditions), its secret and its request.
func BenchmarkDeepCopy(b *testing.B) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rev := 2
	c := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web", UID: "u1", ResourceVersion: "42",
			Labels: map[string]string{"app": "web"}},
		Spec: certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example", "www.web.example"},
			IssuerRef:  certificate.IssuerRef{Name: "ca", Kind: "Issuer"},
			PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmEd25519, RotationPolicy: keys.RotationAlways},
			Renewal:    &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{{DaysOfWeek: []string{"Mon", "Tue"}, Start: "09:00", End: "17:00"}}}},
		Status: certificate.Status{Revision: &rev, NotBefore: &when, NotAfter: &when, RenewalTime: &when,
			Renewal: &renewal.Status{Policy: renewal.PolicyAutomatic},
			Conditions: []certificate.Condition{{Type: "Ready", Status: "True", LastTransitionTime: when},
				{Type: "Issuing", Status: "False", LastTransitionTime: when}}},
	}
	s := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-tls",
		Annotations: map[string]string{"cert-manager.io/certificate-name": "web", "cert-manager.io/issuer-name": "ca"}},
		Data: map[string][]byte{"tls.crt": make([]byte, 1100), "tls.key": make([]byte, 120), "ca.crt": make([]byte, 900)}}
	r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-2",
		Annotations: map[string]string{"cert-manager.io/certificate-name": "web"}},
		Spec:   certificate.RequestSpec{Request: make([]byte, 400), IssuerRef: c.Spec.IssuerRef},
		Status: certificate.RequestStatus{Certificate: make([]byte, 1100), Conditions: c.Status.Conditions[:1]}}
	b.ReportAllocs()
	for b.Loop() {
		_ = deepCopy(c)
		_ = deepCopy(s)
		_ = deepCopy(r)
	}
}

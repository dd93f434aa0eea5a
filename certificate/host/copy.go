package host

import (
	"reflect"
	"sync"
)

// deepCopy returns a copy of obj (a *certificate.Certificate, Secret or
// CertificateRequest) that shares nothing the caller may change with it:
// every pointer, slice and map is copied, down to the leaves. A struct
// with unexported fields (time.Time) is copied as a value, as its own
// methods do. It is what ReadYourWrites hands out for each read that a
// kept write answers: as safe as an encode-decode round trip, without the
// encoding.
func deepCopy[T Object](obj T) T {
	v := reflect.ValueOf(obj)
	out := reflect.New(v.Type()).Elem()
	copyValue(out, v)
	return out.Interface().(T)
}

func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if src.Type().Elem().Kind() == reflect.Uint8 {
			reflect.Copy(s, src)
		} else {
			for i := range src.Len() {
				copyValue(s.Index(i), src.Index(i))
			}
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		iter := src.MapRange()
		for iter.Next() {
			val := reflect.New(src.Type().Elem()).Elem()
			copyValue(val, iter.Value())
			m.SetMapIndex(iter.Key(), val)
		}
		dst.Set(m)
	case reflect.Struct:
		if !exportedOnly(src.Type()) {
			dst.Set(src)
			return
		}
		for i := range src.NumField() {
			copyValue(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}

// exported caches, per struct type, whether all its fields are exported.
var exported sync.Map // reflect.Type → bool

func exportedOnly(t reflect.Type) bool {
	if v, ok := exported.Load(t); ok {
		return v.(bool)
	}
	all := true
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			all = false
			break
		}
	}
	exported.Store(t, all)
	return all
}

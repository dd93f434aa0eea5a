package host

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/renewal"
)

// deepCopy returns a copy of obj (a *certificate.Certificate, Secret or
// CertificateRequest) that shares nothing the caller may change with it:
// every pointer, slice and map is copied, down to the leaves. A struct
// with unexported fields (time.Time) is copied as a value, as its own
// methods do. It is what ReadYourWrites hands out for each read that a
// kept write answers: as safe as an encode-decode round trip, without the
// encoding.
//
// The three kinds are copied field by field, with reflection only for
// the parts of a spec that are seldom set (a subject, key or keystore
// options, renewal windows): reads answered from ReadYourWrites are
// frequent, and the field-by-field copy costs a fraction of the
// reflective one. TestDeepCopySharesNothing fills every field of each
// kind, so a field added to one and forgotten here fails it.
func deepCopy[T Object](obj T) T {
	switch o := any(obj).(type) {
	case *certificate.Certificate:
		if o == nil {
			return obj
		}
		return any(copyCertificate(o)).(T)
	case *certificate.Secret:
		if o == nil {
			return obj
		}
		return any(&certificate.Secret{ObjectMeta: copyMeta(o.ObjectMeta), Data: copyData(o.Data)}).(T)
	case *certificate.CertificateRequest:
		if o == nil {
			return obj
		}
		return any(copyRequest(o)).(T)
	}
	return reflectCopy(obj)
}

// reflectCopy is deepCopy by reflection, for any value.
func reflectCopy[T any](obj T) T {
	v := reflect.ValueOf(obj)
	out := reflect.New(v.Type()).Elem()
	copyValue(out, v)
	return out.Interface().(T)
}

func copyMeta(m certificate.ObjectMeta) certificate.ObjectMeta {
	m.Labels = maps.Clone(m.Labels)
	m.Annotations = maps.Clone(m.Annotations)
	return m
}

// copyData copies a secret's data into one allocation: each value is its
// own range of it, capped at its length, so that an append to one
// reallocates rather than writing over the next.
func copyData(d map[string][]byte) map[string][]byte {
	if d == nil {
		return nil
	}
	n := 0
	for _, v := range d {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make(map[string][]byte, len(d))
	for k, v := range d {
		if v == nil {
			out[k] = nil
			continue
		}
		at := len(buf)
		buf = append(buf, v...)
		out[k] = buf[at:len(buf):len(buf)]
	}
	return out
}

// ptr copies what p points to.
func ptr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// deep copies what p points to by reflection.
func deep[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return reflectCopy(p)
}

func copyCertificate(c *certificate.Certificate) *certificate.Certificate {
	out := &certificate.Certificate{ObjectMeta: copyMeta(c.ObjectMeta), Spec: c.Spec, Status: c.Status}
	sp := &out.Spec
	sp.DNSNames = slices.Clone(sp.DNSNames)
	sp.IPAddresses = slices.Clone(sp.IPAddresses)
	sp.URIs = slices.Clone(sp.URIs)
	sp.EmailAddresses = slices.Clone(sp.EmailAddresses)
	sp.Subject = deep(sp.Subject)
	sp.OtherNames = slices.Clone(sp.OtherNames)
	sp.Duration = ptr(sp.Duration)
	sp.RenewBefore = ptr(sp.RenewBefore)
	sp.RenewBeforePercentage = ptr(sp.RenewBeforePercentage)
	sp.Usages = slices.Clone(sp.Usages)
	sp.EncodeUsagesInRequest = ptr(sp.EncodeUsagesInRequest)
	sp.NameConstraints = deep(sp.NameConstraints)
	sp.PrivateKey = ptr(sp.PrivateKey) // no pointers, slices or maps
	sp.SecretTemplate = deep(sp.SecretTemplate)
	if sp.AdditionalOutputFormats != nil {
		sp.AdditionalOutputFormats = reflectCopy(sp.AdditionalOutputFormats)
	}
	sp.Keystores = deep(sp.Keystores)
	sp.RevisionHistoryLimit = ptr(sp.RevisionHistoryLimit)
	sp.Renewal = copyRenewalSpec(sp.Renewal)
	sp.FallbackIssuerRefs = slices.Clone(sp.FallbackIssuerRefs)
	st := &out.Status
	st.Conditions = slices.Clone(st.Conditions)
	st.Revision = ptr(st.Revision)
	st.LastFailureTime = ptr(st.LastFailureTime)
	st.FailedIssuanceAttempts = ptr(st.FailedIssuanceAttempts)
	st.RetryAfter = ptr(st.RetryAfter)
	st.NotBefore = ptr(st.NotBefore)
	st.NotAfter = ptr(st.NotAfter)
	st.RenewalTime = ptr(st.RenewalTime)
	if st.Renewal != nil {
		r := *st.Renewal
		r.Windows = ptr(r.Windows) // strings only
		st.Renewal = &r
	}
	st.RenewalInfo = deep(st.RenewalInfo)
	st.Issuer = ptr(st.Issuer)
	if st.Issuer != nil {
		st.Issuer.Skipped = slices.Clone(st.Issuer.Skipped)
	}
	return out
}

func copyRenewalSpec(s *renewal.Spec) *renewal.Spec {
	if s == nil {
		return nil
	}
	out := *s
	if s.Windows != nil {
		out.Windows = make([]renewal.Window, len(s.Windows))
		for i, w := range s.Windows {
			w.DaysOfWeek = slices.Clone(w.DaysOfWeek)
			out.Windows[i] = w
		}
	}
	return &out
}

func copyRequest(r *certificate.CertificateRequest) *certificate.CertificateRequest {
	out := &certificate.CertificateRequest{ObjectMeta: copyMeta(r.ObjectMeta), Spec: r.Spec, Status: r.Status}
	out.Spec.Request = bytes.Clone(out.Spec.Request)
	out.Spec.Duration = ptr(out.Spec.Duration)
	out.Spec.Usages = slices.Clone(out.Spec.Usages)
	out.Status.Conditions = slices.Clone(out.Status.Conditions)
	out.Status.Certificate = bytes.Clone(out.Status.Certificate)
	out.Status.CA = bytes.Clone(out.Status.CA)
	out.Status.FailureTime = ptr(out.Status.FailureTime)
	out.Status.RetryAfter = ptr(out.Status.RetryAfter)
	return out
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

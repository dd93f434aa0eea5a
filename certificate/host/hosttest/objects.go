package hosttest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// kind is what the suite needs to know of one kind of object.
type kind[T host.Object] struct {
	name host.Kind
	coll func(host.Store) host.Collection[T]
	// sample is a new object as the loop writes one; i tells samples
	// apart. Owned objects name an owner that exists nowhere: no rule
	// needs the owner itself.
	sample func(ns, name string, i int) T
	// change changes what the loop changes of an object in an Update
	// (a certificate's or request's status; a secret's data, labels and
	// annotations); i tells changes apart.
	change func(obj T, i int)
	// mutate changes obj in place as a careless caller would: everything
	// (deep), or only what a store sharing values lets the caller change.
	mutate func(obj T, deep bool)
}

var (
	certificates = kind[*certificate.Certificate]{
		name:   host.KindCertificate,
		coll:   host.Store.Certificates,
		sample: sampleCertificate,
		change: func(c *certificate.Certificate, i int) { c.Status = sampleStatus(i, c.Generation) },
		mutate: func(c *certificate.Certificate, deep bool) {
			mutateMeta(&c.ObjectMeta)
			c.Spec.SecretName = "mutated"
			c.Spec.CommonName = "mutated"
			if deep && len(c.Spec.DNSNames) > 0 {
				c.Spec.DNSNames[0] = "mutated.example.com"
			} else {
				c.Spec.DNSNames = []string{"mutated.example.com"}
			}
			if len(c.Status.Conditions) > 0 {
				c.Status.Conditions[0].Message = "mutated"
			}
			c.Status.Conditions = append(c.Status.Conditions, certificate.Condition{Type: "Mutated", Status: certificate.StatusTrue})
			if deep && c.Status.Revision != nil {
				*c.Status.Revision = 99
			} else {
				c.Status.Revision = new(99)
			}
		},
	}
	secrets = kind[*certificate.Secret]{
		name:   host.KindSecret,
		coll:   host.Store.Secrets,
		sample: sampleSecret,
		change: func(s *certificate.Secret, i int) {
			s.Data = map[string][]byte{
				"tls.crt": fmt.Appendf(nil, "-----BEGIN CERTIFICATE-----\nchange %d\n-----END CERTIFICATE-----\n", i),
				"tls.key": {0xff, 0, byte(i), 0x80},
				"ca.crt":  {},
			}
			s.Labels = map[string]string{labelSample: "changed-" + strconv.Itoa(i)}
			s.Annotations = map[string]string{certificate.AnnotationCertificateName: s.Annotations[certificate.AnnotationCertificateName], annotationNote: "changed " + strconv.Itoa(i)}
		},
		mutate: func(s *certificate.Secret, deep bool) {
			mutateMeta(&s.ObjectMeta)
			if deep {
				for _, v := range s.Data {
					if len(v) > 0 {
						v[0] ^= 0xff
					}
				}
			}
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data["tls.key"] = []byte("mutated")
			s.Data["hosttest-mutated"] = []byte("mutated")
			delete(s.Data, "tls.crt")
		},
	}
	requests = kind[*certificate.CertificateRequest]{
		name:   host.KindRequest,
		coll:   host.Store.Requests,
		sample: sampleRequest,
		change: func(r *certificate.CertificateRequest, i int) {
			r.Status = certificate.RequestStatus{
				Conditions: []certificate.Condition{{Type: certificate.RequestConditionReady, Status: certificate.StatusTrue,
					Reason: certificate.RequestReasonIssued, Message: "change " + strconv.Itoa(i), LastTransitionTime: at(i)}},
				Certificate: fmt.Appendf(nil, "-----BEGIN CERTIFICATE-----\nchange %d\n-----END CERTIFICATE-----\n", i),
			}
		},
		mutate: func(r *certificate.CertificateRequest, deep bool) {
			mutateMeta(&r.ObjectMeta)
			if deep && len(r.Spec.Request) > 0 {
				r.Spec.Request[0] ^= 0xff
			} else {
				r.Spec.Request = []byte("mutated")
			}
			r.Spec.IssuerRef.Name = "mutated"
			if deep && len(r.Status.Certificate) > 0 {
				r.Status.Certificate[0] ^= 0xff
			} else {
				r.Status.Certificate = []byte("mutated")
			}
			if len(r.Status.Conditions) > 0 {
				r.Status.Conditions[0].Message = "mutated"
			}
			r.Status.Conditions = append(r.Status.Conditions, certificate.Condition{Type: "Mutated", Status: certificate.StatusTrue})
		},
	}
)

// The labels and annotations the suite writes.
const (
	labelSample    = "hosttest.certlife.dev/sample"
	annotationNote = "hosttest.certlife.dev/note"
)

var issuerRef = certificate.IssuerRef{Name: "hosttest-ca", Kind: "Issuer", Group: "cert-manager.io"}

// at is a time the suite writes: whole seconds, as an API server keeps.
func at(i int) time.Time {
	return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Minute)
}

func sampleCertificate(ns, name string, i int) *certificate.Certificate {
	return &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: ns, Name: name,
			Labels:      map[string]string{labelSample: strconv.Itoa(i)},
			Annotations: map[string]string{annotationNote: "sample " + strconv.Itoa(i)}},
		Spec: certificate.Spec{SecretName: name + "-tls", DNSNames: []string{name + ".example.com", fmt.Sprintf("www-%d.example.com", i)},
			IssuerRef: issuerRef},
	}
}

func sampleStatus(i int, generation int64) certificate.Status {
	status := certificate.StatusFalse
	if i%2 == 0 {
		status = certificate.StatusTrue
	}
	return certificate.Status{
		Conditions: []certificate.Condition{{Type: certificate.ConditionReady, Status: status, Reason: "Change" + strconv.Itoa(i),
			Message: "change " + strconv.Itoa(i), LastTransitionTime: at(i), ObservedGeneration: generation}},
		Revision: new(i + 1),
	}
}

// owner is the UID and name of the i-th owner the suite's objects name.
func owner(i int) (uid, name string) {
	return fmt.Sprintf("hosttest-owner-uid-%d", i), fmt.Sprintf("owner-%d", i)
}

func sampleSecret(ns, name string, i int) *certificate.Secret {
	uid, ownerName := owner(i % 3)
	return &certificate.Secret{
		ObjectMeta: certificate.ObjectMeta{Namespace: ns, Name: name, OwnerUID: uid,
			Labels:      map[string]string{labelSample: strconv.Itoa(i)},
			Annotations: map[string]string{certificate.AnnotationCertificateName: ownerName, annotationNote: "sample " + strconv.Itoa(i)}},
		Data: map[string][]byte{
			"tls.crt": fmt.Appendf(nil, "-----BEGIN CERTIFICATE-----\nsample %d\n-----END CERTIFICATE-----\n", i),
			"tls.key": {0, 1, 0xfe, 0xff, byte(i)},
			"ca.crt":  {},
		},
	}
}

func sampleRequest(ns, name string, i int) *certificate.CertificateRequest {
	uid, ownerName := owner(i % 3)
	return &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Namespace: ns, Name: name, OwnerUID: uid,
			Labels: map[string]string{labelSample: strconv.Itoa(i)},
			Annotations: map[string]string{certificate.AnnotationCertificateName: ownerName, certificate.AnnotationRevision: strconv.Itoa(i + 1),
				annotationNote: "sample " + strconv.Itoa(i)}},
		Spec: certificate.RequestSpec{Request: fmt.Appendf(nil, "-----BEGIN CERTIFICATE REQUEST-----\n%s %d\n-----END CERTIFICATE REQUEST-----\n", name, i),
			IssuerRef: issuerRef},
	}
}

func mutateMeta(m *certificate.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[labelSample] = "mutated"
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[annotationNote] = "mutated"
	m.UID, m.ResourceVersion, m.OwnerUID, m.Generation = "mutated", "mutated", "mutated", 99
	m.CreationTimestamp = at(99)
}

// clone is a deep copy of obj.
func clone[T host.Object](obj T) T {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("hosttest: encoding a %T: %v", obj, err))
	}
	var out T
	switch any(out).(type) {
	case *certificate.Certificate:
		out = any(new(certificate.Certificate)).(T)
	case *certificate.Secret:
		out = any(new(certificate.Secret)).(T)
	case *certificate.CertificateRequest:
		out = any(new(certificate.CertificateRequest)).(T)
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("hosttest: decoding a %T: %v", obj, err))
	}
	return out
}

// diff describes how got differs from want ("-want +got"), empty when
// they are equal; an empty map or slice equals a nil one.
func diff(want, got any) string {
	return cmp.Diff(want, got, cmpopts.EquateEmpty())
}

func describe(kind host.Kind, m *certificate.ObjectMeta) string {
	return fmt.Sprintf("%s %s/%s", kind, m.Namespace, m.Name)
}

// names are the namespace/name of objs, sorted.
func names[T host.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Meta().Namespace+"/"+o.Meta().Name)
	}
	slices.Sort(out)
	return out
}

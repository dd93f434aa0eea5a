package certificate

import (
	"crypto"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
)

// csrKeys holds one key per key spec the fuzz target asks for, made on
// first use: what a CSR is built from does not depend on which key of a
// spec signs it.
var csrKeys sync.Map // keys.KeySpec → crypto.Signer

func csrKey(t *testing.T, spec keys.KeySpec) crypto.Signer {
	spec = keys.KeySpec{Algorithm: spec.Algorithm, Size: spec.Size}
	if k, ok := csrKeys.Load(spec); ok {
		return k.(crypto.Signer)
	}
	k, err := keys.Generate(rand.Reader, spec)
	if err != nil {
		t.Fatalf("generating a key for the valid spec %+v: %v", spec, err)
	}
	csrKeys.Store(spec, k)
	return k
}

// Values the fuzz target draws names and subject fields from, beside the
// fuzzer's own strings: valid ones first, then the edges validation must
// judge; a pool's valid values are drawn more often than its edges.
var (
	csrDNSNames = pool{valid: []string{"web.example", "*.web.example", "xn--bcher-kva.example", "a-b.c", "UPPER.example"},
		edges: []string{"web.example.", "bücher.example", "*", "a..b", ""}}
	csrIPs = pool{valid: []string{"192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1", "0.0.0.0", "::"},
		edges: []string{"192.0.2.256", "fe80::1%eth0", "", "1.2.3"}}
	csrURIs = pool{valid: []string{"spiffe://cluster.local/ns/app/sa/web", "https://web.example/a?b=c#d", "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66", "mailto:ops@web.example"},
		edges: []string{"HTTPS://Web.Example/", "https://web.example/a b", "https://bücher.example/", "urn:ü", "https://a/?q=ü", "no-scheme", "http://[::1", ""}}
	csrEmails = pool{valid: []string{"ops@web.example", "o.p+s@sub.web.example", "\"quoted local\"@web.example", "ops@[192.0.2.1]"},
		edges: []string{"öps@web.example", "ops@bücher.example", "Ops <ops@web.example>", "ops", "@web.example", ""}}
	csrStrings = pool{valid: []string{"Example Org", "Ünïcödé", "a*b&c", "NL", strings.Repeat("o", 64), "CN=x,O=y", "=", "#0403616263"},
		edges: []string{"", "N", "x\xffy", "\x00", strings.Repeat("o", 65)}}
	csrLiterals = pool{valid: []string{"CN=web.example", "CN=web.example,O=Example,C=NL", "O=Example", "CN=a+OU=b,DC=corp,DC=example", "UID=x,CN=y", "2.5.4.3=web", "CN=#0c03616263"},
		edges: []string{"CN=" + strings.Repeat("c", 65), "CN=\\ff", "CN", "XX=y", ""}}
	csrOIDs = pool{valid: []string{"1.3.6.1.4.1.311.20.2.3", "2.5.29.17", "1.2", "1.2.840.113549.1.9.1"},
		edges: []string{"0.40", "1", "1..2", "x", ""}}
	csrUsages    = []keys.Usage{keys.UsageDigitalSignature, keys.UsageKeyEncipherment, keys.UsageServerAuth, keys.UsageClientAuth, keys.UsageCertSign, keys.UsageCRLSign, keys.UsageAny, keys.UsageOCSPSigning, keys.UsageEncipherOnly, "nonsense"}
	csrKeySpecs  = []keys.KeySpec{{}, {Algorithm: keys.AlgorithmECDSA}, {Algorithm: keys.AlgorithmECDSA, Size: 384}, {Algorithm: keys.AlgorithmECDSA, Size: 521}, {Algorithm: keys.AlgorithmEd25519}, {Algorithm: keys.AlgorithmRSA, Size: 3072}, {Algorithm: keys.AlgorithmRSA, Size: 1024}, {Algorithm: keys.AlgorithmECDSA, Size: 224}, {Algorithm: "DSA"}}
	csrDurations = []time.Duration{0, time.Hour, 24 * time.Hour, 90 * 24 * time.Hour, time.Minute}
)

// pool is where a field's values come from: valid ones, and edges.
type pool struct{ valid, edges []string }

// csrSpec builds a spec from the fuzzer's choices and two of its strings,
// a and b, which go into whichever fields the choices name.
func csrSpec(r *fuzzReader, a, b string) Spec {
	s := Spec{SecretName: "web-tls", IssuerRef: IssuerRef{Name: "ca"}}
	str := func(p pool) string {
		switch r.pick(8) {
		case 4:
			return p.edges[r.pick(len(p.edges))]
		case 5:
			return a
		case 6:
			return b
		default:
			return p.valid[r.pick(len(p.valid))]
		}
	}
	list := func(p pool) []string {
		n := r.pick(6) - 2 // none half the time
		var out []string
		for range n {
			out = append(out, str(p))
		}
		return out
	}
	if r.flag() {
		s.CommonName = str(csrDNSNames)
	}
	s.DNSNames = list(csrDNSNames)
	s.IPAddresses = list(csrIPs)
	s.URIs = list(csrURIs)
	s.EmailAddresses = list(csrEmails)
	switch r.pick(4) {
	case 1:
		s.Subject = &keys.Subject{}
	case 2:
		s.Subject = &keys.Subject{
			Organizations: list(csrStrings), Countries: list(csrStrings), OrganizationalUnits: list(csrStrings),
			Localities: list(csrStrings), Provinces: list(csrStrings), StreetAddresses: list(csrStrings),
			PostalCodes: list(csrStrings), SerialNumber: str(csrStrings),
		}
	case 3:
		s.CommonName, s.LiteralSubject = "", str(csrLiterals)
	}
	for range r.pick(3) {
		s.OtherNames = append(s.OtherNames, keys.OtherName{OID: str(csrOIDs), UTF8Value: str(csrStrings)})
	}
	for range r.pick(4) {
		s.Usages = append(s.Usages, csrUsages[r.pick(len(csrUsages))])
	}
	if r.flag() {
		s.EncodeUsagesInRequest = ptr(r.flag())
	}
	s.IsCA = r.flag()
	if r.pick(3) == 2 {
		item := func() *keys.NameConstraintItem {
			if !r.flag() {
				return nil
			}
			return &keys.NameConstraintItem{DNSDomains: list(csrDNSNames), IPRanges: list(pool{valid: []string{"10.0.0.0/8", "2001:db8::/32"}, edges: []string{"10.0.0.1", "x"}}),
				EmailAddresses: list(csrEmails), URIDomains: list(csrDNSNames)}
		}
		s.NameConstraints = &keys.NameConstraints{Critical: r.flag(), Permitted: item(), Excluded: item()}
	}
	if k := r.pick(len(csrKeySpecs) + 1); k > 0 {
		s.PrivateKey = &csrKeySpecs[k-1]
	}
	if d := csrDurations[r.pick(len(csrDurations))]; d > 0 {
		s.Duration = &Duration{d}
	}
	return s
}

// FuzzValidateAgreesWithCSR generates specs — names of every kind,
// subjects written field by field or literally, other names, usages, CA
// and name constraints, key algorithms and sizes, durations — and checks
// that Validate and what carrying out a CreateRequest builds agree: a spec
// Validate accepts builds a CSR with a key of its own spec, the CSR reads
// back as what the spec asks (else every pass would find the request
// outdated and replace it), and a temporary certificate can be made from
// it; a template BuildCSR refuses is one Validate refuses at the field
// BuildCSR names. Nothing panics.
func FuzzValidateAgreesWithCSR(f *testing.F) {
	// testdata/fuzz holds what it found in the code before it: URIs that
	// build but read back otherwise (an upper-case scheme, a space) or not
	// at all (a non-ASCII host), an email address with non-ASCII
	// characters and a subject that is not UTF-8, which never build.
	f.Add([]byte{}, "", "")
	f.Add([]byte{1, 5, 3, 0, 0, 0, 0, 0, 1, 5, 6}, "web.example", "öps@web.example")
	f.Fuzz(func(t *testing.T, choices []byte, a, b string) {
		spec := csrSpec(&fuzzReader{b: choices}, a, b)
		verr := Validate(&spec)
		tmpl := spec.Template()
		if spec.PrivateKey != nil && spec.PrivateKey.Validate() != nil {
			requireFieldError(t, verr, "spec.privateKey")
			return // no key of this spec to build with
		}
		key := csrKey(t, spec.KeySpec())
		if verr != nil {
			if _, err := keys.BuildCSR(rand.Reader, tmpl, key); err != nil {
				var te *keys.TemplateError
				if !errors.As(err, &te) {
					t.Fatalf("BuildCSR refused the template with an error that names no field: %v", err)
				}
				path := "spec"
				if te.Field != "" {
					path += "." + te.Field
				}
				requireFieldError(t, verr, path)
			}
			return
		}
		pemCSR, err := keys.BuildCSR(rand.Reader, tmpl, key)
		if err != nil {
			t.Fatalf("Validate accepts the spec, but BuildCSR refuses it: %v\nspec: %+v", err, spec)
		}
		csr, err := keys.ParseCSR(pemCSR)
		if err != nil {
			t.Fatalf("BuildCSR made a request that does not parse: %v\nspec: %+v", err, spec)
		}
		if d := keys.CompareCSR(csr, tmpl); d != nil {
			t.Fatalf("the request BuildCSR made differs from its own template %v: every pass would replace it\nspec: %+v", d, spec)
		}
		if err := keys.CheckTemplate(tmpl); err != nil {
			t.Fatalf("Validate accepts the spec and BuildCSR builds it, but CheckTemplate refuses it: %v", err)
		}
		if _, err := keys.TemporaryCertificate(rand.Reader, key, tmpl, t0, t0.Add(time.Hour)); err != nil {
			t.Fatalf("Validate accepts the spec, but no temporary certificate can be made for it: %v\nspec: %+v", err, spec)
		}
	})
}

// requireFieldError fails unless err holds a *FieldError at path or below
// it ("spec" itself: exactly there).
func requireFieldError(t *testing.T, err error, path string) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *FieldError
		if !errors.As(e, &fe) {
			continue
		}
		if fe.Path == path || path != "spec" && (strings.HasPrefix(fe.Path, path+".") || strings.HasPrefix(fe.Path, path+"[")) {
			return
		}
	}
	t.Fatalf("BuildCSR refuses %s, but Validate names no problem there: %v", path, err)
}

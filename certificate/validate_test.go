package certificate

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func validSpec() Spec {
	return Spec{SecretName: "web-tls", CommonName: "web.example", DNSNames: []string{"web.example"}, IssuerRef: IssuerRef{Name: "ca"}}
}

// Validate refuses bad input up front, each problem at its field path and
// quoting the value.
func TestValidateRefusesBadInput(t *testing.T) {
	tests := map[string]struct {
		mutate func(*Spec)
		want   string // "" for valid
	}{
		"a valid spec":                       {func(*Spec) {}, ""},
		"a wildcard as the leftmost label":   {func(s *Spec) { s.DNSNames = []string{"*.example.com"} }, ""},
		"an internationalised name in ASCII": {func(s *Spec) { s.DNSNames = []string{"xn--bcher-kva.example"} }, ""},
		"a label of 63 characters":           {func(s *Spec) { s.DNSNames = []string{strings.Repeat("a", 63) + ".example"} }, ""},
		"an email address":                   {func(s *Spec) { s.EmailAddresses = []string{"ops@example.com"} }, ""},
		"renewBefore of five minutes":        {func(s *Spec) { s.RenewBefore = &Duration{5 * time.Minute} }, ""},
		"a SPIFFE URI":                       {func(s *Spec) { s.URIs = []string{"spiffe://cluster.local/ns/web/sa/app"} }, ""},

		"a secretName with dots and dashes": {func(s *Spec) { s.SecretName = "web.example-tls" }, ""},
		"a secretName that reaches into another namespace": {func(s *Spec) { s.SecretName = "team-b/db-tls" },
			`spec.secretName: "team-b/db-tls" is not a valid object name: it has the character '/' (an object name is a lower-case RFC 1123 subdomain`},
		"a secretName in upper case": {func(s *Spec) { s.SecretName = "Web-TLS" },
			`spec.secretName: "Web-TLS" is not a valid object name: it has the upper-case letter 'W'`},
		"a secretName over 253 characters": {func(s *Spec) { s.SecretName = strings.Repeat("a", 254) },
			`is not a valid object name: it is 254 characters long, over 253`},
		"an email address with a display name": {func(s *Spec) { s.EmailAddresses = []string{"Ops <ops@example.com>"} },
			`spec.emailAddresses[0]: "Ops <ops@example.com>" is not an email address`},
		"an email address without a domain": {func(s *Spec) { s.EmailAddresses = []string{"ops"} },
			`spec.emailAddresses[0]: "ops" is not an email address`},
		"a wildcard in the middle": {func(s *Spec) { s.DNSNames = []string{"a.*.example"} },
			`spec.dnsNames[0]: "a.*.example" is not a valid DNS name: a wildcard may only be the whole leftmost label`},
		"a partial wildcard": {func(s *Spec) { s.DNSNames = []string{"web*.example"} },
			`"web*.example" is not a valid DNS name: a wildcard may only be the whole leftmost label`},
		"a bare wildcard": {func(s *Spec) { s.DNSNames = []string{"*"} },
			`"*" is not a valid DNS name: a wildcard needs a domain after it`},
		"a space": {func(s *Spec) { s.DNSNames = []string{"web example"} },
			`"web example" is not a valid DNS name: it contains a space`},
		"a label of 64 characters": {func(s *Spec) { s.DNSNames = []string{strings.Repeat("a", 64) + ".example"} },
			"is 64 characters long, over 63"},
		"a name of 254 characters": {func(s *Spec) { s.DNSNames = []string{strings.Repeat(strings.Repeat("a", 62)+".", 4) + "ab"} },
			"it is 254 characters long, over 253"},
		"a leading hyphen": {func(s *Spec) { s.DNSNames = []string{"-web.example"} },
			`label "-web" starts or ends with a hyphen`},
		"an empty label": {func(s *Spec) { s.DNSNames = []string{"web..example"} },
			"it has an empty label"},
		"a trailing dot": {func(s *Spec) { s.DNSNames = []string{"web.example."} },
			"it ends with a dot"},
		"non-ASCII characters": {func(s *Spec) { s.DNSNames = []string{"bücher.example"} },
			"use the ASCII (xn--) form"},
		"an underscore": {func(s *Spec) { s.DNSNames = []string{"_acme.example"} },
			`label "_acme" has an underscore`},
		"an empty DNS name": {func(s *Spec) { s.DNSNames = []string{""} },
			`spec.dnsNames[0]: "" is not a valid DNS name: it is empty`},
		"renewBefore under five minutes": {func(s *Spec) { s.RenewBefore = &Duration{4 * time.Minute} },
			"spec.renewBefore: 4m0s is under the minimum of 5m0s"},
		"renewBefore leaving the minimum time before renewal": {func(s *Spec) {
			s.Duration, s.RenewBefore = &Duration{time.Hour}, &Duration{50 * time.Minute}
		}, ""},
		"a percentage leaving more than the minimum time before renewal": {func(s *Spec) {
			s.Duration, s.RenewBeforePercentage = &Duration{time.Hour}, ptr(int32(83))
		}, ""},
		"renewBefore leaving two seconds of an hour: due on arrival": {func(s *Spec) {
			s.Duration, s.RenewBefore = &Duration{time.Hour}, &Duration{59*time.Minute + 58*time.Second}
		}, "spec.renewBefore: 59m58s leaves 2s of the duration 1h0m0s before renewal is due, under the minimum of 10m0s: the certificate would be due for renewal as soon as it arrives"},
		"renewBefore leaving five minutes of the default duration": {func(s *Spec) {
			s.RenewBefore = &Duration{DefaultDuration - 5*time.Minute}
		}, "spec.renewBefore: 2159h55m0s leaves 5m0s of the duration 2160h0m0s (the default, spec.duration being unset) before renewal is due"},
		"renewBefore as long as the duration": {func(s *Spec) {
			s.Duration, s.RenewBefore = &Duration{time.Hour}, &Duration{time.Hour}
		}, "spec.renewBefore: 1h0m0s is not less than the duration 1h0m0s"},
		"a percentage leaving 36 seconds of an hour: due on arrival": {func(s *Spec) {
			s.Duration, s.RenewBeforePercentage = &Duration{time.Hour}, ptr(int32(99))
		}, "spec.renewBeforePercentage: 99 leaves 36s of the duration 1h0m0s before renewal is due, under the minimum of 10m0s"},
		"a percentage of 100": {func(s *Spec) { s.RenewBeforePercentage = ptr(int32(100)) },
			"spec.renewBeforePercentage: 100 is outside (0, 100)"},
		"a URI that does not parse": {func(s *Spec) { s.URIs = []string{"%zz"} },
			`spec.uris[0]: "%zz" is not an absolute URI`},
		"a URI without a scheme": {func(s *Spec) { s.URIs = []string{"cluster.local/web"} },
			`spec.uris[0]: "cluster.local/web" is not an absolute URI`},

		"a literal subject instead of commonName":       {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "CN=web.example,O=acme,DC=corp" }, ""},
		"a literal subject without a CN, and DNS names": {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "O=acme" }, ""},
		"a literal subject with neither CN nor names": {func(s *Spec) { s.CommonName, s.DNSNames, s.LiteralSubject = "", nil, "O=acme" },
			"spec: names nothing: set at least one of commonName (or a CN in literalSubject), dnsNames, ipAddresses, uris, emailAddresses, otherNames"},
		"a literal subject beside commonName": {func(s *Spec) { s.LiteralSubject = "CN=web.example" },
			"spec.literalSubject: may not be set together with spec.commonName"},
		"a literal subject beside subject": {func(s *Spec) {
			s.CommonName, s.LiteralSubject, s.Subject = "", "CN=web.example", &keys.Subject{Organizations: []string{"acme"}}
		}, "spec.literalSubject: may not be set together with spec.subject"},
		"a literal subject that does not parse": {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "CN=web,Org=acme" },
			`spec.literalSubject: "CN=web,Org=acme" is not an RFC 4514 distinguished name: at byte 7: attribute type "Org" is not one of`},
		"a literal subject whose CN is too long": {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "CN="+strings.Repeat("a", 65) },
			"spec.literalSubject: its CN \"" + strings.Repeat("a", 65) + "\" is longer than 64 bytes"},
		"only other names": {func(s *Spec) {
			s.CommonName, s.DNSNames, s.OtherNames = "", nil, []keys.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "user@corp.example"}}
		}, ""},
		"an other name without a value": {func(s *Spec) { s.OtherNames = []keys.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3"}} },
			"spec.otherNames[0].utf8Value: is required"},
		"an other name with a bad OID": {func(s *Spec) { s.OtherNames = []keys.OtherName{{OID: "upn", UTF8Value: "u"}} },
			`spec.otherNames[0].oid: "upn" is not a dotted OID`},
		"name constraints on a CA": {func(s *Spec) {
			s.IsCA, s.NameConstraints = true, &keys.NameConstraints{Permitted: &keys.NameConstraintItem{DNSDomains: []string{"example.com"}}}
		}, ""},
		"name constraints on a certificate that is not a CA": {func(s *Spec) {
			s.NameConstraints = &keys.NameConstraints{Permitted: &keys.NameConstraintItem{DNSDomains: []string{"example.com"}}}
		}, "spec.nameConstraints: may only be set when spec.isCA is true"},
		"name constraints setting neither permitted nor excluded": {func(s *Spec) { s.IsCA, s.NameConstraints = true, &keys.NameConstraints{Critical: true} },
			"spec.nameConstraints: sets neither permitted nor excluded"},
		"name constraints whose permitted lists nothing, as cert-manager accepts": {func(s *Spec) {
			s.IsCA, s.NameConstraints = true, &keys.NameConstraints{Permitted: &keys.NameConstraintItem{}}
		}, ""},
		"a name constraint that is not a CIDR": {func(s *Spec) {
			s.IsCA, s.NameConstraints = true, &keys.NameConstraints{Excluded: &keys.NameConstraintItem{IPRanges: []string{"10.0.0.0"}}}
		}, `spec.nameConstraints.excluded.ipRanges[0]: "10.0.0.0" is not an IP range in CIDR notation`},
		// What the host cannot build a CSR of, or builds one of that reads
		// back otherwise (and so is replaced on every pass), is refused
		// here, at its field.
		"an email address with non-ASCII characters (RFC 6531)": {func(s *Spec) { s.EmailAddresses = []string{"öps@example.com"} },
			`spec.emailAddresses[0]: "öps@example.com" has non-ASCII characters`},
		"an email address on a non-ASCII domain": {func(s *Spec) { s.EmailAddresses = []string{"ops@bücher.example"} },
			`spec.emailAddresses[0]: "ops@bücher.example" has non-ASCII characters`},
		"a URI with non-ASCII characters": {func(s *Spec) { s.URIs = []string{"https://bücher.example/"} },
			`spec.uris[0]: "https://bücher.example/" has non-ASCII characters, which a certificate cannot carry (IA5String, RFC 5280 §4.2.1.6): percent-encode them`},
		"a URI with an upper-case scheme": {func(s *Spec) { s.URIs = []string{"SPIFFE://cluster.local/web"} },
			`spec.uris[0]: "SPIFFE://cluster.local/web" is not in the form a certificate carries it: write "spiffe://cluster.local/web"`},
		"a URI with a space": {func(s *Spec) { s.URIs = []string{"https://web.example/a b"} },
			`spec.uris[0]: "https://web.example/a b" is not in the form a certificate carries it: write "https://web.example/a%20b"`},
		"an organization that is not UTF-8": {func(s *Spec) { s.Subject = &keys.Subject{Organizations: []string{"ok", "x\xffy"}} },
			`spec.subject.organizations[1]: "x\xffy" is not valid UTF-8`},
		"a common name that is not UTF-8": {func(s *Spec) { s.CommonName = "web\xff" },
			`spec.commonName: "web\xff" is not valid UTF-8`},
		"an organization in Unicode":     {func(s *Spec) { s.Subject = &keys.Subject{Organizations: []string{"Bücher GmbH"}} }, ""},
		"usages kept out of the request": {func(s *Spec) { s.EncodeUsagesInRequest = ptr(false) }, ""},

		// RFC 5280 §4.2.1.3, §4.2.1.9: only a CA's key signs certificates.
		"cert sign without isCA": {func(s *Spec) { s.Usages = []keys.Usage{keys.UsageDigitalSignature, keys.UsageCertSign} },
			`spec.usages[1]: "cert sign" is only for a CA certificate (RFC 5280 §4.2.1.3`},
		"cert sign on a CA":                            {func(s *Spec) { s.IsCA, s.Usages = true, []keys.Usage{keys.UsageCertSign, keys.UsageCRLSign} }, ""},
		"CRL sign without isCA, which RFC 5280 allows": {func(s *Spec) { s.Usages = []keys.Usage{keys.UsageCRLSign} }, ""},

		// RFC 5280 appendix A: the upper bounds of every subject attribute.
		"an organization of 64 characters": {func(s *Spec) { s.Subject = &keys.Subject{Organizations: []string{strings.Repeat("ø", 64)}} }, ""},
		"an organization over 64 characters": {func(s *Spec) { s.Subject = &keys.Subject{Organizations: []string{"Acme", strings.Repeat("o", 65)}} },
			`spec.subject.organizations[1]: "` + strings.Repeat("o", 65) + `" is 65 characters long, over the upper bound of 64 (RFC 5280 appendix A, ub-organization-name)`},
		"an organizational unit over 64 characters": {func(s *Spec) { s.Subject = &keys.Subject{OrganizationalUnits: []string{strings.Repeat("u", 65)}} },
			"spec.subject.organizationalUnits[0]: "},
		"a locality over 128 characters": {func(s *Spec) { s.Subject = &keys.Subject{Localities: []string{strings.Repeat("l", 129)}} },
			"over the upper bound of 128 (RFC 5280 appendix A, ub-locality-name)"},
		"a locality of 128 characters": {func(s *Spec) { s.Subject = &keys.Subject{Localities: []string{strings.Repeat("l", 128)}} }, ""},
		"a province over 128 characters": {func(s *Spec) { s.Subject = &keys.Subject{Provinces: []string{strings.Repeat("p", 129)}} },
			"spec.subject.provinces[0]: "},
		"a street address over 128 characters": {func(s *Spec) { s.Subject = &keys.Subject{StreetAddresses: []string{strings.Repeat("s", 129)}} },
			"spec.subject.streetAddresses[0]: "},
		"a postal code over 16 characters": {func(s *Spec) { s.Subject = &keys.Subject{PostalCodes: []string{strings.Repeat("1", 17)}} },
			"spec.subject.postalCodes[0]: "},
		"a country of three letters": {func(s *Spec) { s.Subject = &keys.Subject{Countries: []string{"NOR"}} },
			`spec.subject.countries[0]: "NOR" is 3 characters long, not 2`},
		"a country that is no PrintableString": {func(s *Spec) { s.Subject = &keys.Subject{Countries: []string{"N*"}} },
			`spec.subject.countries[0]: "N*" has the character '*', which a PrintableString cannot hold`},
		"a serial number over 64 characters": {func(s *Spec) { s.Subject = &keys.Subject{SerialNumber: strings.Repeat("1", 65)} },
			"spec.subject.serialNumber: "},
		"a serial number that is no PrintableString": {func(s *Spec) { s.Subject = &keys.Subject{SerialNumber: "ID_42"} },
			`spec.subject.serialNumber: "ID_42" has the character '_', which a PrintableString cannot hold`},
		"a serial number of PrintableString characters": {func(s *Spec) { s.Subject = &keys.Subject{SerialNumber: "NO 123-456/7 (a)"} }, ""},
		"a control character in an organization": {func(s *Spec) { s.Subject = &keys.Subject{Organizations: []string{"Acme\nInc"}} },
			`spec.subject.organizations[0]: "Acme\nInc" has the control character U+000A`},
		"a literal subject with an organization over 64": {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "CN=web,O="+strings.Repeat("o", 65) },
			"spec.literalSubject: its O attribute \"" + strings.Repeat("o", 65) + "\" is 65 characters long"},
		"a literal subject with a serial number that is no PrintableString": {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "CN=web,SERIALNUMBER=a@b" },
			`spec.literalSubject: its SERIALNUMBER attribute "a@b" has the character '@'`},
		"a literal subject with a DC that is not ASCII": {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "CN=web,DC=bøk,DC=example" },
			`spec.literalSubject: its DC attribute "bøk" has the non-ASCII character 'ø', which an IA5String cannot hold`},
		"a literal subject with domain components": {func(s *Spec) { s.CommonName, s.LiteralSubject = "", "CN=web,DC=corp_1,DC=example" }, ""},
		"a temporary certificate":                  {func(s *Spec) { s.IssueTemporaryCertificate = true }, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(&s)
			err := Validate(&s)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidSpec)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// An invalid spec shows where `kubectl get` shows it: Ready=False with
// reason InvalidSpec and the field error as message; nothing is issued.
func TestInvalidSpecShowsInReady(t *testing.T) {
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	s.Secret = nil
	s.Certificate.Spec.DNSNames = []string{"web example"}
	res := Reconcile(s, t0, Config{})
	require.Len(t, res.Actions, 1, "%v", res.Actions)
	u, ok := res.Actions[0].(UpdateStatus)
	require.True(t, ok)
	ready := u.Status.Condition(ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, StatusFalse, ready.Status)
	assert.Equal(t, ReasonInvalidSpec, ready.Reason)
	assert.Contains(t, ready.Message, `spec.dnsNames[0]: "web example" is not a valid DNS name`)
	assert.Nil(t, u.Status.Condition(ConditionIssuing))
	assert.Equal(t, ReasonInvalidSpec, res.Reason)
}

// A snapshot that cannot be decided on gets a clear error, and no action
// ever has an empty owner.
func TestBadInputGetsAnErrorAndNoActions(t *testing.T) {
	f := newFixture(t)
	stages := map[string]func(*Snapshot, time.Time, Config) Result{
		"Reconcile": Reconcile, "Trigger": Trigger, "KeyManager": KeyManager, "RequestManager": RequestManager,
		"Issue": Issue, "Readiness": Readiness,
	}
	tests := map[string]struct {
		snap func() *Snapshot
		now  time.Time
		path string
	}{
		"no snapshot":    {func() *Snapshot { return nil }, t0, "certificate"},
		"no certificate": {func() *Snapshot { return &Snapshot{} }, t0, "certificate"},
		"a certificate without a UID": {func() *Snapshot {
			s, _ := f.healthy(t0)
			s.Certificate.UID = ""
			s.Secret = nil
			return s
		}, t0, "certificate.metadata.uid"},
		"a certificate without a name": {func() *Snapshot {
			s, _ := f.healthy(t0)
			s.Certificate.Name = ""
			return s
		}, t0, "certificate.metadata.name"},
		"a certificate whose name holds a '/'": {func() *Snapshot {
			s, _ := f.healthy(t0)
			s.Certificate.Name = "team-b/web"
			return s
		}, t0, "certificate.metadata.name"},
		"a certificate whose namespace is not a DNS label": {func() *Snapshot {
			s, _ := f.healthy(t0)
			s.Certificate.Namespace = "Default"
			return s
		}, t0, "certificate.metadata.namespace"},
		"a zero now": {func() *Snapshot { s, _ := f.healthy(t0); return s }, time.Time{}, "now"},
	}
	for name, tc := range tests {
		for stage, fn := range stages {
			t.Run(name+"/"+stage, func(t *testing.T) {
				res := fn(tc.snap(), tc.now, Config{})
				assert.Empty(t, res.Actions)
				assert.True(t, res.RequeueAt.IsZero())
				require.Error(t, res.Err)
				assert.ErrorIs(t, res.Err, ErrInvalidInput)
				var ie *InputError
				require.True(t, errors.As(res.Err, &ie))
				assert.Equal(t, tc.path, ie.Path)
				assert.Contains(t, res.Message, tc.path)
			})
		}
	}
}

var dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Request and next-key names stay valid Kubernetes object names whatever
// the certificate's name, and stay the same for the same certificate and
// revision.
func TestNamesStayValidObjectNames(t *testing.T) {
	long := strings.Repeat("a", 100) + "." + strings.Repeat("b", 100) + "." + strings.Repeat("c", 53)
	for name, cert := range map[string]string{
		"a short name":               "web",
		"a name of 253 characters":   long,
		"a name cut at a dot":        strings.Repeat("a", 248) + ".bbbb",
		"a name cut at a hyphen":     strings.Repeat("a", 248) + "-bbbb",
		"two long names, one prefix": long[:252] + "z",
	} {
		t.Run(name, func(t *testing.T) {
			c := &Certificate{ObjectMeta: ObjectMeta{Name: cert, UID: "u"}}
			for _, n := range []string{RequestName(cert, 1), RequestName(cert, 12345), nextKeySecretName(c, 7, keys.KeySpec{}.WithDefaults())} {
				assert.LessOrEqual(t, len(n), MaxNameLength, n)
				assert.Regexp(t, dns1123Subdomain, n)
			}
			assert.Equal(t, RequestName(cert, 3), RequestName(cert, 3))
			assert.NotEqual(t, RequestName(cert, 3), RequestName(cert, 4))
		})
	}
	assert.Equal(t, "web-2", RequestName("web", 2))
	assert.NotEqual(t, RequestName(long, 1), RequestName(long[:252]+"z", 1), "names that share a long prefix stay apart")
}

func TestConfigValidate(t *testing.T) {
	assert.NoError(t, Config{}.Validate(), "the zero value is valid")
	var c Config
	c.Backoff.Max = -time.Hour
	c.Renewal.Timing.JitterFraction = 0.9
	c.Renewal.SafetyMargin = -time.Minute
	c.SecretInUseRecheck = -time.Second
	c.IssuerGrace = -time.Minute
	err := c.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	for _, field := range []string{"backoff:", "renewal.timing.jitterFraction: 0.9", "renewal.safetyMargin: -1m0s", "secretInUseRecheck: -1s", "issuerGrace: -1m0s"} {
		assert.Contains(t, err.Error(), field)
	}
}

// Validate says what is wrong at a field once, although both its own
// checks and the template's (what the host can build a CSR of) find it.
func TestValidateNamesEachFieldOnce(t *testing.T) {
	s := validSpec()
	s.URIs = []string{"%zz", "https://bücher.example/"}
	s.EmailAddresses = []string{"Ops <öps@example.com>"}
	s.CommonName, s.LiteralSubject = "", "XX=y"
	err := Validate(&s)
	require.Error(t, err)
	count := map[string]int{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		require.True(t, errors.As(e, &fe), "%v is not a *FieldError", e)
		count[fe.Path]++
	}
	assert.Equal(t, map[string]int{"spec.uris[0]": 1, "spec.uris[1]": 1, "spec.emailAddresses[0]": 1, "spec.literalSubject": 1}, count)
}

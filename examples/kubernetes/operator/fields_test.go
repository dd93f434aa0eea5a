package operator

import (
	"reflect"
	"strings"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/renewal"
)

// cert-manager's renewal windows — a cron expression, a duration, a time
// zone — become certlife's where certlife can express them: "M H * *
// DAYS" with a duration under a day in whole minutes. Anything else is
// refused, naming the field.
func TestRenewalWindowsFromCron(t *testing.T) {
	hours := func(h float64) *metav1.Duration {
		return &metav1.Duration{Duration: time.Duration(h * float64(time.Hour))}
	}
	tests := map[string]struct {
		in      cmapi.CertificateRenewalWindows
		want    renewal.Window
		problem string // the field error's path and message begin
	}{
		"every day at 05:30 for two hours": {in: cmapi.CertificateRenewalWindows{Cron: "30 5 * * *", WindowDuration: hours(2)},
			want: renewal.Window{Start: "05:30", End: "07:30"}},
		"weekdays by number, in a time zone": {in: cmapi.CertificateRenewalWindows{Cron: "0 6 * * 1-5", WindowDuration: hours(3), Timezone: "Europe/Oslo"},
			want: renewal.Window{DaysOfWeek: []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}, Start: "06:00", End: "09:00", TimeZone: "Europe/Oslo"}},
		"days by name, in a list, 7 for Sunday": {in: cmapi.CertificateRenewalWindows{Cron: "0 0 ? * SAT,7,wed", WindowDuration: hours(1)},
			want: renewal.Window{DaysOfWeek: []string{"Sunday", "Wednesday", "Saturday"}, Start: "00:00", End: "01:00"}},
		"a range ending in 7": {in: cmapi.CertificateRenewalWindows{Cron: "0 0 * * 5-7", WindowDuration: hours(1)},
			want: renewal.Window{DaysOfWeek: []string{"Sunday", "Friday", "Saturday"}, Start: "00:00", End: "01:00"}},
		"a night window over midnight": {in: cmapi.CertificateRenewalWindows{Cron: "0 22 * * *", WindowDuration: hours(6)},
			want: renewal.Window{Start: "22:00", End: "04:00"}},
		"a window to midnight": {in: cmapi.CertificateRenewalWindows{Cron: "0 22 * * *", WindowDuration: hours(2)},
			want: renewal.Window{Start: "22:00", End: "24:00"}},
		"@weekly": {in: cmapi.CertificateRenewalWindows{Cron: "@weekly", WindowDuration: hours(1)},
			want: renewal.Window{DaysOfWeek: []string{"Sunday"}, Start: "00:00", End: "01:00"}},
		"a step in the minutes": {in: cmapi.CertificateRenewalWindows{Cron: "*/15 5 * * *", WindowDuration: hours(1)},
			problem: `spec.renewal.windows[3].cron: "*/15 5 * * *" is not served`},
		"a day of the month": {in: cmapi.CertificateRenewalWindows{Cron: "0 5 1 * *", WindowDuration: hours(1)},
			problem: "spec.renewal.windows[3].cron:"},
		"a month": {in: cmapi.CertificateRenewalWindows{Cron: "0 5 * 6 *", WindowDuration: hours(1)}, problem: "spec.renewal.windows[3].cron:"},
		"six fields": {in: cmapi.CertificateRenewalWindows{Cron: "0 0 5 * * *", WindowDuration: hours(1)},
			problem: "spec.renewal.windows[3].cron: \"0 0 5 * * *\" is not a cron expression of five fields"},
		"a backwards range": {in: cmapi.CertificateRenewalWindows{Cron: "0 5 * * 5-1", WindowDuration: hours(1)}, problem: "spec.renewal.windows[3].cron:"},
		"no duration":       {in: cmapi.CertificateRenewalWindows{Cron: "0 5 * * *"}, problem: "spec.renewal.windows[3].windowDuration: is required"},
		"a whole day":       {in: cmapi.CertificateRenewalWindows{Cron: "0 5 * * *", WindowDuration: hours(24)}, problem: "spec.renewal.windows[3].windowDuration: 24h0m0s is not served"},
		"seconds":           {in: cmapi.CertificateRenewalWindows{Cron: "0 5 * * *", WindowDuration: &metav1.Duration{Duration: 90 * time.Second}}, problem: "spec.renewal.windows[3].windowDuration: 1m30s"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, problem := windowToCore(tc.in, 3)
			if tc.problem != "" {
				require.NotNil(t, problem)
				assert.True(t, strings.HasPrefix(problem.Error(), tc.problem), "%v", problem)
				return
			}
			require.Nil(t, problem)
			assert.Equal(t, tc.want, got)
			_, err := renewal.Compile([]renewal.Window{got})
			assert.NoError(t, err, "certlife accepts the window")
		})
	}
}

// nonZero is a value of t that is not its zero value (a new struct for a
// pointer, one element for a slice or map).
func nonZero(t reflect.Type) reflect.Value {
	switch t.Kind() {
	case reflect.Pointer:
		return reflect.New(t.Elem())
	case reflect.Slice:
		s := reflect.MakeSlice(t, 1, 1)
		s.Index(0).Set(nonZero(t.Elem()))
		return s
	case reflect.Map:
		m := reflect.MakeMap(t)
		m.SetMapIndex(nonZero(t.Key()), nonZero(t.Elem()))
		return m
	case reflect.String:
		return reflect.ValueOf("x").Convert(t)
	case reflect.Bool:
		return reflect.ValueOf(true)
	}
	return reflect.New(t).Elem()
}

// fieldsClassified checks that every field of T is either served or
// refused — refused ones, set on a spec the operator serves otherwise,
// named by issuerNotServed — so that a field added to cert-manager's
// issuer API and not looked at fails here.
func fieldsClassified[T any](t *testing.T, served []string, refused map[string]string, spec func(set func(*T)) *cmapi.IssuerSpec) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	require.Empty(t, issuerNotServed(spec(func(*T) {})), "the base spec is served")
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(typ.Name()+"."+f.Name, func(t *testing.T) {
			path, isRefused := refused[f.Name]
			if !isRefused {
				assert.Contains(t, served, f.Name, "classify %s.%s as served or refused", typ.Name(), f.Name)
				return
			}
			problems := issuerNotServed(spec(func(v *T) {
				fv := reflect.ValueOf(v).Elem().Field(i)
				if f.Name == "CNAMEStrategy" {
					fv.SetString(cmacme.FollowStrategy)
					return
				}
				fv.Set(nonZero(f.Type))
			}))
			assert.True(t, strings.Contains(strings.Join(problems, "\n"), path), "%s refused, naming %s: %v", f.Name, path, problems)
		})
	}
}

// Every field of cert-manager's issuer API is served or refused by name:
// the ca (with its CRL distribution points, OCSP servers and
// issuing-certificate URLs), selfSigned and acme issuers with HTTP-01 and
// DNS-01 over RFC 2136, Cloudflare, Route 53 or a webhook solver are served; other issuer types and DNS providers
// are refused — the issuer's Ready condition and its requests say so,
// naming the field.
func TestIssuerFieldsServedOrRefused(t *testing.T) {
	acme := func() *cmacme.ACMEIssuer {
		return &cmacme.ACMEIssuer{Server: "https://acme.example/directory", Solvers: []cmacme.ACMEChallengeSolver{{HTTP01: &cmacme.ACMEChallengeSolverHTTP01{}}}}
	}
	fieldsClassified(t, []string{"ACME", "CA", "SelfSigned"}, map[string]string{"Vault": "spec.vault", "Venafi": "spec.venafi"},
		func(set func(*cmapi.IssuerConfig)) *cmapi.IssuerSpec {
			s := &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}
			set(&s.IssuerConfig)
			if s.ACME != nil || s.CA != nil {
				s.SelfSigned = nil
				if s.ACME != nil {
					s.ACME = acme()
				}
				if s.CA != nil {
					s.CA = &cmapi.CAIssuer{SecretName: "ca"}
				}
			}
			return s
		})
	fieldsClassified(t, []string{"SecretName", "CRLDistributionPoints", "OCSPServers", "IssuingCertificateURLs"}, nil,
		func(set func(*cmapi.CAIssuer)) *cmapi.IssuerSpec {
			ca := &cmapi.CAIssuer{SecretName: "ca"}
			set(ca)
			return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: ca}}
		})
	fieldsClassified(t, []string{"CRLDistributionPoints"}, nil,
		func(set func(*cmapi.SelfSignedIssuer)) *cmapi.IssuerSpec {
			ss := &cmapi.SelfSignedIssuer{}
			set(ss)
			return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: ss}}
		})
	fieldsClassified(t, []string{"Email", "Server", "PreferredChain", "CABundle", "SkipTLSVerify", "ExternalAccountBinding", "PrivateKey",
		"Solvers", "DisableAccountKeyGeneration", "EnableDurationFeature", "Profile"}, nil,
		func(set func(*cmacme.ACMEIssuer)) *cmapi.IssuerSpec {
			a := acme()
			set(a)
			a.Solvers = acme().Solvers
			return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: a}}
		})
	fieldsClassified(t, []string{"Selector", "HTTP01", "DNS01"}, map[string]string{"WaitInsteadOfSelfCheck": "spec.acme.solvers[0].waitInsteadOfSelfCheck"},
		func(set func(*cmacme.ACMEChallengeSolver)) *cmapi.IssuerSpec {
			sv := cmacme.ACMEChallengeSolver{HTTP01: &cmacme.ACMEChallengeSolverHTTP01{}}
			set(&sv)
			if sv.DNS01 != nil {
				sv.HTTP01, sv.DNS01 = nil, &cmacme.ACMEChallengeSolverDNS01{RFC2136: &cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "ns:53"}}
			}
			a := acme()
			a.Solvers = []cmacme.ACMEChallengeSolver{sv}
			return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: a}}
		})
	dnsRefused := map[string]string{"CNAMEStrategy": "spec.acme.solvers[0].dns01.cnameStrategy"}
	for _, p := range []struct{ field, json string }{{"Akamai", "akamai"}, {"CloudDNS", "cloudDNS"},
		{"AzureDNS", "azureDNS"}, {"DigitalOcean", "digitalocean"}, {"AcmeDNS", "acmeDNS"}} {
		dnsRefused[p.field] = "spec.acme.solvers[0].dns01." + p.json
	}
	// Cloudflare and Route 53: their fields in TestLibDNSFieldsServedOrRefused.
	fieldsClassified(t, []string{"RFC2136", "Webhook", "Cloudflare", "Route53"}, dnsRefused, func(set func(*cmacme.ACMEChallengeSolverDNS01)) *cmapi.IssuerSpec {
		d := &cmacme.ACMEChallengeSolverDNS01{RFC2136: &cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "ns:53"}}
		set(d)
		if d.RFC2136 != nil && d.RFC2136.Nameserver == "" {
			d.RFC2136.Nameserver = "ns:53"
		}
		a := acme()
		a.Solvers = []cmacme.ACMEChallengeSolver{{DNS01: d}}
		return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: a}}
	})
	fieldsClassified(t, []string{"Nameserver", "TSIGSecret", "TSIGKeyName", "TSIGAlgorithm", "Protocol"}, nil,
		func(set func(*cmacme.ACMEIssuerDNS01ProviderRFC2136)) *cmapi.IssuerSpec {
			r := &cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "ns:53"}
			set(r)
			a := acme()
			a.Solvers = []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{RFC2136: r}}}
			return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: a}}
		})
	fieldsClassified(t, []string{"GroupName", "SolverName", "Config"}, nil,
		func(set func(*cmacme.ACMEIssuerDNS01ProviderWebhook)) *cmapi.IssuerSpec {
			w := &cmacme.ACMEIssuerDNS01ProviderWebhook{GroupName: "acme.example.com", SolverName: "example"}
			set(w)
			a := acme()
			a.Solvers = []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{Webhook: w}}}
			return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: a}}
		})
	// An HTTP-01 solver's Ingress or Gateway route settings are served
	// through the operator's challenge Service; without one they are not
	// used: the issuer's Ready condition says which.
	a := acme()
	a.Solvers[0].HTTP01.Ingress = &cmacme.ACMEChallengeSolverHTTP01Ingress{}
	assert.Empty(t, issuerNotServed(&cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: a}}))
	assert.Contains(t, http01Note(a, ""), "spec.acme.solvers[0].http01 settings are not used")
	assert.Contains(t, http01Note(a, "ops/certlife-http01"), "(Service ops/certlife-http01)")
	assert.NotContains(t, http01Note(a, "ops/certlife-http01"), "podTemplate")
	a.Solvers[0].HTTP01.Ingress.PodTemplate = &cmacme.ACMEChallengeSolverHTTP01IngressPodTemplate{}
	assert.Contains(t, http01Note(a, "ops/certlife-http01"), "podTemplate is not used")
	assert.Empty(t, http01Note(acme(), ""))
	a.Solvers[0].HTTP01.Ingress = &cmacme.ACMEChallengeSolverHTTP01Ingress{Class: new("nginx"), IngressClassName: new("nginx")}
	assert.Equal(t, []string{"spec.acme.solvers[0].http01.ingress: sets both class and ingressClassName; set one"},
		issuerNotServed(&cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: a}}))
	assert.Equal(t, []string{"spec: configures no issuer: set one of ca, selfSigned, acme"}, issuerNotServed(&cmapi.IssuerSpec{}))
	assert.Equal(t, []string{"spec: configures more than one of ca, selfSigned, acme"},
		issuerNotServed(&cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{}, SelfSigned: &cmapi.SelfSignedIssuer{}}}))
}

// The URLs a CA or SelfSigned issuer puts into the certificates it signs
// reach certlife's local CA as options (RFC 5280 §4.2.1.13 CRL
// distribution points, §4.2.2.1 authority information access); one that
// is not an absolute URL makes the issuer not ready, naming the field and
// the value.
func TestCAIssuerURLs(t *testing.T) {
	tests := map[string]struct {
		spec     cmapi.IssuerSpec
		options  int
		problems []string
	}{
		"a CA issuer with every URL": {spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "ca",
			CRLDistributionPoints: []string{"http://crl.example/ca.crl"}, OCSPServers: []string{"http://ocsp.example"},
			IssuingCertificateURLs: []string{"http://ca.example/ca.crt"}}}}, options: 3},
		"a CA issuer with none": {spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "ca"}}}},
		"a SelfSigned issuer with CRL distribution points": {spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{
			SelfSigned: &cmapi.SelfSignedIssuer{CRLDistributionPoints: []string{"http://crl.example/root.crl"}}}}, options: 1},
		"an OCSP server that is not a URL": {spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "ca",
			OCSPServers: []string{"http://ocsp.example", "ocsp.example"}}}}, options: 1,
			problems: []string{`spec.ca.ocspServers[1]: "ocsp.example" is not an absolute URL in ASCII`}},
		"a CRL distribution point of a SelfSigned issuer that is not ASCII": {spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{
			SelfSigned: &cmapi.SelfSignedIssuer{CRLDistributionPoints: []string{"http://crl.exämple/root.crl"}}}}, options: 1,
			problems: []string{`spec.selfSigned.crlDistributionPoints[0]: "http://crl.exämple/root.crl" is not an absolute URL in ASCII`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Len(t, caOptions(&tc.spec), tc.options)
			assert.Equal(t, tc.problems, issuerNotServed(&tc.spec))
		})
	}
}

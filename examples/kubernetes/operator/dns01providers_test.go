package operator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// cloudflareFake is Cloudflare's API v4 as github.com/libdns/cloudflare
// calls it (zones by name; DNS records listed, created, deleted), its
// TXT records served by the test DNS server. It accepts one API token.
type cloudflareFake struct {
	*httptest.Server
	dns   *acmetest.DNS
	token string
	zones map[string]string // id → name, without the final dot

	mu      sync.Mutex
	records map[string]cfRecord
	next    int
	auth    []string // the Authorization headers received
	// onCreate, when set, is called as a record is created.
	onCreate func()
}

type cfRecord struct {
	ID      string `json:"id"`
	ZoneID  string `json:"zone_id"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Content string `json:"content"`
	TTL     int    `json:"ttl"`
}

func startCloudflare(t *testing.T, d *acmetest.DNS, token string, zones map[string]string) *cloudflareFake {
	f := &cloudflareFake{dns: d, token: token, zones: zones, records: map[string]cfRecord{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /client/v4/zones", f.authed(f.listZones))
	mux.HandleFunc("GET /client/v4/zones/{zone}/dns_records", f.authed(f.listRecords))
	mux.HandleFunc("POST /client/v4/zones/{zone}/dns_records", f.authed(f.createRecord))
	mux.HandleFunc("DELETE /client/v4/zones/{zone}/dns_records/{id}", f.authed(f.deleteRecord))
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *cloudflareFake) reply(w http.ResponseWriter, status int, result any, info map[string]int, errs ...string) {
	type cfError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	body := map[string]any{"success": len(errs) == 0, "errors": []cfError{}, "messages": []any{}, "result": result}
	for _, e := range errs {
		body["errors"] = append(body["errors"].([]cfError), cfError{Code: 1000 + status, Message: e})
	}
	if info != nil {
		body["result_info"] = info
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (f *cloudflareFake) authed(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			f.reply(w, http.StatusForbidden, nil, nil, "Authentication error")
			return
		}
		if z := r.PathValue("zone"); z != "" && f.zones[z] == "" {
			f.reply(w, http.StatusNotFound, nil, nil, "Could not route to /zones/"+z)
			return
		}
		h(w, r)
	}
}

func (f *cloudflareFake) listZones(w http.ResponseWriter, r *http.Request) {
	want := strings.TrimSuffix(r.URL.Query().Get("name"), ".")
	out := []map[string]string{}
	for id, name := range f.zones {
		if want == "" || want == name {
			out = append(out, map[string]string{"id": id, "name": name})
		}
	}
	f.reply(w, http.StatusOK, out, map[string]int{"page": 1, "per_page": 50, "count": len(out), "total_count": len(out)})
}

func (f *cloudflareFake) listRecords(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	var out []cfRecord
	for _, rec := range f.records {
		if rec.ZoneID != r.PathValue("zone") || (q.Has("type") && q.Get("type") != rec.Type) || (q.Has("name") && q.Get("name") != rec.Name) ||
			(q.Has("content.contains") && !strings.Contains(rec.Content, q.Get("content.contains"))) {
			continue
		}
		out = append(out, rec)
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b cfRecord) int { return strings.Compare(a.ID, b.ID) })
	perPage, page := 100, 1
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		perPage = v
	}
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}
	total := len(out)
	out = out[min((page-1)*perPage, total):min(page*perPage, total)]
	f.reply(w, http.StatusOK, append([]cfRecord{}, out...), map[string]int{"page": page, "per_page": perPage, "count": len(out), "total_count": total})
}

func (f *cloudflareFake) createRecord(w http.ResponseWriter, r *http.Request) {
	var rec cfRecord
	if err := json.NewDecoder(r.Body).Decode(&rec); err != nil || rec.Type != "TXT" || rec.Name == "" || rec.Content == "" {
		f.reply(w, http.StatusBadRequest, nil, nil, fmt.Sprintf("invalid record (%v)", err))
		return
	}
	zone := f.zones[r.PathValue("zone")]
	if rec.Name = strings.TrimSuffix(strings.ToLower(rec.Name), "."); rec.Name != zone && !strings.HasSuffix(rec.Name, "."+zone) {
		rec.Name += "." + zone // a name relative to the zone
	}
	f.mu.Lock()
	f.next++
	rec.ID, rec.ZoneID = fmt.Sprintf("rec%04d", f.next), r.PathValue("zone")
	f.records[rec.ID] = rec
	f.mu.Unlock()
	f.dns.SetTXT(rec.Name, strings.Trim(rec.Content, `"`))
	if f.onCreate != nil {
		f.onCreate()
	}
	f.reply(w, http.StatusOK, rec, nil)
}

func (f *cloudflareFake) deleteRecord(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	rec, ok := f.records[r.PathValue("id")]
	delete(f.records, rec.ID)
	f.mu.Unlock()
	if !ok || rec.ZoneID != r.PathValue("zone") {
		f.reply(w, http.StatusNotFound, nil, nil, "Record not found")
		return
	}
	f.dns.ClearTXT(rec.Name, strings.Trim(rec.Content, `"`))
	f.reply(w, http.StatusOK, map[string]string{"id": rec.ID}, nil)
}

func (f *cloudflareFake) stored() []cfRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []cfRecord
	for _, r := range f.records {
		out = append(out, r)
	}
	return out
}

func (f *cloudflareFake) authorizations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.auth)
}

// route53Fake is Route 53's REST-XML API (2013-04-01) as
// github.com/libdns/route53 calls it — ListHostedZonesByName,
// ListResourceRecordSets, ChangeResourceRecordSets (CREATE refused for a
// set that exists, DELETE only of the set as it is, UPSERT) — its TXT
// records served by the test DNS server. It accepts requests signed
// (SigV4) with one access key id. GetChange is not called: the operator
// does not ask the module to wait for Route 53's INSYNC, it checks the
// zone's servers itself.
type route53Fake struct {
	*httptest.Server
	dns           *acmetest.DNS
	keyID, secret string
	zones         map[string]string // id → name, with the final dot

	mu   sync.Mutex
	sets map[string]r53Set // by zone id, name, type
	auth []string
	next int

	rmu      sync.Mutex
	refusals []string // the errors answered
}

type r53Set struct {
	Name   string   `xml:"Name"`
	Type   string   `xml:"Type"`
	TTL    int64    `xml:"TTL"`
	Values []string `xml:"ResourceRecords>ResourceRecord>Value"`
}

// r53SetOut is a record set as the fake answers it: encoding/xml puts
// every value of r53Set's path into one ResourceRecord element.
type r53SetOut struct {
	Name    string      `xml:"Name"`
	Type    string      `xml:"Type"`
	TTL     int64       `xml:"TTL"`
	Records []r53Record `xml:"ResourceRecords>ResourceRecord"`
}

type r53Record struct {
	Value string `xml:"Value"`
}

const r53NS = "https://route53.amazonaws.com/doc/2013-04-01/"

func startRoute53(t *testing.T, d *acmetest.DNS, keyID, secret string, zones map[string]string) *route53Fake {
	f := &route53Fake{dns: d, keyID: keyID, secret: secret, zones: zones, sets: map[string]r53Set{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2013-04-01/hostedzonesbyname", f.authed(f.listZones))
	mux.HandleFunc("GET /2013-04-01/hostedzone/{id}/rrset", f.authed(f.listSets))
	mux.HandleFunc("POST /2013-04-01/hostedzone/{id}/rrset", f.authed(f.change))
	mux.HandleFunc("POST /2013-04-01/hostedzone/{id}/rrset/", f.authed(f.change))
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *route53Fake) fail(w http.ResponseWriter, status int, code, msg string) {
	f.rmu.Lock()
	f.refusals = append(f.refusals, code+": "+msg)
	f.rmu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0"?><ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>r</RequestId></ErrorResponse>`,
		r53NS, code, msg)
}

func (f *route53Fake) ok(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "text/xml")
	b, _ := xml.Marshal(v)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

func (f *route53Fake) authed(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		f.mu.Lock()
		f.auth = append(f.auth, a)
		f.mu.Unlock()
		if !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential="+f.keyID+"/") {
			f.fail(w, http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid.")
			return
		}
		if err := f.verify(r); err != nil {
			f.fail(w, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
			return
		}
		if id := r.PathValue("id"); id != "" && f.zones[id] == "" {
			f.fail(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+id)
			return
		}
		h(w, r)
	}
}

// verify checks r's SigV4 signature with the fake's secret access key:
// the request is signed again, over the headers it says it signed, and
// the signatures compared.
func (f *route53Fake) verify(r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	_, params, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	fields := map[string]string{}
	for _, p := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/") // key id, date, region, service, aws4_request
	if len(scope) != 5 {
		return fmt.Errorf("credential %q", fields["Credential"])
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return err
	}
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host":
		case "content-length":
			again.ContentLength = r.ContentLength
		default:
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	err = v4.NewSigner().SignHTTP(r.Context(), aws.Credentials{AccessKeyID: f.keyID, SecretAccessKey: f.secret}, again, hex.EncodeToString(sum[:]),
		scope[3], scope[2], at)
	if err != nil {
		return err
	}
	if got, want := r.Header.Get("Authorization"), again.Header.Get("Authorization"); got != want {
		return fmt.Errorf("signature mismatch: got %s, want %s", got, want)
	}
	return nil
}

func (f *route53Fake) listZones(w http.ResponseWriter, r *http.Request) {
	type zone struct {
		ID              string `xml:"Id"`
		Name            string `xml:"Name"`
		CallerReference string `xml:"CallerReference"`
		PrivateZone     bool   `xml:"Config>PrivateZone"`
	}
	type resp struct {
		XMLName     xml.Name `xml:"ListHostedZonesByNameResponse"`
		NS          string   `xml:"xmlns,attr"`
		Zones       []zone   `xml:"HostedZones>HostedZone"`
		DNSName     string   `xml:"DNSName"`
		IsTruncated bool     `xml:"IsTruncated"`
		MaxItems    string   `xml:"MaxItems"`
	}
	want := dns.Fqdn(strings.ToLower(r.URL.Query().Get("dnsname")))
	out := resp{NS: r53NS, DNSName: want, MaxItems: "100"}
	for id, name := range f.zones {
		if name == want {
			out.Zones = append(out.Zones, zone{ID: "/hostedzone/" + id, Name: name, CallerReference: id})
		}
	}
	f.ok(w, out)
}

func (f *route53Fake) listSets(w http.ResponseWriter, r *http.Request) {
	type resp struct {
		XMLName     xml.Name    `xml:"ListResourceRecordSetsResponse"`
		NS          string      `xml:"xmlns,attr"`
		Sets        []r53SetOut `xml:"ResourceRecordSets>ResourceRecordSet"`
		IsTruncated bool        `xml:"IsTruncated"`
		MaxItems    string      `xml:"MaxItems"`
	}
	out := resp{NS: r53NS, MaxItems: "1000"}
	f.mu.Lock()
	for k, s := range f.sets {
		if strings.HasPrefix(k, r.PathValue("id")+"|") {
			o := r53SetOut{Name: s.Name, Type: s.Type, TTL: s.TTL}
			for _, v := range s.Values {
				o.Records = append(o.Records, r53Record{v}) // one ResourceRecord element per value, as Route 53 answers
			}
			out.Sets = append(out.Sets, o)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(out.Sets, func(a, b r53SetOut) int { return strings.Compare(a.Name+a.Type, b.Name+b.Type) })
	f.ok(w, out)
}

func (f *route53Fake) change(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Changes []struct {
			Action string `xml:"Action"`
			Set    r53Set `xml:"ResourceRecordSet"`
		} `xml:"ChangeBatch>Changes>Change"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Changes) == 0 {
		f.fail(w, http.StatusBadRequest, "InvalidInput", fmt.Sprintf("no changes (%v)", err))
		return
	}
	id := r.PathValue("id")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range req.Changes {
		s := c.Set
		s.Name = dns.Fqdn(strings.ToLower(s.Name))
		if s.Type != "TXT" || !dns.IsSubDomain(f.zones[id], s.Name) {
			f.fail(w, http.StatusBadRequest, "InvalidChangeBatch", "not a TXT record of the zone: "+s.Name)
			return
		}
		key := id + "|" + s.Name + "|" + s.Type
		old, exists := f.sets[key]
		switch c.Action {
		case "CREATE":
			if exists {
				f.fail(w, http.StatusBadRequest, "InvalidChangeBatch", fmt.Sprintf("Tried to create resource record set [name='%s', type='TXT'] but it already exists", s.Name))
				return
			}
		case "DELETE":
			if !exists || old.TTL != s.TTL || !slices.Equal(slices.Sorted(slices.Values(old.Values)), slices.Sorted(slices.Values(s.Values))) {
				f.fail(w, http.StatusBadRequest, "InvalidChangeBatch", fmt.Sprintf("Tried to delete resource record set [name='%s', type='TXT'] but the values provided do not match the current values", s.Name))
				return
			}
		case "UPSERT":
		default:
			f.fail(w, http.StatusBadRequest, "InvalidInput", "unknown action "+c.Action)
			return
		}
		for _, v := range old.Values {
			f.dns.ClearTXT(s.Name, strings.Trim(v, `"`))
		}
		delete(f.sets, key)
		if c.Action != "DELETE" {
			f.sets[key] = s
			for _, v := range s.Values {
				f.dns.SetTXT(s.Name, strings.Trim(v, `"`))
			}
		}
	}
	f.next++
	f.ok(w, struct {
		XMLName     xml.Name `xml:"ChangeResourceRecordSetsResponse"`
		NS          string   `xml:"xmlns,attr"`
		ID          string   `xml:"ChangeInfo>Id"`
		Status      string   `xml:"ChangeInfo>Status"`
		SubmittedAt string   `xml:"ChangeInfo>SubmittedAt"`
	}{NS: r53NS, ID: fmt.Sprintf("/change/C%d", f.next), Status: "PENDING", SubmittedAt: "2026-01-01T00:00:00Z"})
}

func (f *route53Fake) stored() []r53Set {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []r53Set
	for _, s := range f.sets {
		out = append(out, s)
	}
	return out
}

func (f *route53Fake) refused() []string {
	f.rmu.Lock()
	defer f.rmu.Unlock()
	return slices.Clone(f.refusals)
}

func (f *route53Fake) authorizations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.auth)
}

// withDNS01Providers points the operator's libdns providers at the test
// DNS server (to find zones) and Cloudflare's API at cloudflareURL.
func withDNS01Providers(srv *acmetest.Server, cloudflareURL string) func(*manager.Options, *operator.Options) {
	return func(_ *manager.Options, o *operator.Options) {
		o.ACME.DNS01Providers = operator.DNS01ProviderOptions{CloudflareURL: cloudflareURL}
		o.ACME.DNS01Resolver = srv.DNS().Addr()
	}
}

// dns01Issuer makes an ACME Issuer, or a ClusterIssuer, on Pebble with a
// DNS-01 solver and waits until its account is registered; it returns
// the name to put in a Certificate's issuerRef.
func (h *harness) dns01Issuer(kind, name string, srv *acmetest.Server, d cmacme.ACMEChallengeSolverDNS01) string {
	h.t.Helper()
	spec := cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server: srv.DirectoryURL, Email: "ops@example.com", CABundle: srv.CABundle(),
		PrivateKey: secretKey(name+"-account", ""),
		Solvers:    []cmacme.ACMEChallengeSolver{{DNS01: &d}},
	}}}
	var obj client.Object = &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: spec}
	if kind == cmapi.ClusterIssuerKind {
		name = h.ns + "-" + name
		obj = &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		h.t.Cleanup(func() { _ = k8s.Delete(h.ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	}
	require.NoError(h.t, k8s.Create(h.ctx, obj))
	h.eventually(kind+" "+name+" to be Ready", func() bool {
		if err := k8s.Get(h.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false
		}
		c := condition(obj.(cmapi.GenericIssuer).GetStatus().Conditions, "Ready")
		return c != nil && c.Status == cmmeta.ConditionTrue
	})
	return name
}

// A Certificate for a wildcard and its base name, from an Issuer whose
// solver is dns01.cloudflare, becomes Ready through Pebble: the operator
// reads the API token from the Issuer's namespace, github.com/libdns/cloudflare
// sends it to (a fake of) Cloudflare's API, which writes the two values
// at the one record name in the DNS Pebble asks; both are deleted after.
func TestDNS01CloudflareIssues(t *testing.T) {
	srv := pebble(t)
	srv.DNS().AddZone("cf.example")
	cf := startCloudflare(t, srv.DNS(), "cf-token-1", map[string]string{"zone0001": "cf.example"})
	h := newHarness(t)
	// What the Challenges show while a record is written.
	var mu sync.Mutex
	var shown []*cmacme.ACMEIssuerDNS01ProviderCloudflare
	cf.onCreate = func() {
		var l cmacme.ChallengeList
		if err := k8s.List(h.ctx, &l, client.InNamespace(h.ns)); err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, ch := range l.Items {
			if d := ch.Spec.Solver.DNS01; d != nil {
				shown = append(shown, d.Cloudflare)
			}
		}
	}
	h.start(withACME(srv, operator.NewChallengeServer()), withDNS01Providers(srv, cf.URL+"/client/v4"))
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloudflare"}, Data: map[string][]byte{"api-token": []byte("cf-token-1\n")}})
	iss := h.dns01Issuer(cmapi.IssuerKind, "cf", srv, cmacme.ACMEChallengeSolverDNS01{Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{
		Email: "ops@example.com", APIToken: new(secretKey("cloudflare", "api-token"))}})

	h.create(h.certificate("wild", iss, func(s *cmapi.CertificateSpec) { s.DNSNames = []string{"*.cf.example", "cf.example"} }))
	h.waitReady("wild", 1)
	assert.ElementsMatch(t, []string{"*.cf.example", "cf.example"}, h.leafOf("wild-tls").DNSNames)
	h.eventually("the TXT records to be deleted", func() bool { return len(cf.stored()) == 0 })
	assert.Empty(t, srv.DNS().TXT("_acme-challenge.cf.example."), "DNS-01 values left in DNS")
	mu.Lock()
	require.NotEmpty(t, shown, "Challenges listed while records were written")
	for _, c := range shown {
		assert.Equal(t, &cmacme.ACMEIssuerDNS01ProviderCloudflare{Email: "ops@example.com", APIToken: new(secretKey("cloudflare", "api-token"))}, c,
			"the Challenge shows the solver")
	}
	mu.Unlock()
	auth := cf.authorizations()
	assert.GreaterOrEqual(t, len(auth), 4, "zones, create twice, list, delete twice: %d calls", len(auth))
	for _, a := range auth {
		assert.Equal(t, "Bearer cf-token-1", a, "the API token of the Secret, trimmed")
	}
}

// Route 53 solvers: an Issuer's with an access key from its Secrets
// (the key id from a Secret too), and a ClusterIssuer's with ambient
// credentials (the operator's environment), each issue through Pebble,
// the fake of Route 53 receiving requests signed with the key id given.
// An Issuer without an access key is not Ready: ambient credentials are
// a ClusterIssuer's only.
func TestDNS01Route53Issues(t *testing.T) {
	operator.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAAMBIENT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ambient-secret")
	tests := map[string]struct {
		kind   string
		keyID  string
		secret string
		solver func(ns string) *cmacme.ACMEIssuerDNS01ProviderRoute53
		names  []string
	}{
		"an Issuer with an access key from Secrets": {
			kind: cmapi.IssuerKind, keyID: "AKIAFROMSECRET", secret: "not-a-real-secret",
			solver: func(string) *cmacme.ACMEIssuerDNS01ProviderRoute53 {
				return &cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "eu-west-1", SecretAccessKeyID: new(secretKey("aws", "key-id")),
					SecretAccessKey: secretKey("aws", "secret")}
			},
			names: []string{"r53.example", "www.r53.example"},
		},
		"an Issuer with an access key id inline and a hosted zone id, for a wildcard and its base name": {
			kind: cmapi.IssuerKind, keyID: "AKIAINLINE", secret: "not-a-real-secret",
			solver: func(string) *cmacme.ACMEIssuerDNS01ProviderRoute53 {
				return &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKIAINLINE", SecretAccessKey: secretKey("aws", "secret"), HostedZoneID: "Z0R53"}
			},
			names: []string{"*.r53.example", "r53.example"}, // one record name, two values
		},
		"a ClusterIssuer with ambient credentials": {
			kind: cmapi.ClusterIssuerKind, keyID: "AKIAAMBIENT", secret: "ambient-secret",
			solver: func(string) *cmacme.ACMEIssuerDNS01ProviderRoute53 { return &cmacme.ACMEIssuerDNS01ProviderRoute53{} },
			names:  []string{"cluster.r53.example"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := pebble(t)
			srv.DNS().AddZone("r53.example")
			r53 := startRoute53(t, srv.DNS(), tc.keyID, tc.secret, map[string]string{"Z0R53": "r53.example."})
			t.Setenv("AWS_ENDPOINT_URL_ROUTE_53", r53.URL)
			h := newHarness(t)
			h.start(withACME(srv, operator.NewChallengeServer()), withDNS01Providers(srv, ""))
			h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Data: map[string][]byte{
				"key-id": []byte("AKIAFROMSECRET\n"), "secret": []byte("not-a-real-secret\n")}})
			sv := tc.solver(h.ns)
			iss := h.dns01Issuer(tc.kind, "r53", srv, cmacme.ACMEChallengeSolverDNS01{Route53: sv})

			h.create(h.certificate("web", iss, func(s *cmapi.CertificateSpec) {
				s.DNSNames, s.IssuerRef.Kind = tc.names, tc.kind
			}))
			h.waitReady("web", 1)
			assert.ElementsMatch(t, tc.names, h.leafOf("web-tls").DNSNames)
			h.eventually("the TXT record sets to be deleted", func() bool { return len(r53.stored()) == 0 })
			for _, n := range tc.names {
				assert.Empty(t, srv.DNS().TXT("_acme-challenge."+strings.TrimPrefix(n, "*.")+"."), "DNS-01 values left in DNS")
			}
			assert.Empty(t, r53.refused(), "every call answered, signed with the secret access key")
			auth := r53.authorizations()
			require.NotEmpty(t, auth)
			for _, a := range auth {
				assert.True(t, strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential="+tc.keyID+"/"), "signed with %s: %s", tc.keyID, a)
				assert.Contains(t, a, "/route53/aws4_request", "signed for Route 53")
			}
		})
	}
	t.Run("an Issuer without an access key", func(t *testing.T) {
		srv := pebble(t)
		h := newHarness(t)
		h.start(withACME(srv, operator.NewChallengeServer()), withDNS01Providers(srv, ""))
		h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "ambient"}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
			Server: srv.DirectoryURL, CABundle: srv.CABundle(), PrivateKey: secretKey("ambient-account", ""),
			Solvers: []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "us-east-1"}}}},
		}}}})
		var c *cmapi.IssuerCondition
		h.eventually("the Issuer to be refused", func() bool {
			var iss cmapi.Issuer
			if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "ambient"}, &iss); err != nil {
				return false
			}
			c = condition(iss.Status.Conditions, "Ready")
			return c != nil && c.Status == cmmeta.ConditionFalse
		})
		assert.Equal(t, operator.ReasonNotServed, c.Reason)
		assert.Contains(t, c.Message, "spec.acme.solvers[0].dns01.route53: gives no accessKeyID or accessKeyIDSecretRef")
		assert.Contains(t, c.Message, "ClusterIssuers only")

		// Its requests wait, saying why.
		h.create(h.certificate("web", "ambient"))
		h.eventually("the request to wait", func() bool {
			for _, r := range h.requests() {
				if c := condition(r.Status.Conditions, "Ready"); c != nil && strings.Contains(c.Message, "ClusterIssuers only") {
					return c.Status == cmmeta.ConditionFalse && c.Reason == "Pending"
				}
			}
			return false
		})
		assert.Empty(t, h.orders(), "no order")
	})
}

// The fake of Route 53 accepts a request signed with its access key and
// refuses one signed with another secret: its check can fail.
func TestRoute53FakeChecksSignatures(t *testing.T) {
	f := &route53Fake{keyID: "AKIDFAKE", secret: "right"}
	for secret, ok := range map[string]bool{"right": true, "wrong": false} {
		body := []byte("<ChangeResourceRecordSetsRequest/>")
		r := httptest.NewRequest(http.MethodPost, "http://route53.test/2013-04-01/hostedzone/Z1/rrset", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/xml")
		sum := sha256.Sum256(body)
		require.NoError(t, v4.NewSigner().SignHTTP(t.Context(), aws.Credentials{AccessKeyID: "AKIDFAKE", SecretAccessKey: secret}, r,
			hex.EncodeToString(sum[:]), "route53", "us-east-1", time.Now()))
		err := f.verify(r)
		assert.Equal(t, ok, err == nil, "signed with %q: %v", secret, err)
	}
}

// A wildcard and its base name share one TXT record name. On Route 53 the
// second value joins the record set the first made — both are served at
// once, though github.com/libdns/route53 would send a CREATE that Route
// 53 refuses for a set that exists — and each CleanUp takes only its own
// value.
func TestRoute53WildcardAndBaseNameAtOnce(t *testing.T) {
	operator.IsolateAWS(t)
	ctx := context.Background()
	d, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(d.Close)
	d.AddZone("r53.example")
	r53 := startRoute53(t, d, "AKIAINLINE", "not-a-real-secret", map[string]string{"Z0R53": "r53.example."})
	t.Setenv("AWS_ENDPOINT_URL_ROUTE_53", r53.URL)
	p, err := operator.Route53PresenterForTest(ctx, "AKIAINLINE", "not-a-real-secret", "Z0R53", d.Addr())
	require.NoError(t, err)

	base := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "r53.example", Token: "t1", KeyAuthorization: "t1.thumb"}
	wild := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "r53.example", Wildcard: true, Token: "t2", KeyAuthorization: "t2.thumb"}
	name := base.DNS01Name()
	require.NoError(t, p.Present(ctx, base))
	require.NoError(t, p.Present(ctx, wild))
	assert.Empty(t, r53.refused(), "no change refused")
	assert.ElementsMatch(t, []string{base.DNS01Value(), wild.DNS01Value()}, d.TXT(name), "both values served at once")
	require.NoError(t, p.Present(ctx, wild), "presenting again changes nothing")
	assert.ElementsMatch(t, []string{base.DNS01Value(), wild.DNS01Value()}, d.TXT(name))

	require.NoError(t, p.CleanUp(ctx, base))
	assert.Equal(t, []string{wild.DNS01Value()}, d.TXT(name))
	require.NoError(t, p.CleanUp(ctx, wild))
	assert.Empty(t, d.TXT(name))
	assert.Empty(t, r53.stored())
	assert.Empty(t, r53.refused())
}

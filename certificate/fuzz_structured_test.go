package certificate

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/backoff"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// fuzzPool is the material structured snapshots are built from, made once:
// keys, CSRs for several specs and keys, and chains for several keys, names
// and validities.
type fuzzPool struct {
	fx     *fixture
	keys   []crypto.Signer // P-256, P-256, P-384
	keyPEM [][]byte
	specs  []Spec
	csrs   map[[2]int][]byte // (template, key) → CSR
	chains map[[3]int][]byte // (key, names, validity) → chain
	temps  [][]byte          // key → a temporary certificate for the base names
}

// Validity periods of the pool's chains: issued 10 days before t0 for 90
// days; expired before t0; issued 70 days before t0, due for renewal.
var poolValidity = [][2]time.Duration{
	{-10 * 24 * time.Hour, 80 * 24 * time.Hour},
	{-100 * 24 * time.Hour, -10 * 24 * time.Hour},
	{-70 * 24 * time.Hour, 20 * 24 * time.Hour},
}

func newFuzzPool(tb testing.TB) *fuzzPool {
	fx := newFixture(tb)
	p := &fuzzPool{fx: fx, csrs: map[[2]int][]byte{}, chains: map[[3]int][]byte{}}
	for _, spec := range []keys.KeySpec{{Algorithm: keys.AlgorithmECDSA}, {Algorithm: keys.AlgorithmECDSA}, {Algorithm: keys.AlgorithmECDSA, Size: 384}} {
		k := fx.key(spec)
		pemKey, err := keys.EncodePrivateKey(k, keys.EncodingPKCS1)
		require.NoError(tb, err)
		p.keys, p.keyPEM = append(p.keys, k), append(p.keyPEM, pemKey)
	}
	base := testCertificate().Spec
	withAPI := base
	withAPI.DNSNames = []string{"web.example", "www.web.example", "api.web.example"}
	clientAuth := base
	clientAuth.Usages = []keys.Usage{keys.UsageDigitalSignature, keys.UsageClientAuth}
	p384 := base
	p384.PrivateKey = &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 384}
	outputs := base
	outputs.AdditionalOutputFormats = []OutputFormat{OutputCombinedPEM}
	outputs.SecretTemplate = &SecretTemplate{Labels: map[string]string{"team": "web"}}
	jks := base
	jks.Keystores = &Keystores{JKS: &keys.JKSSpec{Password: "changeit"}}
	invalid := base
	invalid.DNSNames = []string{"web example"}
	temporary := base
	temporary.IssueTemporaryCertificate = true
	// A literal subject that encodes as the base's common name does: the
	// base's requests match it.
	literal := temporary
	literal.CommonName, literal.LiteralSubject = "", "CN=web.example"
	literal.AdditionalOutputFormats = []OutputFormat{OutputCombinedPEM}
	p.specs = []Spec{base, withAPI, clientAuth, p384, outputs, jks, invalid, temporary, literal}
	templates := []keys.RequestTemplate{base.Template(), withAPI.Template(), clientAuth.Template()}
	for ti, tmpl := range templates {
		for ki, k := range p.keys {
			p.csrs[[2]int{ti, ki}] = fx.csr(k, tmpl)
		}
	}
	for _, k := range p.keys {
		temp, err := keys.TemporaryCertificate(rand.Reader, k, base.Template(), t0.Add(-time.Hour), t0.Add(90*24*time.Hour))
		require.NoError(tb, err)
		p.temps = append(p.temps, temp)
	}
	for ki, k := range p.keys {
		for ni, tmpl := range templates[:2] {
			for vi, v := range poolValidity {
				p.chains[[3]int{ki, ni, vi}] = fx.sign(k.Public(), tmpl, t0.Add(v[0]), t0.Add(v[1]))
			}
		}
	}
	return p
}

// fuzzReader draws choices from the fuzzer's bytes; 0 once they run out.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) pick(n int) int {
	if len(r.b) == 0 || n <= 1 {
		return 0
	}
	v := int(r.b[0]) % n
	r.b = r.b[1:]
	return v
}

func (r *fuzzReader) flag() bool { return r.pick(2) == 1 }

// snapshot builds a snapshot, a time and a config from the reader.
func (p *fuzzPool) snapshot(r *fuzzReader) (*Snapshot, time.Time, Config) {
	c := testCertificate()
	c.Spec = p.specs[r.pick(len(p.specs))]
	switch r.pick(6) {
	case 1:
		c.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyDisabled}
	case 2:
		c.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{{DaysOfWeek: []string{"Tue"}, Start: "09:00", End: "11:00", TimeZone: "Europe/Oslo"}}}
	case 3:
		c.Spec.RenewBefore = &Duration{40 * 24 * time.Hour}
	case 4:
		c.Spec.RenewBeforePercentage = ptr(int32(50))
	case 5:
		c.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{{Start: "99:00", End: "01:00"}}}
	}
	offsets := []time.Duration{-2 * time.Hour, -time.Minute, -10 * time.Second, 0}
	st := &c.Status
	switch r.pick(3) {
	case 1:
		st.Revision = ptr(1)
	case 2:
		st.Revision = ptr(2)
	}
	switch r.pick(3) {
	case 1:
		st.Conditions = append(st.Conditions, Condition{Type: ConditionReady, Status: StatusTrue, Reason: ReasonReady, LastTransitionTime: t0.Add(-48 * time.Hour), ObservedGeneration: 1})
	case 2:
		st.Conditions = append(st.Conditions, Condition{Type: ConditionReady, Status: StatusFalse, Reason: ReasonDoesNotExist, LastTransitionTime: t0.Add(-48 * time.Hour), ObservedGeneration: 1})
	}
	switch r.pick(4) {
	case 1, 2:
		st.Conditions = append(st.Conditions, Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonRenewing, LastTransitionTime: t0.Add(offsets[r.pick(3)]), ObservedGeneration: 1})
	case 3:
		st.Conditions = append(st.Conditions, Condition{Type: ConditionIssuing, Status: StatusFalse, Reason: ReasonFailed, LastTransitionTime: t0.Add(-time.Hour), ObservedGeneration: 1})
	}
	keySpec := c.Spec.KeySpec()
	nextName := nextKeySecretName(c, nextRevision(c), keySpec)
	switch r.pick(3) {
	case 1:
		st.NextPrivateKeySecretName = nextName
	case 2:
		st.NextPrivateKeySecretName = "web-stale-key"
	}
	if r.flag() {
		st.LastFailureTime = ptr(t0.Add([]time.Duration{-30 * time.Minute, -3 * time.Hour, -40 * time.Hour}[r.pick(3)]))
		st.FailedIssuanceAttempts = []*int{nil, ptr(0), ptr(1), ptr(3)}[r.pick(4)]
	}
	if r.pick(4) == 0 {
		st.RetryAfter = ptr(t0.Add([]time.Duration{-time.Hour, 2 * time.Hour}[r.pick(2)]))
	}

	s := &Snapshot{Certificate: c}
	switch r.pick(6) {
	case 0:
	case 1:
		s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: c.Spec.SecretName, ResourceVersion: "3"},
			Data: map[string][]byte{keys.SecretCertificate: []byte("garbage"), keys.SecretPrivateKey: p.keyPEM[0]}}
	case 5: // a temporary certificate, mostly with its key
		ki := r.pick(len(p.keys))
		s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: c.Spec.SecretName, ResourceVersion: "3", Annotations: map[string]string{AnnotationCertificateName: c.Name}},
			Data: map[string][]byte{keys.SecretCertificate: p.temps[ki], keys.SecretPrivateKey: p.keyPEM[[]int{ki, ki, r.pick(len(p.keys))}[r.pick(3)]]}}
	default:
		ki := r.pick(len(p.keys))
		chain := p.chains[[3]int{r.pick(len(p.keys)), r.pick(2), r.pick(len(poolValidity))}]
		if r.pick(3) > 0 { // mostly a key pair that matches
			chain = p.chains[[3]int{ki, r.pick(2), r.pick(len(poolValidity))}]
		}
		data := map[string][]byte{keys.SecretCertificate: chain, keys.SecretPrivateKey: p.keyPEM[ki], keys.SecretCA: p.fx.caPEM}
		leaf, _ := firstCertificate(chain)
		labels, annotations := secretMetadata(c, leaf)
		if out := outputSpec(&c.Spec); out.CombinedPEM && r.flag() {
			data[keys.SecretCombinedPEM] = combined(p.keyPEM[ki], chain)
		}
		switch r.pick(5) {
		case 1: // drifted metadata
			delete(annotations, AnnotationAltNames)
			labels = nil
		case 2: // another issuer
			annotations[AnnotationIssuerName] = "old-ca"
		case 3: // no certlife annotations
			annotations = nil
		}
		if r.pick(4) == 0 {
			data[keys.SecretKeyDER] = []byte{1}
		}
		s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: c.Spec.SecretName, Namespace: c.Namespace, ResourceVersion: "3", Labels: labels, Annotations: annotations}, Data: data}
	}

	for i, n := 0, r.pick(4); i < n; i++ {
		rev := r.pick(4) // 0: a bad annotation
		name := RequestName(c.Name, rev)
		for _, o := range s.Requests {
			if o.Name == name {
				name = fmt.Sprintf("%s-x%d", name, i)
			}
		}
		ti, ki := r.pick(3), r.pick(len(p.keys))
		req := &CertificateRequest{
			ObjectMeta: ObjectMeta{Name: name, Namespace: c.Namespace, OwnerUID: c.UID,
				Annotations: map[string]string{AnnotationRevision: fmt.Sprint(rev), AnnotationCertificateName: c.Name}},
			Spec: RequestSpec{Request: p.csrs[[2]int{ti, ki}], IssuerRef: c.Spec.IssuerRef, Usages: p.specs[ti].Usages},
		}
		if r.pick(6) == 0 {
			req.Spec.Request = []byte("garbage")
		}
		req.CreationTimestamp = []time.Time{{}, t0.Add(-2 * time.Hour), t0.Add(-30 * time.Second)}[r.pick(3)]
		switch r.pick(6) {
		case 1, 2:
			req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}
			ck := ki
			if r.pick(4) == 0 {
				ck = r.pick(len(p.keys))
			}
			req.Status.Certificate = p.chains[[3]int{ck, r.pick(2), r.pick(len(poolValidity))}]
			req.Status.CA = p.fx.caPEM
		case 3:
			req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "CA down"}}
			req.Status.FailureTime = ptr(t0.Add(offsets[r.pick(len(offsets))]))
			if r.flag() {
				req.Status.RetryAfter = ptr(t0.Add(3 * time.Hour))
			}
		case 4:
			req.Status.Conditions = []Condition{{Type: RequestConditionDenied, Status: StatusTrue, Message: "no"}}
			req.Status.FailureTime = ptr(t0.Add(-10 * time.Second))
		case 5:
			req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue}}
			req.Status.Certificate = []byte("garbage")
		}
		s.Requests = append(s.Requests, req)
	}
	for i, n := 0, r.pick(3); i < n; i++ {
		name := []string{nextName, "web-stale-key", nextKeySecretName(c, nextRevision(c)+1, keySpec)}[r.pick(3)]
		if findSecret(s.NextPrivateKeySecrets, name) != nil {
			continue
		}
		data := []byte("garbage")
		if r.pick(5) > 0 {
			data = p.keyPEM[r.pick(len(p.keys))]
		}
		s.NextPrivateKeySecrets = append(s.NextPrivateKeySecrets, &Secret{
			ObjectMeta: ObjectMeta{Name: name, OwnerUID: c.UID, Labels: map[string]string{LabelNextPrivateKey: "true"}},
			Data:       map[string][]byte{keys.SecretPrivateKey: data}})
	}
	if r.flag() {
		p.coherent(r, s)
	}
	switch r.pick(4) {
	case 1, 2:
		o := testCertificate()
		o.Name, o.UID = "other", "uid-other"
		o.CreationTimestamp = []time.Time{t0.AddDate(-2, 0, 0), t0}[r.pick(2)]
		s.OtherOwners = []*Certificate{o}
	}
	switch r.pick(4) {
	case 1:
		s.ARI = &renewal.ARIWindow{Start: t0.Add(-time.Hour), End: t0.Add(time.Hour)}
	case 2:
		s.ARI = &renewal.ARIWindow{Start: t0.Add(20 * 24 * time.Hour), End: t0.Add(21 * 24 * time.Hour)}
	}
	now := t0.Add([]time.Duration{0, time.Minute, 30 * 24 * time.Hour, 60 * 24 * time.Hour, 95 * 24 * time.Hour}[r.pick(5)])
	var cfg Config
	if r.pick(3) == 0 {
		cfg.CacheGrace = -1
	}
	// Who the secret belongs to, chosen last so that the choices above
	// keep their meaning: the certificate, as the secrets certlife writes
	// are; nobody, so that a secret without certlife's annotations holds
	// data certlife did not write; nobody, but handed over; another object,
	// with the reference operator's annotation.
	if sec := s.Secret; sec != nil {
		switch r.pick(4) {
		case 0:
			sec.OwnerUID = c.UID
		case 2:
			sec.Annotations = maps.Clone(sec.Annotations)
			if sec.Annotations == nil {
				sec.Annotations = map[string]string{}
			}
			sec.Annotations[AnnotationAllowTakeover] = "true"
		case 3:
			sec.OwnerUID = "uid-of-something-else"
			sec.Annotations = maps.Clone(sec.Annotations)
			if sec.Annotations == nil {
				sec.Annotations = map[string]string{}
			}
			sec.Annotations["cert-manager.io/certificate-name"] = c.Name
		}
	}
	return s, now, cfg
}

// coherent makes part of the snapshot consistent, so that the paths which
// need many things to agree are reached: a healthy secret with the current
// revision's request, and an issuance in progress whose request, CSR, next
// key and answer belong together. The reader then perturbs one part.
func (p *fuzzPool) coherent(r *fuzzReader, s *Snapshot) {
	c := s.Certificate
	ti := 0 // the template of the spec, when the pool has its CSRs
	switch {
	case len(c.Spec.DNSNames) == 3:
		ti = 1
	case len(c.Spec.Usages) > 0:
		ti = 2
	}
	ki := r.pick(2) // a P-256 key
	if c.Spec.KeySpec().Size == 384 {
		ki = 2
	}
	names := min(ti, 1)
	if r.flag() { // a healthy revision 1
		c.Status.Revision = ptr(1)
		chain := p.chains[[3]int{ki, names, 0}]
		leaf, _ := firstCertificate(chain)
		labels, annotations := secretMetadata(c, leaf)
		data := map[string][]byte{keys.SecretCertificate: chain, keys.SecretPrivateKey: p.keyPEM[ki], keys.SecretCA: p.fx.caPEM}
		if outputSpec(&c.Spec).CombinedPEM {
			data[keys.SecretCombinedPEM] = combined(p.keyPEM[ki], chain)
		}
		s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: c.Spec.SecretName, Namespace: c.Namespace, ResourceVersion: "5", Labels: labels, Annotations: annotations}, Data: data}
		req := &CertificateRequest{
			ObjectMeta: ObjectMeta{Name: RequestName(c.Name, 1), Namespace: c.Namespace, OwnerUID: c.UID, CreationTimestamp: t0.Add(-11 * 24 * time.Hour),
				Annotations: map[string]string{AnnotationRevision: "1", AnnotationCertificateName: c.Name}},
			Spec:   RequestSpec{Request: p.csrs[[2]int{ti, ki}], IssuerRef: c.Spec.IssuerRef, Usages: c.Spec.Usages},
			Status: RequestStatus{Certificate: chain, CA: p.fx.caPEM, Conditions: []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}},
		}
		s.Requests = append([]*CertificateRequest{req}, s.Requests...)
	}
	if r.flag() { // an issuance in progress, answered or not
		c.Status.Conditions = setCondition(removeCondition(c.Status.Conditions, ConditionIssuing),
			Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonRenewing}, t0.Add(-time.Minute), c.Generation)
		next := nextRevision(c)
		nk := r.pick(len(p.keys))
		if c.Spec.KeySpec().Size == 384 {
			nk = 2
		} else if nk == 2 {
			nk = 1
		}
		name := nextKeySecretName(c, next, c.Spec.KeySpec())
		c.Status.NextPrivateKeySecretName = name
		if findSecret(s.NextPrivateKeySecrets, name) == nil {
			s.NextPrivateKeySecrets = append(s.NextPrivateKeySecrets, &Secret{
				ObjectMeta: ObjectMeta{Name: name, OwnerUID: c.UID, Labels: map[string]string{LabelNextPrivateKey: "true"}},
				Data:       map[string][]byte{keys.SecretPrivateKey: p.keyPEM[nk]}})
		}
		reqName := RequestName(c.Name, next)
		for i, o := range s.Requests {
			if o.Name == reqName {
				s.Requests = append(s.Requests[:i:i], s.Requests[i+1:]...)
				break
			}
		}
		req := &CertificateRequest{
			ObjectMeta: ObjectMeta{Name: reqName, Namespace: c.Namespace, OwnerUID: c.UID, CreationTimestamp: t0.Add(-30 * time.Second),
				Annotations: map[string]string{AnnotationRevision: fmt.Sprint(next), AnnotationCertificateName: c.Name}},
			Spec: RequestSpec{Request: p.csrs[[2]int{ti, nk}], IssuerRef: c.Spec.IssuerRef, Usages: c.Spec.Usages},
		}
		switch r.pick(4) {
		case 1, 2:
			req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}
			req.Status.Certificate = p.chains[[3]int{nk, names, 0}]
			req.Status.CA = p.fx.caPEM
		case 3:
			req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "CA down"}}
			req.Status.FailureTime = ptr(t0.Add(-10 * time.Second))
		}
		s.Requests = append(s.Requests, req)
	}
	// Perturb one part, or none.
	switch r.pick(8) {
	case 1:
		c.Spec = p.specs[r.pick(len(p.specs))]
	case 2:
		c.Spec.Usages = []keys.Usage{keys.UsageDigitalSignature, keys.UsageClientAuth}
	case 3:
		if len(s.NextPrivateKeySecrets) > 0 {
			s.NextPrivateKeySecrets[0].Data = map[string][]byte{keys.SecretPrivateKey: p.keyPEM[r.pick(len(p.keys))]}
		}
	case 6, 7: // the CA answers the last request with another key's certificate, or one that is due
		if n := len(s.Requests); n > 0 && len(s.Requests[n-1].Status.Certificate) > 0 {
			s.Requests[n-1].Status.Certificate = p.chains[[3]int{r.pick(len(p.keys)), min(ti, 1), r.pick(len(poolValidity))}]
		}
	}
}

func combined(keyPEM, chain []byte) []byte {
	out := append([]byte{}, keyPEM...)
	return append(out, chain...)
}

// FuzzReconcileStructured builds snapshots from structured choices —
// every renewal policy, ARI windows, other certificates claiming the
// secret, 0–3 requests in every state, next-key secrets that match or not,
// secrets that drifted — and checks that Reconcile gives exactly what the
// stages run in turn give, and the invariants every decision keeps
// (checkDecision), each stated by the test on its own terms rather than by
// the functions under test: an issuance writes the leaf of the next
// private key from a settled answer, a failure is counted only from a
// settled answer, the backoff is skipped only for a spec fixed since the
// failure, a secret that holds data certlife did not write is never
// written nor issued for (checkHeld), and a decision that does nothing
// says why and when; and that a parse cache changes no decision
// (checkParseCache).
func FuzzReconcileStructured(f *testing.F) {
	pool := newFuzzPool(f)
	f.Add([]byte{})
	f.Add([]byte{0, 0, 1, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 0, 1})
	f.Add([]byte{1, 2, 2, 1, 1, 1, 1, 1, 3, 3, 2, 1, 1, 1, 2, 1, 2, 1, 1, 1, 2, 0, 2, 2, 1, 1, 3, 0, 1})
	f.Add([]byte{4, 0, 1, 1, 2, 1, 0, 0, 3, 0, 0, 0, 1, 1, 1, 2, 1, 2, 0, 0, 1, 1, 1, 1})
	f.Add([]byte{5, 2, 2, 1, 1, 2, 1, 1, 0, 3, 0, 0, 0, 1, 0, 1, 2, 2, 1, 2, 0, 3, 2})
	// A request no issuer has touched yet, within the issuer grace: only
	// the grace's end brings the next pass.
	f.Add([]byte{5, 0, 1, 7, 3, 3, 6, 1, 1, 0, 7, 0, 4, 5, 3, 4, 0, 1, 5, 4, 3, 7, 2, 4, 2})
	// Secrets that hold data certlife did not write (checkHeld): while not
	// issuing; while issuing, with requests; while issuing, over a key
	// pair that matches.
	f.Add([]byte{4, 3, 5, 1, 4, 7, 6, 5, 6, 1, 6, 7, 6, 7, 0, 0, 1, 3, 7, 4, 4, 0, 2, 7, 2, 5, 2, 5, 7, 3})
	f.Add([]byte{0, 0, 1, 7, 6, 6, 0, 5, 4, 4, 3, 6, 1, 0, 6, 6, 1, 1, 6, 5, 0, 5, 6, 2, 5, 3, 6, 1, 3, 1})
	f.Add([]byte{6, 1, 2, 1, 6, 0, 3, 2, 0, 0, 2, 0, 3, 7, 3, 3, 3, 2, 0, 3, 2, 1, 3, 6, 7, 4, 5, 4, 4, 2})
	// One cache for every input, as a host keeps one for every
	// certificate: what one input parsed is what the next finds.
	cache := keys.NewParseCache(1 << 20)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, now, cfg := pool.snapshot(&fuzzReader{b: data})
		checkDecision(t, s, now, cfg)
		checkParseCache(t, s, now, cfg, cache)
	})
}

// checkDecision checks everything a Reconcile decision promises.
func checkDecision(t *testing.T, s *Snapshot, now time.Time, cfg Config) {
	before, err := json.Marshal(s)
	require.NoError(t, err)
	res := Reconcile(s, now, cfg)
	after, _ := json.Marshal(s)
	require.Equal(t, string(before), string(after), "Reconcile changed the snapshot it was given")
	if diff := cmp.Diff(res, Reconcile(s, now, cfg)); diff != "" {
		t.Fatalf("same input, different results:\n%s", diff)
	}
	checkEqualsStages(t, s, now, cfg, res)
	checkLiveness(t, s, now, cfg)
	if quiet, ok := quiesce(t, s, now, cfg); ok {
		checkLiveness(t, quiet, now, cfg)
	}

	checkActions(t, s, now, cfg, res)
	// The issuing stage alone keeps them too: a host may run it on a
	// snapshot where no requestmanager has removed an outdated request.
	checkActions(t, s, now, cfg, Issue(s, now, cfg))
	checkHeld(t, s, now, cfg, res)
	// What the host stored is never lost: a write only replaces a secret
	// the decision read, at the version it read.
	for _, a := range res.Actions {
		if w, ok := a.(WriteSecret); ok && s.Secret != nil {
			require.Equal(t, s.Secret.ResourceVersion, w.ResourceVersion, "%v does not carry the version of the secret read", w)
		}
	}
}

// checkActions checks what a decision's actions promise: owners set, at
// most one request made and only while issuing, an issuance that writes
// the leaf of the next private key from a settled answer and never one
// due for renewal on arrival, a failure
// counted only from a settled answer, and no issuance started before the
// backoff allows unless the spec was fixed since the failure.
func checkActions(t *testing.T, s *Snapshot, now time.Time, cfg Config, res Result) {
	t.Helper()
	c := s.Certificate
	final := c.Status
	creates := 0
	for _, a := range res.Actions {
		if u, ok := a.(UpdateStatus); ok {
			final = u.Status
		}
	}
	next := 1 // the revision an issuance makes
	if c.Status.Revision != nil && *c.Status.Revision >= 0 {
		next = *c.Status.Revision + 1
	}
	for _, a := range res.Actions {
		switch a := a.(type) {
		case GenerateKey:
			require.NotEmpty(t, a.OwnerUID, "%v has no owner", a)
		case CreateRequest:
			creates++
			require.NotEmpty(t, a.Request.OwnerUID, "%v has no owner", a)
		case WriteSecret:
			require.NotEmpty(t, a.OwnerUID, "%v has no owner", a)
			if a.KeySecretName == a.Name {
				continue // a repair, from the secret's own key and chain
			}
			// An issuance writes the leaf of the next private key — the
			// one the status names — and only a settled answer: the chain
			// of a request of the next revision whose CSR is for that key
			// and that asks what the spec asks.
			require.Equal(t, final.NextPrivateKeySecretName, a.KeySecretName, "%v writes another key than the next private key", a)
			key := secretKey(findSecret(s.NextPrivateKeySecrets, a.KeySecretName))
			require.NotNil(t, key, "%v writes a key the snapshot does not hold", a)
			leaf, err := firstCertificate(a.Chain)
			require.NoError(t, err, "%v writes a chain that cannot be read", a)
			require.True(t, keys.PublicKeysEqual(leaf.PublicKey, key.Public()), "%v writes a leaf that is not for the next private key", a)
			settled := false
			for _, r := range s.Requests {
				settled = settled || (string(r.Status.Certificate) == string(a.Chain) && annotatedRevision(r) == next &&
					csrIsFor(r, key.Public()) && asksWhatSpecAsks(r, &c.Spec))
			}
			require.True(t, settled, "%v writes an answer that is not a settled request's of revision %d", a, next)
			// And never one already due for renewal: the next pass would
			// issue again, a loop.
			in := renewal.Input{NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter, JitterKey: c.UID}
			if c.Spec.RenewBefore != nil {
				in.RenewBefore = c.Spec.RenewBefore.Duration
			}
			if c.Spec.RenewBeforePercentage != nil {
				in.RenewBeforePercentage = *c.Spec.RenewBeforePercentage
			}
			if c.Spec.Renewal != nil {
				in.Spec = *c.Spec.Renewal
			}
			d := renewal.Decide(in, now, cfg.Renewal)
			require.False(t, d.Renew, "%v writes a certificate due for renewal on arrival: %s", a, d.Message)
		}
	}
	// A temporary certificate is written only while issuing, when the spec
	// asks, for the next private key, into a secret that holds no usable
	// certificate and key, at the version read, and never beside an
	// issuance's write.
	for _, a := range res.Actions {
		w, ok := a.(WriteTemporaryCertificate)
		if !ok {
			continue
		}
		require.True(t, c.Spec.IssueTemporaryCertificate, "%v: the spec does not ask for it", w)
		require.NotEmpty(t, w.OwnerUID, "%v has no owner", w)
		require.NotNil(t, issuing(&Certificate{Status: final}), "%v while not issuing", w)
		require.Equal(t, final.NextPrivateKeySecretName, w.KeySecretName, "%v is not for the next private key", w)
		require.NotNil(t, secretKey(findSecret(s.NextPrivateKeySecrets, w.KeySecretName)), "%v is for a key the snapshot does not hold", w)
		require.Equal(t, c.Spec.SecretName, w.Name)
		if s.Secret != nil {
			require.Equal(t, s.Secret.ResourceVersion, w.ResourceVersion, "%v does not carry the version of the secret read", w)
			parsed, _ := keys.ParseSecretData(s.Secret.Data)
			require.False(t, parsed != nil && parsed.Leaf != nil && parsed.Key != nil && parsed.KeyMatches, "%v over a usable certificate and key", w)
		} else {
			require.Empty(t, w.ResourceVersion)
		}
		for _, b := range res.Actions {
			_, write := b.(WriteSecret)
			require.False(t, write, "%v beside %v", w, b)
		}
	}
	require.LessOrEqual(t, creates, 1, "requests created in one pass")
	if creates == 1 {
		require.NotNil(t, issuing(&Certificate{Status: final}), "a request was created while not issuing")
	}
	// A failure is counted only from a settled answer: a request of the
	// next revision, for the next private key the status names (the pass
	// may adopt one), that asks what the spec asks.
	if final.LastFailureTime != nil && !timePtrEqual(final.LastFailureTime, c.Status.LastFailureTime) {
		key := secretKey(findSecret(s.NextPrivateKeySecrets, final.NextPrivateKeySecretName))
		settled := false
		for _, r := range s.Requests { // a snapshot may hold two requests for one revision
			settled = settled || (key != nil && annotatedRevision(r) == next && csrIsFor(r, key.Public()) && asksWhatSpecAsks(r, &c.Spec))
		}
		require.True(t, settled, "a failure was recorded at %v from a request that is not settled", *final.LastFailureTime)
	}
	// No issuance starts before the backoff allows, unless a request of
	// the failed attempt no longer asks what the spec asks (the user fixed
	// the spec).
	if issuing(c) == nil && issuing(&Certificate{Status: final}) != nil {
		// The retries leave the renewal fail-safe margin the host set.
		pol := cfg.Backoff
		if pol.SafetyMargin == 0 {
			pol.SafetyMargin = cfg.Renewal.SafetyMargin
		}
		if b := pol.Decide(backoffOf(s), now); b.Wait {
			fixed := false
			for _, r := range s.Requests {
				fixed = fixed || (annotatedRevision(r) == next && !asksWhatSpecAsks(r, &c.Spec))
			}
			require.True(t, fixed, "issuance started at %v before the backoff allows (%v)", now, b.NextAttempt)
		}
	}
}

// checkHeld: a secret that holds data certlife did not write (heldByTest)
// is never written, and nothing is made for it — no key, no request —
// by the decision or by any stage alone; the certificate is not Ready,
// SecretNotOwned, and the decision names a time to look again.
func checkHeld(t *testing.T, s *Snapshot, now time.Time, cfg Config, res Result) {
	t.Helper()
	if !heldByTest(s) {
		return
	}
	for _, r := range []Result{res, Trigger(s, now, cfg), KeyManager(s, now, cfg), RequestManager(s, now, cfg), Issue(s, now, cfg), Readiness(s, now, cfg)} {
		for _, a := range r.Actions {
			switch a.(type) {
			case GenerateKey, CreateRequest, WriteSecret:
				t.Fatalf("%s asked for %v while secret %s holds data certlife did not write", r.Stage, a, s.Secret.Name)
			}
		}
	}
	st := s.Certificate.Status
	for _, a := range res.Actions {
		if u, ok := a.(UpdateStatus); ok {
			st = u.Status
		}
	}
	ready := st.Condition(ConditionReady)
	require.NotNil(t, ready, "no Ready condition over a secret certlife did not write")
	require.Equal(t, StatusFalse+"/"+ReasonSecretNotOwned, ready.Status+"/"+ready.Reason, ready.Message)
	require.False(t, res.RequeueAt.IsZero(), "a certificate whose secret is held names no time to look again")
}

// heldByTest: the snapshot's secret exists, is not owned by the
// certificate, carries none of the annotations certlife and cert-manager
// write on the secrets they issue into, is not handed over with
// certlife.dev/allow-takeover "true", and holds a non-empty value.
func heldByTest(s *Snapshot) bool {
	sec := s.Secret
	if sec == nil || sec.OwnerUID == s.Certificate.UID || sec.Annotations["certlife.dev/allow-takeover"] == "true" {
		return false
	}
	for _, k := range []string{"certlife.dev/certificate-name", "certlife.dev/issuer-name", "cert-manager.io/certificate-name", "cert-manager.io/issuer-name"} {
		if sec.Annotations[k] != "" {
			return false
		}
	}
	for _, v := range sec.Data {
		if len(v) > 0 {
			return true
		}
	}
	return false
}

// The test's own statements of what the stages decide by, written apart
// from the code under test (requestMismatch, failedRequestMismatchesSpec),
// so that a fuzz failure means the property broke, not that the two agree.

// asksWhatSpecAsks: the request's CSR parses with crypto/x509 and names
// the spec's identifiers (a name may sit in the common name or the DNS
// names), its key is of the spec's algorithm and size, and its spec has
// the spec's issuer, duration, isCA and usages (as sets; none means
// digital signature and key encipherment). The pool builds every CSR's
// requested usages from the same template as the request's usages, so the
// request's usages stand for both.
func asksWhatSpecAsks(r *CertificateRequest, spec *Spec) bool {
	csr := csrOf(r)
	if csr == nil {
		return false
	}
	nameSet := func(cn string, dns []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range append([]string{cn}, dns...) {
			if n != "" {
				m[strings.ToLower(n)] = true
			}
		}
		return m
	}
	var ips []string
	for _, ip := range csr.IPAddresses {
		ips = append(ips, ip.String())
	}
	var uris []string
	for _, u := range csr.URIs {
		uris = append(uris, u.String())
	}
	ref := func(i IssuerRef) IssuerRef {
		if i.Kind == "" {
			i.Kind = "Issuer"
		}
		if i.Group == "" {
			i.Group = "certlife.dev"
		}
		return i
	}
	usages := func(us []keys.Usage) map[keys.Usage]bool {
		if len(us) == 0 {
			us = []keys.Usage{keys.UsageDigitalSignature, keys.UsageKeyEncipherment}
		}
		m := map[keys.Usage]bool{}
		for _, u := range us {
			m[u] = true
		}
		return m
	}
	dur := func(d *Duration) time.Duration {
		if d == nil {
			return 0
		}
		return d.Duration
	}
	return maps.Equal(nameSet(csr.Subject.CommonName, csr.DNSNames), nameSet(spec.CommonName, spec.DNSNames)) &&
		sameStrings(ips, spec.IPAddresses) && sameStrings(uris, spec.URIs) && sameStrings(csr.EmailAddresses, spec.EmailAddresses) &&
		keyIsOfSpec(csr.PublicKey, spec) &&
		ref(r.Spec.IssuerRef) == ref(spec.IssuerRef) && dur(r.Spec.Duration) == dur(spec.Duration) &&
		r.Spec.IsCA == spec.IsCA && maps.Equal(usages(r.Spec.Usages), usages(spec.Usages))
}

// keyIsOfSpec: the pool's keys are ECDSA; the spec asks P-256 unless it
// names a size.
func keyIsOfSpec(pub crypto.PublicKey, spec *Spec) bool {
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return false
	}
	want, alg := 256, keys.AlgorithmECDSA
	if spec.PrivateKey != nil {
		if spec.PrivateKey.Algorithm != "" {
			alg = spec.PrivateKey.Algorithm
		}
		if spec.PrivateKey.Size != 0 {
			want = spec.PrivateKey.Size
		}
	}
	return alg == keys.AlgorithmECDSA && k.Curve.Params().BitSize == want
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// csrOf parses a request's CSR with encoding/pem and crypto/x509; nil
// when it does not parse. (Its signature is the issuer's to check.)
func csrOf(r *CertificateRequest) *x509.CertificateRequest {
	block, _ := pem.Decode(r.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil
	}
	return csr
}

// csrIsFor: the request's CSR is for that key.
func csrIsFor(r *CertificateRequest, pub crypto.PublicKey) bool {
	csr := csrOf(r)
	return csr != nil && keys.PublicKeysEqual(csr.PublicKey, pub)
}

// annotatedRevision is the request's revision annotation, 0 when it is
// not a positive number.
func annotatedRevision(r *CertificateRequest) int {
	n, err := strconv.Atoi(r.Annotations[AnnotationRevision])
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// secretKey decodes a secret's tls.key; nil for no secret or no key.
func secretKey(sec *Secret) crypto.Signer {
	if sec == nil {
		return nil
	}
	k, err := keys.DecodePrivateKey(sec.Data[keys.SecretPrivateKey])
	if err != nil {
		return nil
	}
	return k
}

// backoffOf is the backoff input the status records: the failures, the
// CA's Retry-After, and the expiry of the certificate in the secret.
func backoffOf(s *Snapshot) backoff.Input {
	st := s.Certificate.Status
	in := backoff.Input{FailedAttempts: st.FailedIssuanceAttempts, JitterKey: s.Certificate.UID}
	if st.LastFailureTime != nil {
		in.LastFailure = *st.LastFailureTime
	}
	if st.RetryAfter != nil {
		in.RetryAfter = *st.RetryAfter
	}
	if s.Secret != nil {
		if leaf, err := firstCertificate(s.Secret.Data[keys.SecretCertificate]); err == nil {
			in.NotBefore, in.NotAfter = leaf.NotBefore, leaf.NotAfter
		}
	}
	return in
}

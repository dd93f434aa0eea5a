package certificate

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	upn       = keys.OtherName{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "web@corp.example"}
	corpOnly  = &keys.NameConstraints{Critical: true, Permitted: &keys.NameConstraintItem{DNSDomains: []string{"corp.example"}, IPRanges: []string{"10.0.0.0/8"}}}
	falsePtr  = ptr(false)
	twoOthers = []keys.OtherName{upn, {OID: "1.2.3.4", UTF8Value: "x"}}
)

// healthyWith is f.healthy for a spec changed by mutate before the
// certificate was issued: its request was made from that spec.
func (f *fixture) healthyWith(issuedAt time.Time, mutate func(*Spec)) *Snapshot {
	s, key := f.healthy(issuedAt)
	mutate(&s.Certificate.Spec)
	c := s.Certificate
	req := f.request(c, 1, key)
	req.Status = s.Requests[0].Status
	s.Requests[0] = req
	return s
}

// The fields cert-manager users write are part of what a request must
// match: changing one re-issues (RequestChanged, naming the field), and a
// change that asks for the very same request does not.
func TestCertManagerFieldsReissueOnChange(t *testing.T) {
	f := newFixture(t)
	issued := t0.Add(-10 * 24 * time.Hour)
	base := func(s *Spec) {
		s.CommonName, s.LiteralSubject = "", "CN=web.example,O=acme"
		s.OtherNames = twoOthers
		s.IsCA, s.NameConstraints = true, corpOnly
	}
	tests := map[string]struct {
		change func(*Spec)
		field  string // "" for no re-issue
	}{
		"nothing changed":                   {change: func(*Spec) {}},
		"the other names in another order":  {change: func(s *Spec) { s.OtherNames = []keys.OtherName{twoOthers[1], twoOthers[0]} }},
		"a temporary certificate asked for": {change: func(s *Spec) { s.IssueTemporaryCertificate = true }},
		"the literal subject written as commonName and subject, which encode the same": {change: func(s *Spec) {
			s.LiteralSubject, s.CommonName, s.Subject = "", "web.example", &keys.Subject{Organizations: []string{"acme"}}
		}},
		"another literal subject": {change: func(s *Spec) { s.LiteralSubject = "CN=web.example,O=other" }, field: "literalSubject: want"},
		"an other name removed":   {change: func(s *Spec) { s.OtherNames = []keys.OtherName{upn} }, field: "otherNames: want"},
		"name constraints widened": {change: func(s *Spec) {
			s.NameConstraints = &keys.NameConstraints{Critical: true, Permitted: &keys.NameConstraintItem{DNSDomains: []string{"example"}, IPRanges: []string{"10.0.0.0/8"}}}
		}, field: "nameConstraints: want"},
		"usages no longer encoded in the request": {change: func(s *Spec) { s.EncodeUsagesInRequest = falsePtr }, field: "usages: want none in the request"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := f.healthyWith(issued, base)
			tc.change(&s.Certificate.Spec)
			res := Trigger(s, t0, Config{})
			if tc.field == "" {
				assert.Equal(t, ReasonUpToDate, res.Reason, res.Message)
				assert.Empty(t, res.Actions)
				return
			}
			assert.Equal(t, ReasonRequestChanged, res.Reason)
			assert.Contains(t, res.Message, tc.field)
			require.Len(t, res.Actions, 1)
			st := finalStatus(s, res)
			assert.Equal(t, ReasonRequestChanged, st.Condition(ConditionIssuing).Reason)
		})
	}
}

// temporaryPEM is a temporary certificate for key and the certificate's
// names, as a host makes it.
func temporaryPEM(t *testing.T, key crypto.Signer, c *Certificate) []byte {
	t.Helper()
	p, err := keys.TemporaryCertificate(rand.Reader, key, c.Spec.Template(), t0.Add(-time.Minute), t0.Add(DefaultDuration))
	require.NoError(t, err)
	return p
}

func pemKey(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	p, err := keys.EncodePrivateKey(key, keys.EncodingPKCS1)
	require.NoError(t, err)
	return p
}

func temporaryWrites(res Result) []WriteTemporaryCertificate {
	var out []WriteTemporaryCertificate
	for _, a := range res.Actions {
		if w, ok := a.(WriteTemporaryCertificate); ok {
			out = append(out, w)
		}
	}
	return out
}

// With spec.issueTemporaryCertificate, the issuing stage writes a
// temporary certificate for the next private key while the first issuance
// waits for the issuer and the secret holds no usable certificate and key
// — once, and never over a usable pair, another certificate's secret, or
// an answer it can act on.
// certlifeWrote marks a secret certlife wrote (a temporary certificate is
// written with it): one it did not write is never written over.
var certlifeWrote = map[string]string{AnnotationCertificateName: "web"}

func TestTemporaryCertificateIsWrittenWhileTheFirstIssuanceRuns(t *testing.T) {
	f := newFixture(t)
	tests := map[string]struct {
		mutate func(t *testing.T, r renewing)
		// written: a WriteTemporaryCertificate is asked; its
		// ResourceVersion is that of the secret read ("" for none).
		written bool
		rv      string
		reason  string
	}{
		"the secret is missing and the request waits for the issuer": {mutate: func(*testing.T, renewing) {}, written: true},
		"the secret is missing and no request is made yet":           {mutate: func(_ *testing.T, r renewing) { r.s.Requests = nil }, written: true},
		"the secret lacks tls.key": {mutate: func(_ *testing.T, r renewing) {
			r.s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: "web-tls", ResourceVersion: "3", Annotations: certlifeWrote}, Data: map[string][]byte{keys.SecretCertificate: temporaryPEM(t, r.nextKey, r.s.Certificate)}}
		}, written: true, rv: "3"},
		"the secret's key is not its certificate's": {mutate: func(t *testing.T, r renewing) {
			r.s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: "web-tls", ResourceVersion: "4", Annotations: certlifeWrote}, Data: map[string][]byte{
				keys.SecretCertificate: temporaryPEM(t, r.nextKey, r.s.Certificate), keys.SecretPrivateKey: pemKey(t, f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}))}}
		}, written: true, rv: "4"},
		"a secret certlife did not write, holding a certificate: nothing is written into it": {mutate: func(t *testing.T, r renewing) {
			r.s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: "web-tls", ResourceVersion: "6"}, Data: map[string][]byte{
				keys.SecretCertificate: temporaryPEM(t, r.nextKey, r.s.Certificate)}}
		}, reason: ReasonSecretNotOwned},
		"the spec does not ask for one": {mutate: func(_ *testing.T, r renewing) { r.s.Certificate.Spec.IssueTemporaryCertificate = false },
			reason: ReasonRequestPending},
		"the secret holds the temporary certificate already": {mutate: func(t *testing.T, r renewing) {
			r.s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: "web-tls", ResourceVersion: "5", Annotations: certlifeWrote}, Data: map[string][]byte{
				keys.SecretCertificate: temporaryPEM(t, r.nextKey, r.s.Certificate), keys.SecretPrivateKey: pemKey(t, r.nextKey)}}
		}, reason: ReasonRequestPending},
		"the next private key is not readable yet": {mutate: func(_ *testing.T, r renewing) { r.s.NextPrivateKeySecrets = nil }, reason: ReasonRequestPending},
		"the request is issued: the issued certificate is written instead": {mutate: func(_ *testing.T, r renewing) {
			r.req.Status.Certificate = f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0.Add(-time.Minute), t0.Add(DefaultDuration))
			r.req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}
		}, reason: ReasonIssued},
		"the request failed: the failure is recorded instead": {mutate: func(_ *testing.T, r renewing) {
			failRequest(r.req, Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "CA down"})
		}, reason: ReasonFailed},
		"the secret belongs to an older certificate": {mutate: func(_ *testing.T, r renewing) {
			other := testCertificate()
			other.Name, other.UID, other.CreationTimestamp = "old", "uid-old", t0.AddDate(-1, 0, 0)
			r.s.OtherOwners = []*Certificate{other}
		}, reason: ReasonRequestPending},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.firstIssuance()
			r.s.Certificate.Spec.IssueTemporaryCertificate = true
			tc.mutate(t, r)
			res := Issue(r.s, t0, Config{})
			got := temporaryWrites(res)
			if !tc.written {
				assert.Empty(t, got)
				assert.Equal(t, tc.reason, res.Reason, res.Message)
				return
			}
			c := r.s.Certificate
			require.Len(t, res.Actions, 1, "%v", res.Actions)
			require.Len(t, got, 1)
			assert.Equal(t, WriteTemporaryCertificate{
				Name: "web-tls", OwnerUID: c.UID, KeySecretName: c.Status.NextPrivateKeySecretName,
				Template: c.Spec.Template(), NotBefore: t0, NotAfter: t0.Add(DefaultDuration),
				Output:          keys.OutputSpec{KeyEncoding: keys.EncodingPKCS1},
				Annotations:     map[string]string{AnnotationCertificateName: "web"},
				ResourceVersion: tc.rv,
			}, got[0])
			assert.Equal(t, ReasonWritingTemporaryCertificate, res.Reason)
			assert.Contains(t, res.Message, "writing a temporary certificate for the next private key "+c.Status.NextPrivateKeySecretName)
			assert.Equal(t, got, temporaryWrites(Reconcile(r.s, t0, Config{})), "Reconcile asks for it too")
		})
	}

	t.Run("the secret template's labels and annotations, and the spec's duration and outputs", func(t *testing.T) {
		r := f.firstIssuance()
		c := r.s.Certificate
		c.Spec.IssueTemporaryCertificate = true
		c.Spec.Duration = &Duration{48 * time.Hour}
		c.Spec.AdditionalOutputFormats = []OutputFormat{OutputCombinedPEM}
		c.Spec.SecretTemplate = &SecretTemplate{Labels: map[string]string{"team": "web"},
			Annotations: map[string]string{"note": "x", AnnotationCertificateName: "not-ours"}}
		got := temporaryWrites(Issue(r.s, t0, Config{}))
		require.Len(t, got, 1)
		assert.Equal(t, t0.Add(48*time.Hour), got[0].NotAfter)
		assert.Equal(t, map[string]string{"team": "web"}, got[0].Labels)
		assert.Equal(t, map[string]string{"note": "x", AnnotationCertificateName: "web"}, got[0].Annotations)
		assert.True(t, got[0].Output.CombinedPEM)
	})
}

// A secret holding only a temporary certificate — certlife's, or the
// reference operator's (issuer cert-manager.local, subject serial number
// 1234567890), met when moving from it — is not Ready and reports no
// validity; it is issued (after the backoff, when an issuance failed).
// Right after an issuance, a read of the secret that still shows the
// temporary certificate is a cache behind the write, not a reason to
// issue again.
func TestTemporaryCertificateIsNotReady(t *testing.T) {
	f := newFixture(t)
	withTemporary := func(t *testing.T, s *Snapshot, key crypto.Signer) {
		s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: "web-tls", ResourceVersion: "5", Annotations: map[string]string{AnnotationCertificateName: "web"}},
			Data: map[string][]byte{keys.SecretCertificate: temporaryPEM(t, key, s.Certificate), keys.SecretPrivateKey: pemKey(t, key)}}
	}

	t.Run("while the first issuance runs", func(t *testing.T) {
		r := f.firstIssuance()
		withTemporary(t, r.s, r.nextKey)
		res := Readiness(r.s, t0, Config{})
		st := finalStatus(r.s, res)
		ready := st.Condition(ConditionReady)
		assert.Equal(t, StatusFalse, ready.Status)
		assert.Equal(t, ReasonTemporaryCertificate, ready.Reason)
		assert.Contains(t, ready.Message, "secret web-tls holds a temporary certificate, issued by "+keys.TemporaryIssuerName)
		assert.Nil(t, st.NotAfter)
		assert.Nil(t, st.NotBefore)
		assert.Nil(t, st.RenewalTime)
	})

	t.Run("after a failure the backoff holds the next attempt, then it is issued", func(t *testing.T) {
		r := f.firstIssuance()
		c := r.s.Certificate
		withTemporary(t, r.s, r.nextKey)
		c.Status.Conditions = []Condition{{Type: ConditionIssuing, Status: StatusFalse, Reason: ReasonFailed, LastTransitionTime: t0.Add(-time.Minute)}}
		c.Status.LastFailureTime, c.Status.FailedIssuanceAttempts = ptr(t0.Add(-time.Minute)), ptr(1)
		res := Trigger(r.s, t0, Config{})
		assert.Equal(t, ReasonBackoff, res.Reason)
		assert.Contains(t, res.Message, "issuance needed (TemporaryCertificate: secret web-tls holds a temporary certificate")
		res = Trigger(r.s, t0.Add(2*time.Hour), Config{})
		assert.Equal(t, ReasonTemporaryCertificate, res.Reason)
		require.NotNil(t, issuing(&Certificate{Status: finalStatus(r.s, res)}))
	})

	t.Run("the reference operator's temporary certificate is issued over", func(t *testing.T) {
		s, key := f.healthy(t0.Add(-time.Hour))
		leaf := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "web.example", SerialNumber: "1234567890"},
			DNSNames: []string{"web.example", "www.web.example"}, NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(DefaultDuration)}
		der, err := x509.CreateCertificate(rand.Reader, leaf, &x509.Certificate{Subject: pkix.Name{CommonName: "cert-manager.local"}}, key.Public(), key)
		require.NoError(t, err)
		s.Secret.Data[keys.SecretCertificate] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		s.Requests, s.Certificate.Status.Revision = nil, nil
		res := Reconcile(s, t0, Config{})
		assert.Equal(t, ReasonTemporaryCertificate, res.IssuanceReason, res.Message)
		st := finalStatus(s, res)
		assert.Equal(t, ReasonTemporaryCertificate, st.Condition(ConditionReady).Reason)
	})

	t.Run("a read cache that still shows it right after the issuance", func(t *testing.T) {
		r := f.firstIssuance()
		c := r.s.Certificate
		withTemporary(t, r.s, r.nextKey)
		c.Status.Conditions = []Condition{{Type: ConditionReady, Status: StatusTrue, Reason: ReasonReady, LastTransitionTime: t0.Add(-time.Second)}}
		c.Status.Revision, c.Status.NextPrivateKeySecretName = ptr(1), ""
		r.s.NextPrivateKeySecrets = nil
		r.req.Status.Certificate = f.sign(r.nextKey.Public(), c.Spec.Template(), t0.Add(-time.Minute), t0.Add(DefaultDuration))
		r.req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}
		res := Reconcile(r.s, t0, Config{})
		assert.Equal(t, ReasonSecretNotCaughtUp, res.Steps[0].Reason, res.Steps[0].Message)
		assert.Contains(t, res.Steps[0].Message, "secret web-tls still shows the temporary certificate")
		assert.Empty(t, res.Actions, "no new issuance, no status change")
		assert.Equal(t, t0.Add(-30*time.Second).Add(5*time.Minute), res.RequeueAt)
	})
}

// A certificate asking for a temporary certificate, whose issuer takes
// its time, goes through the temporary certificate to the issued one:
// workloads can mount the secret at once, the certificate is Ready only
// with the issued certificate, and one request and one key serve both.
func TestLifecycleTemporaryCertificate(t *testing.T) {
	h := newTestHost(t)
	h.cert.Spec.IssueTemporaryCertificate = true
	h.hold = true
	h.settle()
	trace := func() string { return strings.Join(h.trace, "\n") }
	sec := h.secrets["web-tls"]
	require.NotNil(t, sec, "no secret while the issuer holds the request:\n%s", trace())
	leaf := h.leaf()
	assert.True(t, keys.IsTemporaryCertificate(leaf))
	next, err := keys.DecodePrivateKey(h.secrets[h.cert.Status.NextPrivateKeySecretName].Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	assert.True(t, keys.PublicKeysEqual(leaf.PublicKey, next.Public()), "the temporary certificate is for the next private key")
	ready := h.cert.Status.Condition(ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, ReasonTemporaryCertificate, ready.Reason, trace())
	assert.Nil(t, h.cert.Status.NotAfter)
	require.NotNil(t, issuing(h.cert), "the issuance still runs")

	h.hold = false
	h.now = h.now.Add(time.Minute)
	h.sign()
	h.settle()
	leaf = h.leaf()
	assert.False(t, keys.IsTemporaryCertificate(leaf), trace())
	assert.True(t, keys.PublicKeysEqual(leaf.PublicKey, next.Public()), "the issued certificate is for the same key")
	assert.Equal(t, StatusTrue, h.cert.Status.Condition(ConditionReady).Status, trace())
	assert.Equal(t, 1, *h.cert.Status.Revision)
	assert.Equal(t, 1, h.creates, "one request")
	assert.Equal(t, h.cert.Name, h.secrets["web-tls"].Annotations[AnnotationCertificateName])
	assert.Equal(t, "Issuer", h.secrets["web-tls"].Annotations[AnnotationIssuerKind], "the issued certificate's annotations")
}

package host_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// silent hides what its issuer waits for: an issuer that is no
// certificate.SecretAwaiter.
type silent struct{ certificate.Issuer }

// caHost is a host with a local CA it issues itself (localca.
// RootCertificate, self-signed) and a leaf the CA signs.
type caHost struct {
	clk   *testingclock.FakeClock
	store host.Store
	loop  *host.Loop
}

func newCAHost(t *testing.T, store host.Store, clk *testingclock.FakeClock, hide bool) *caHost {
	get := store.Secrets().Get
	var ca certificate.Issuer = localca.FromSecret(get, "default", "internal-ca", nil)
	if hide {
		ca = silent{ca}
	}
	loop, err := host.New(host.Config{Store: store, Clock: clk, Issuers: map[certificate.IssuerRef]certificate.Issuer{
		{Name: "self-signed"}: localca.SelfSigned(get, nil),
		{Name: "internal-ca"}: ca,
	}})
	require.NoError(t, err)
	return &caHost{clk: clk, store: store, loop: loop}
}

func (h *caHost) get(t *testing.T, name string) *certificate.Certificate {
	c, err := h.store.Certificates().Get(context.Background(), "default", name)
	require.NoError(t, err)
	return c
}

func leafCert(name string) *certificate.Certificate {
	c := newCert("default", name, name+"-tls")
	c.Spec.IssuerRef = certificate.IssuerRef{Name: "internal-ca"}
	c.Spec.Duration = &certificate.Duration{Duration: 30 * 24 * time.Hour}
	return c
}

// A request whose CA secret is not written yet — the CA is a certificate
// the same loop issues, on its first start — is answered as soon as the
// CA secret is written, within the same Settle, on a clock that does not
// move: not a minute later (localca.NotReadyRecheck), which stays the
// backstop for an issuer that does not say what it waits for.
func TestARequestWaitingForItsCASecretIsAnsweredWhenItIsWritten(t *testing.T) {
	for name, tc := range map[string]struct {
		store func(clk *testingclock.FakeClock) host.Store
		hide  bool
	}{
		"a store that reports writes":         {store: func(clk *testingclock.FakeClock) host.Store { return host.NewMemoryStore(clk) }},
		"a store that does not report writes": {store: func(clk *testingclock.FakeClock) host.Store { return unwatched{host.NewMemoryStore(clk)} }},
		"an issuer that does not say":         {store: func(clk *testingclock.FakeClock) host.Store { return host.NewMemoryStore(clk) }, hide: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			clk := testingclock.NewFakeClock(t0)
			h := newCAHost(t, tc.store(clk), clk, tc.hide)
			_, err := h.store.Certificates().Create(ctx, localca.RootCertificate("default", "internal-ca", "internal CA", certificate.IssuerRef{Name: "self-signed"}))
			require.NoError(t, err)
			_, err = h.store.Certificates().Create(ctx, leafCert("api"))
			require.NoError(t, err)

			_, err = hosttest.Settle(ctx, h.loop, 100)
			require.NoError(t, err)
			require.True(t, ready(h.get(t, "internal-ca")))
			api := h.get(t, "api")
			req := "api-1"
			if tc.hide {
				require.False(t, ready(api), "the request waits for the recheck")
				at, ok := h.loop.NextFor(host.KindRequest, "default", req)
				require.True(t, ok)
				assert.Equal(t, t0.Add(localca.NotReadyRecheck), at)
				require.NoError(t, hosttest.Advance(ctx, h.loop, clk, t0.Add(localca.NotReadyRecheck), hosttest.AdvanceOptions{}))
				require.True(t, ready(h.get(t, "api")), "the backstop answers it")
				return
			}
			require.True(t, ready(api), "issued at once: %+v", api.Status.Conditions)
			assert.Equal(t, t0, clk.Now(), "no time passed")
			r, err := h.store.Requests().Get(ctx, "default", req)
			require.NoError(t, err)
			// The request did wait: the first answer was Pending.
			assert.Equal(t, certificate.RequestReasonIssued, r.Condition(certificate.RequestConditionReady).Reason)
		})
	}
}

// A CA secret written behind the loop's back — by another process over a
// store that reports writes, or with Notify — answers the requests
// waiting for it at once.
func TestARequestWaitingForACASecretSomeoneElseWrites(t *testing.T) {
	for name, tc := range map[string]struct {
		store  func(clk *testingclock.FakeClock) host.Store
		notify bool
	}{
		"a store that reports writes":                 {store: func(clk *testingclock.FakeClock) host.Store { return host.NewMemoryStore(clk) }},
		"a store that does not report writes, Notify": {store: func(clk *testingclock.FakeClock) host.Store { return unwatched{host.NewMemoryStore(clk)} }, notify: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			clk := testingclock.NewFakeClock(t0)
			h := newCAHost(t, tc.store(clk), clk, false)
			_, err := h.store.Certificates().Create(ctx, leafCert("api"))
			require.NoError(t, err)
			_, err = hosttest.Settle(ctx, h.loop, 100)
			require.NoError(t, err)
			r, err := h.store.Requests().Get(ctx, "default", "api-1")
			require.NoError(t, err)
			require.False(t, certificate.Answered(r), "no CA yet")
			assert.Contains(t, r.Condition(certificate.RequestConditionReady).Message, "the CA secret default/internal-ca cannot be read")

			clk.Step(10 * time.Second)
			ca := newCA(t, t0)
			keyPEM, err := ca.KeyPEM()
			require.NoError(t, err)
			_, err = h.store.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "internal-ca"},
				Data: map[string][]byte{keys.SecretCertificate: ca.CertificatePEM(), keys.SecretPrivateKey: keyPEM}})
			require.NoError(t, err)
			if tc.notify {
				h.loop.Notify(host.KindSecret, "default", "internal-ca")
			}
			_, err = hosttest.Settle(ctx, h.loop, 100)
			require.NoError(t, err)
			assert.True(t, ready(h.get(t, "api")), "issued as soon as the CA secret is written")
		})
	}
}

// Under Run, on the real clock (a synctest bubble's), the leaf of a CA
// the loop issues on its first start is issued well before the recheck,
// whichever of the CA's write and the leaf's request pass, which run on
// goroutines of their own, comes first.
func TestUnderRunARequestWaitingForItsCASecretIsAnsweredWhenItIsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st := host.NewMemoryStore(clock.RealClock{})
		get := st.Secrets().Get
		loop, err := host.New(host.Config{Store: st, Issuers: map[certificate.IssuerRef]certificate.Issuer{
			{Name: "self-signed"}: localca.SelfSigned(get, nil),
			{Name: "internal-ca"}: localca.FromSecret(get, "default", "internal-ca", nil),
		}})
		require.NoError(t, err)
		_, err = st.Certificates().Create(ctx, localca.RootCertificate("default", "internal-ca", "internal CA", certificate.IssuerRef{Name: "self-signed"}))
		require.NoError(t, err)
		for _, name := range []string{"api", "db"} {
			_, err = st.Certificates().Create(ctx, leafCert(name))
			require.NoError(t, err)
		}
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- loop.Run(ctx) }()
		synctest.Wait()
		for _, name := range []string{"internal-ca", "api", "db"} {
			c, err := st.Certificates().Get(ctx, "default", name)
			require.NoError(t, err)
			require.True(t, ready(c), "%s: %+v", name, c.Status.Conditions)
		}
		assert.Less(t, time.Since(start), localca.NotReadyRecheck/2)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}

// A host with its own queue learns from the request pass which secret
// the issuer waits for.
func TestReconcilerSaysWhichSecretARequestWaitsFor(t *testing.T) {
	ctx := t.Context()
	clk := testingclock.NewFakeClock(t0)
	st := host.NewMemoryStore(clk)
	r, err := host.NewReconciler(host.Config{Store: st, Clock: clk, Issuers: map[certificate.IssuerRef]certificate.Issuer{
		{Name: "internal-ca"}: localca.FromSecret(st.Secrets().Get, "pki", "root", nil),
	}})
	require.NoError(t, err)
	c, err := st.Certificates().Create(ctx, leafCert("api"))
	require.NoError(t, err)
	for range 3 { // key, request, status
		_, err = r.Certificate(ctx, "default", "api")
		require.NoError(t, err)
	}
	reqs, err := st.Requests().List(ctx, host.ListOptions{OwnerUID: c.UID})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	ev, err := r.Request(ctx, "default", reqs[0].Name)
	require.NoError(t, err)
	assert.Equal(t, host.SecretKey{Namespace: "pki", Name: "root"}, ev.AwaitedSecret)
	assert.Equal(t, t0.Add(localca.NotReadyRecheck), ev.Next, "the backstop")
}

// The CA the loop issues is renewed as any certificate, with the same
// key and subject: a leaf it signed before verifies against the renewed
// CA certificate, is not issued again because of it, and renews on its
// own schedule, signed by the renewed CA.
func TestARootCARenewedByTheLoopKeepsWhatItSignedValid(t *testing.T) {
	ctx := t.Context()
	clk := testingclock.NewFakeClock(t0)
	h := newCAHost(t, host.NewMemoryStore(clk), clk, false)
	root := localca.RootCertificate("default", "internal-ca", "internal CA", certificate.IssuerRef{Name: "self-signed"})
	root.Spec.Duration = &certificate.Duration{Duration: 90 * 24 * time.Hour} // renewed at day 60
	_, err := h.store.Certificates().Create(ctx, root)
	require.NoError(t, err)
	leaf := leafCert("api")
	leaf.Spec.Duration = &certificate.Duration{Duration: 27 * 24 * time.Hour} // renewed at day 18, 36, 54, 72…
	_, err = h.store.Certificates().Create(ctx, leaf)
	require.NoError(t, err)
	require.NoError(t, hosttest.Advance(ctx, h.loop, clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))
	require.True(t, ready(h.get(t, "api")))
	caBefore := secretCert(t, h.store, "internal-ca")
	require.NoError(t, hosttest.Advance(ctx, h.loop, clk, t0.Add(55*24*time.Hour), hosttest.AdvanceOptions{}))
	leafBefore := secretCert(t, h.store, "api-tls")
	apiRevision := revision(h.get(t, "api"))

	require.NoError(t, hosttest.Advance(ctx, h.loop, clk, t0.Add(62*24*time.Hour), hosttest.AdvanceOptions{}))
	require.Equal(t, 2, revision(h.get(t, "internal-ca")), "the CA is renewed")
	caAfter := secretCert(t, h.store, "internal-ca")
	require.NotEqual(t, caBefore.SerialNumber, caAfter.SerialNumber)
	assert.Equal(t, caBefore.RawSubject, caAfter.RawSubject, "the same subject")
	assert.Equal(t, caBefore.SubjectKeyId, caAfter.SubjectKeyId, "the same key")
	assert.Equal(t, apiRevision, revision(h.get(t, "api")), "the leaf is not issued again because its CA was renewed")

	verify := func(leaf, ca *x509.Certificate) error {
		pool := x509.NewCertPool()
		pool.AddCert(ca)
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: clk.Now()})
		return err
	}
	assert.NoError(t, verify(leafBefore, caAfter), "a leaf signed before verifies against the renewed CA")
	require.NoError(t, hosttest.Advance(ctx, h.loop, clk, t0.Add(75*24*time.Hour), hosttest.AdvanceOptions{}))
	require.Greater(t, revision(h.get(t, "api")), apiRevision, "the leaf renews on its own schedule")
	leafAfter := secretCert(t, h.store, "api-tls")
	assert.NoError(t, verify(leafAfter, caAfter))
	assert.NoError(t, verify(leafAfter, caBefore), "and one signed after, against the CA before")
}

func secretCert(t *testing.T, st host.Store, name string) *x509.Certificate {
	s, err := st.Secrets().Get(context.Background(), "default", name)
	require.NoError(t, err)
	b, _ := pem.Decode(s.Data[keys.SecretCertificate])
	require.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

// gate, once armed, holds up the CA secret's first read that finds it
// missing until the CA secret is written, and the self-signed issuer
// (heldSelfSigned) until that read: a request pass reads the CA secret
// as missing, the loop writes it while that pass is in flight, and the
// pass returns after.
type gate struct {
	store   host.Store
	armed   bool
	read    chan struct{} // closed at the armed read
	written chan struct{} // closed when the CA secret is created
	held    bool          // the read returned after the write
}

func (g *gate) get(ctx context.Context, namespace, name string) (*certificate.Secret, error) {
	s, err := g.store.Secrets().Get(ctx, namespace, name)
	if !g.armed || name != "internal-ca" || !errors.Is(err, host.ErrNotFound) {
		return s, err
	}
	g.armed = false
	close(g.read)
	select {
	case <-g.written:
		g.held = true
	case <-ctx.Done():
	}
	return s, err
}

type gatedSecrets struct {
	host.Collection[*certificate.Secret]
	g *gate
}

func (c gatedSecrets) Create(ctx context.Context, sec *certificate.Secret) (*certificate.Secret, error) {
	made, err := c.Collection.Create(ctx, sec)
	if err == nil && sec.Name == "internal-ca" {
		close(c.g.written)
	}
	return made, err
}

type gatedStore struct {
	*host.MemoryStore
	g *gate
}

func (s gatedStore) Secrets() host.Collection[*certificate.Secret] {
	return gatedSecrets{s.MemoryStore.Secrets(), s.g}
}

// heldSelfSigned is the self-signed issuer, which answers once the gate was read
// twice.
type heldSelfSigned struct {
	certificate.Issuer
	g *gate
}

func (h heldSelfSigned) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	select {
	case <-h.g.read:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	return h.Issuer.Answer(ctx, r, now)
}

// Under Run, a request pass that read the CA secret as missing and
// returns after the loop wrote it is not left waiting for a write that
// has been: it is answered again at once. The request is Pending from
// before a restart, so that the pass does not change it (a pass that
// does sees its own write and goes round again anyway).
func TestUnderRunAPassThatReadTheSecretBeforeItWasWrittenIsNotLeftWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		mem := host.NewMemoryStore(clock.RealClock{})
		g := &gate{store: mem, read: make(chan struct{}), written: make(chan struct{})}
		st := gatedStore{mem, g}
		// One identity before and after the restart: the new loop takes
		// back at once the request's lease the old one held (MemoryStore
		// is a Leaser).
		cfg := host.Config{Store: st, Identity: "host-a", Issuers: map[certificate.IssuerRef]certificate.Issuer{
			{Name: "self-signed"}: heldSelfSigned{localca.SelfSigned(st.Secrets().Get, nil), g},
			{Name: "internal-ca"}: localca.FromSecret(g.get, "default", "internal-ca", nil),
		}}
		_, err := st.Certificates().Create(ctx, leafCert("api"))
		require.NoError(t, err)
		before, err := host.New(cfg) // the host before the restart: no CA yet
		require.NoError(t, err)
		_, err = hosttest.Settle(ctx, before, 100)
		require.NoError(t, err)
		r, err := st.Requests().Get(ctx, "default", "api-1")
		require.NoError(t, err)
		require.False(t, certificate.Answered(r))

		_, err = st.Certificates().Create(ctx, localca.RootCertificate("default", "internal-ca", "internal CA", certificate.IssuerRef{Name: "self-signed"}))
		require.NoError(t, err)
		g.armed = true
		loop, err := host.New(cfg)
		require.NoError(t, err)
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- loop.Run(ctx) }()
		synctest.Wait()
		require.True(t, g.held, "a pass read the secret before it was written, and returned after")
		c, err := st.Certificates().Get(ctx, "default", "api")
		require.NoError(t, err)
		require.True(t, ready(c), "%+v", c.Status.Conditions)
		assert.Less(t, time.Since(start), localca.NotReadyRecheck/2)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}

package keys

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseBlobs are inputs of every kind, good and bad: each is given to
// every parser, so that the same bytes read as a key, a leaf, a
// certificate and a request are kept apart.
type parseBlobs struct {
	names []string
	blobs map[string][]byte
}

func newParseBlobs(t testing.TB) *parseBlobs {
	t.Helper()
	b := &parseBlobs{blobs: map[string][]byte{}}
	add := func(name string, v []byte) {
		b.names = append(b.names, name)
		b.blobs[name] = v
	}
	ca := newTestCA(t)
	rsaKey := mustKey(t, KeySpec{Algorithm: AlgorithmRSA})
	ecKey := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	edKey := mustKey(t, KeySpec{Algorithm: AlgorithmEd25519})
	for _, k := range []struct {
		name string
		key  crypto.Signer
		enc  Encoding
	}{
		{"RSA PKCS#1", rsaKey, EncodingPKCS1}, {"RSA PKCS#8", rsaKey, EncodingPKCS8},
		{"ECDSA SEC1", ecKey, EncodingPKCS1}, {"ECDSA PKCS#8", ecKey, EncodingPKCS8},
		{"Ed25519", edKey, EncodingPKCS8},
	} {
		p, err := EncodePrivateKey(k.key, k.enc)
		require.NoError(t, err)
		add("key "+k.name, p)
	}
	leafDER := ca.issueDER(t, ecKey.Public(), "a.example", []string{"a.example"})
	add("certificate DER", leafDER)
	add("certificate PEM", pemCert(leafDER))
	add("chain PEM", append(pemCert(leafDER), ca.pem...))
	add("chain PEM with garbage after the leaf", append(pemCert(leafDER), "garbage"...))
	csr, err := BuildCSR(rand.Reader, RequestTemplate{DNSNames: []string{"a.example"}}, ecKey)
	require.NoError(t, err)
	block, _ := pem.Decode(csr)
	add("request DER", block.Bytes)
	add("request PEM", csr)
	add("truncated certificate DER", leafDER[:len(leafDER)/2])
	add("truncated request DER", block.Bytes[:len(block.Bytes)/2])
	add("a PEM block of another type", pem.EncodeToMemory(&pem.Block{Type: "FOO", Bytes: []byte{1, 2, 3}}))
	add("a PEM key block holding garbage", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}))
	add("garbage", []byte("garbage"))
	add("empty", nil)
	return b
}

// describeParse renders what a parser returned, for comparison: public keys,
// raw DER and error texts, never key material.
func describeParse(v any, err error) string {
	var b strings.Builder
	switch v := v.(type) {
	case crypto.Signer:
		if v != nil {
			der, _ := x509.MarshalPKIXPublicKey(v.Public())
			fmt.Fprintf(&b, "key %T %x", v, der)
		}
	case *x509.Certificate:
		if v != nil {
			fmt.Fprintf(&b, "certificate %x", v.Raw)
		}
	case *x509.CertificateRequest:
		if v != nil {
			fmt.Fprintf(&b, "request %x", v.Raw)
		}
	case *ParsedSecret:
		fmt.Fprintf(&b, "leaf[%s] key[%s] matches %v certErr %v keyErr %v", describeParse(v.Leaf, nil), describeParse(v.Key, nil), v.KeyMatches, v.CertErr, v.KeyErr)
		chain, cerr := v.Chain()
		for _, c := range chain {
			fmt.Fprintf(&b, " chain %x", c.Raw)
		}
		cas, caErr := v.CA()
		for _, c := range cas {
			fmt.Fprintf(&b, " ca %x", c.Raw)
		}
		fmt.Fprintf(&b, " chainErr %v caErr %v", cerr, caErr)
	}
	fmt.Fprintf(&b, " err %v", err)
	return b.String()
}

// parser is one of a ParseCache's methods beside the function it stands
// for.
type parser struct {
	name   string
	plain  func(b []byte) string
	cached func(c *ParseCache, b []byte) string
}

var parsers = []parser{
	{"DecodePrivateKey",
		func(b []byte) string { return describeParse(DecodePrivateKey(b)) },
		func(c *ParseCache, b []byte) string { return describeParse(c.DecodePrivateKey(b)) }},
	{"ParseCertificate",
		func(b []byte) string { return describeParse(x509.ParseCertificate(b)) },
		func(c *ParseCache, b []byte) string { return describeParse(c.ParseCertificate(b)) }},
	{"DecodeCertificateRequest",
		func(b []byte) string { return describeParse(DecodeCertificateRequest(b)) },
		func(c *ParseCache, b []byte) string { return describeParse(c.DecodeCertificateRequest(b)) }},
	{"ParseSecretData as tls.crt",
		func(b []byte) string { return describeParse(ParseSecretData(map[string][]byte{SecretCertificate: b})) },
		func(c *ParseCache, b []byte) string {
			return describeParse(c.ParseSecretData(map[string][]byte{SecretCertificate: b}))
		}},
}

func TestParseCacheGivesWhatTheParsersGive(t *testing.T) {
	blobs := newParseBlobs(t)
	caches := map[string]*ParseCache{
		"a cache":                  NewParseCache(0),
		"a zero ParseCache":        new(ParseCache),
		"a cache of room for one":  NewParseCache(charge(kindCertificate, 2000)),
		"no cache (nil)":           nil,
		"a cache too small to use": NewParseCache(1),
	}
	for cname, c := range caches {
		for _, p := range parsers {
			for _, name := range blobs.names {
				b := blobs.blobs[name]
				want := p.plain(b)
				// Cold, then warm, then warm again with a copy of the
				// bytes: the answer never changes.
				for i, in := range [][]byte{b, b, bytes.Clone(b)} {
					assert.Equal(t, want, p.cached(c, in), "%s, %s of %s, call %d", cname, p.name, name, i+1)
				}
			}
		}
	}
	c := caches["a cache"]
	st := c.Stats()
	assert.NotZero(t, st.Hits, "nothing was ever found in the cache: %+v", st)
	assert.NotZero(t, st.Entries, "nothing was kept: %+v", st)
}

func TestParseCacheSecretData(t *testing.T) {
	blobs := newParseBlobs(t)
	b := blobs.blobs
	other := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	otherPEM, err := EncodePrivateKey(other, EncodingPKCS1)
	require.NoError(t, err)
	tests := map[string]map[string][]byte{
		"a chain and its key, a CA": {SecretCertificate: b["chain PEM"], SecretPrivateKey: b["key ECDSA SEC1"], SecretCA: blobs.blobs["chain PEM"][len(b["certificate PEM"]):]},
		"a leaf and another key":    {SecretCertificate: b["certificate PEM"], SecretPrivateKey: otherPEM},
		"a leaf and an RSA key":     {SecretCertificate: b["certificate PEM"], SecretPrivateKey: b["key RSA PKCS#1"]},
		"garbage after the leaf":    {SecretCertificate: b["chain PEM with garbage after the leaf"], SecretPrivateKey: b["key ECDSA PKCS#8"]},
		"garbage for both":          {SecretCertificate: b["garbage"], SecretPrivateKey: b["garbage"], SecretCA: b["garbage"]},
		"a key and no certificate":  {SecretPrivateKey: b["key Ed25519"]},
		"nothing":                   {},
	}
	c := NewParseCache(0)
	for name, data := range tests {
		want := describeParse(ParseSecretData(data))
		for i := range 3 {
			assert.Equal(t, want, describeParse(c.ParseSecretData(data)), "%s, call %d", name, i+1)
		}
	}
}

// TestParseCacheErrorsStayTyped: a cached error is the parser's own, so
// errors.Is and errors.As see what they see without the cache.
func TestParseCacheErrorsStayTyped(t *testing.T) {
	c := NewParseCache(0)
	for range 2 {
		_, err := c.DecodePrivateKey([]byte("garbage"))
		require.ErrorIs(t, err, ErrDecode)
		parsed, _ := c.ParseSecretData(map[string][]byte{SecretPrivateKey: []byte("garbage")})
		err = parsed.KeyErr
		var fe *FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, SecretPrivateKey, fe.Field)
		require.ErrorIs(t, err, ErrDecode)
	}
}

// edKeys are n distinct Ed25519 keys in PKCS#8 PEM, made from fixed seeds.
func edKeys(t testing.TB, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		seed := make([]byte, ed25519.SeedSize)
		big.NewInt(int64(i + 1)).FillBytes(seed)
		p, err := EncodePrivateKey(ed25519.NewKeyFromSeed(seed), EncodingPKCS8)
		require.NoError(t, err)
		out[i] = p
	}
	return out
}

func TestParseCacheStaysWithinItsBound(t *testing.T) {
	pems := edKeys(t, 100)
	each := charge(kindPrivateKey, len(pems[0]))
	limit := 10 * each
	c := NewParseCache(limit)
	for i, p := range pems {
		_, err := c.DecodePrivateKey(p)
		require.NoError(t, err)
		// The first key is used between every two others: the least
		// recently used go, not it.
		_, err = c.DecodePrivateKey(pems[0])
		require.NoError(t, err)
		st := c.Stats()
		require.LessOrEqual(t, st.Bytes, limit, "after %d keys: %+v", i+1, st)
		require.LessOrEqual(t, st.Entries, 10, "after %d keys: %+v", i+1, st)
		require.LessOrEqual(t, int64(st.Entries), limit/512, "more entries than the documented minimum charge allows")
	}
	st := c.Stats()
	assert.Equal(t, 10, st.Entries, "the cache does not fill up to its bound: %+v", st)
	assert.EqualValues(t, 100-10, st.Evictions, "%+v", st)

	hits := st.Hits
	_, _ = c.DecodePrivateKey(pems[0])
	_, _ = c.DecodePrivateKey(pems[99])
	assert.Equal(t, hits+2, c.Stats().Hits, "the most recently used keys were evicted")
	misses := c.Stats().Misses
	_, _ = c.DecodePrivateKey(pems[1])
	assert.Equal(t, misses+1, c.Stats().Misses, "the least recently used key is still kept")
}

func TestParseCacheKeepsNothingTooLargeForItsBound(t *testing.T) {
	p, err := EncodePrivateKey(mustKey(t, KeySpec{Algorithm: AlgorithmRSA}), EncodingPKCS1)
	require.NoError(t, err)
	c := NewParseCache(charge(kindPrivateKey, len(p)) - 1)
	for range 2 {
		k, err := c.DecodePrivateKey(p)
		require.NoError(t, err)
		require.Equal(t, describeParse(DecodePrivateKey(p)), describeParse(k, nil))
	}
	assert.Equal(t, ParseCacheStats{Misses: 2}, c.Stats())
}

// TestParseCacheOwnsItsInput: the caller may reuse its slice; neither the
// parse kept nor later lookups follow the change.
func TestParseCacheOwnsItsInput(t *testing.T) {
	blobs := newParseBlobs(t)
	der := bytes.Clone(blobs.blobs["certificate DER"])
	orig := bytes.Clone(der)
	c := NewParseCache(0)
	cert, err := c.ParseCertificate(der)
	require.NoError(t, err)
	for i := range der {
		der[i] ^= 0xff
	}
	assert.Equal(t, orig, cert.Raw, "the parse kept points into the caller's slice")
	_, err = c.ParseCertificate(der)
	require.Error(t, err, "changed bytes found the old parse")
	again, err := c.ParseCertificate(orig)
	require.NoError(t, err)
	assert.Same(t, cert, again, "the same bytes were parsed again")
}

// TestParseCacheConcurrentUse runs lookups of every kind from several
// goroutines on a cache small enough to evict all the time; run it with
// -race.
func TestParseCacheConcurrentUse(t *testing.T) {
	blobs := newParseBlobs(t)
	pems := edKeys(t, 20)
	want := map[string]string{}
	type job struct {
		p    parser
		name string
		b    []byte
	}
	var jobs []job
	for _, p := range parsers {
		for _, name := range blobs.names {
			jobs = append(jobs, job{p, name, blobs.blobs[name]})
		}
	}
	for i, b := range pems {
		jobs = append(jobs, job{parsers[0], fmt.Sprint("key ", i), b})
	}
	for _, j := range jobs {
		want[j.p.name+"/"+j.name] = j.p.plain(j.b)
	}
	c := NewParseCache(8 * charge(kindCertificate, 1000))
	const workers = 4
	errs := make(chan string, workers*len(jobs)*3)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for round := range 3 {
				for i := range jobs {
					j := jobs[(i*7+w*13+round)%len(jobs)]
					if got := j.p.cached(c, j.b); got != want[j.p.name+"/"+j.name] {
						errs <- fmt.Sprintf("%s of %s: got %s", j.p.name, j.name, got)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	st := c.Stats()
	assert.NotZero(t, st.Evictions, "the bound never applied: %+v", st)
	assert.LessOrEqual(t, st.Bytes, 8*charge(kindCertificate, 1000), "%+v", st)
}

// A key encoded through the cache is what decoding its PEM gives, in
// every encoding, and reading it back is a hit, not a parse.
func TestParseCacheEncodePrivateKeyKeepsTheKey(t *testing.T) {
	for _, spec := range []KeySpec{{Algorithm: AlgorithmRSA}, {Algorithm: AlgorithmECDSA}, {Algorithm: AlgorithmEd25519}} {
		for _, enc := range []Encoding{EncodingPKCS1, EncodingPKCS8} {
			key := mustKey(t, spec)
			c := NewParseCache(0)
			b, err := c.EncodePrivateKey(key, enc)
			require.NoError(t, err)
			plain, err := DecodePrivateKey(b)
			require.NoError(t, err)
			got, err := c.DecodePrivateKey(b)
			require.NoError(t, err)
			require.True(t, plain.(interface{ Equal(crypto.PrivateKey) bool }).Equal(got), "%s %s: the key kept is not the key the PEM holds", spec.Algorithm, enc)
			_, typ, _ := decodePrivateKey(b)
			_, ctyp, _ := c.decodePrivateKey(b)
			require.Equal(t, typ, ctyp)
			st := c.Stats()
			require.Zero(t, st.Misses, "%s %s: reading the key back parsed it", spec.Algorithm, enc)
			require.Equal(t, 1, st.Entries)
		}
	}
	var nilCache *ParseCache
	b, err := nilCache.EncodePrivateKey(mustKey(t, KeySpec{Algorithm: AlgorithmEd25519}), EncodingPKCS8)
	require.NoError(t, err)
	require.NotEmpty(t, b)
}

// A certificate parsed when its request was answered (ParseCertificates)
// is not parsed again to write the secret (SecretData) nor when the
// secret is read back (ParseSecretData): the three share one parse.
func TestParseCacheParsesAnIssuedCertificateOnce(t *testing.T) {
	blobs := newParseBlobs(t)
	chain, caPEM := blobs.blobs["chain PEM"], blobs.blobs["chain PEM"][len(blobs.blobs["certificate PEM"]):]
	key, err := DecodePrivateKey(blobs.blobs["key ECDSA PKCS#8"])
	require.NoError(t, err)
	c := NewParseCache(0)
	certs, err := c.ParseCertificates(chain)
	require.NoError(t, err)
	require.Len(t, certs, 2)
	parsed := c.Stats().Misses
	require.EqualValues(t, 2, parsed, "the leaf and the CA are each parsed once")

	data, err := c.SecretData(rand.Reader, key, chain, caPEM, OutputSpec{})
	require.NoError(t, err)
	assert.Equal(t, parsed, c.Stats().Misses, "writing the secret parsed the chain again")
	want, err := SecretData(rand.Reader, key, chain, caPEM, OutputSpec{})
	require.NoError(t, err)
	assert.Equal(t, want, data, "the cache's SecretData gives what SecretData gives")

	p, err := c.ParseSecretData(data)
	require.NoError(t, err)
	st := c.Stats()
	// The leaf's PEM is a new entry (a miss), but its DER was found:
	// no certificate was parsed. The key was kept when it was encoded.
	assert.Equal(t, parsed+1, st.Misses, "reading the secret back parsed the leaf: %+v", st)
	assert.Same(t, certs[0], p.Leaf, "the leaf read back is not the certificate parsed before")
	assert.True(t, p.KeyMatches)
}

// The cache's SecretData refuses what SecretData refuses, with the same
// error, and a nil cache is SecretData.
func TestParseCacheSecretDataErrors(t *testing.T) {
	blobs := newParseBlobs(t)
	key, err := DecodePrivateKey(blobs.blobs["key ECDSA PKCS#8"])
	require.NoError(t, err)
	other := mustKey(t, KeySpec{Algorithm: AlgorithmEd25519})
	chain := blobs.blobs["chain PEM"]
	tests := map[string]struct {
		key       crypto.Signer
		chain, ca []byte
		out       OutputSpec
	}{
		"another key":          {other, chain, nil, OutputSpec{}},
		"no key":               {nil, chain, nil, OutputSpec{}},
		"garbage for a chain":  {key, blobs.blobs["garbage"], nil, OutputSpec{}},
		"no chain":             {key, nil, nil, OutputSpec{}},
		"garbage for a CA":     {key, chain, blobs.blobs["garbage"], OutputSpec{}},
		"a bad key encoding":   {key, chain, nil, OutputSpec{KeyEncoding: "PKCS#7"}},
		"a good one, combined": {key, chain, nil, OutputSpec{CombinedPEM: true, DER: true}},
	}
	for name, tt := range tests {
		want, wantErr := SecretData(rand.Reader, tt.key, tt.chain, tt.ca, tt.out)
		for cname, c := range map[string]*ParseCache{"a cache": NewParseCache(0), "nil": nil} {
			for i := range 2 {
				got, err := c.SecretData(rand.Reader, tt.key, tt.chain, tt.ca, tt.out)
				if wantErr != nil {
					require.EqualError(t, err, wantErr.Error(), "%s, %s, call %d", name, cname, i+1)
					continue
				}
				require.NoError(t, err, "%s, %s", name, cname)
				assert.Equal(t, want, got, "%s, %s, call %d", name, cname, i+1)
			}
		}
	}
}

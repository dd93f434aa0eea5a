package keys

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"io"
	"sync"
)

// DefaultParseCacheBytes is the bound of a ParseCache made with
// NewParseCache(0): 4 MiB by ParseCache's estimate, about half that in
// fact — some hundreds to a thousand keys, leaves and requests, enough
// for the certificates a host has in flight at once. A certificate that
// is only looked at again on a resync gains little from staying in the
// cache; every byte it holds is scanned by the garbage collector. Size a
// bigger cache by about 20 KiB (estimated) per certificate that is being
// issued at any one time.
const DefaultParseCacheBytes = 4 << 20

// ParseCache keeps what DecodePrivateKey, ParseSecretData,
// DecodeCertificateRequest and x509.ParseCertificate make of their input, keyed by the input's content, so that a host which decides on
// the same secrets and requests pass after pass parses each of them once.
// Deriving a private key (an RSA key's checks and precomputation, an
// Ed25519 key's public half) costs tens to hundreds of microseconds; a
// hit costs a map lookup.
//
// A cache can only make an answer cheaper, never different: each method
// returns exactly what the function it stands for returns on the same
// bytes — the same values, and for bytes that do not parse, an error with
// the same text (errors are kept too: parsing is deterministic, so a bad
// blob fails the same way every time). The key is the bytes themselves,
// compared in full, as crypto/tls's certificate cache does: two inputs
// share an entry only when they are equal, so no hash collision can give
// one input another's key. The cache keeps a copy of every input it
// holds; a caller may change or reuse its own slices afterwards.
//
// Values are shared between callers and goroutines and must be treated
// as read-only: nothing in crypto/x509 or certlife modifies a parsed
// *x509.Certificate or *x509.CertificateRequest, and the standard
// library's private keys are safe for concurrent signing (crypto/tls
// shares them the same way). A caller that needs to modify one copies it
// first.
//
// The cache is bounded: it holds at most the bytes given to
// NewParseCache, by an estimate of each entry's memory that is
// deliberately high (its input kept as the key, plus a multiple of the
// input's length and a fixed amount for what the parsers build), and
// evicts the least recently used entries to stay within it. Every entry
// is charged at least 512 bytes, so the number of entries is bounded too.
// An input too large for the bound on its own is parsed and not kept.
//
// The zero value is an empty cache bounded at DefaultParseCacheBytes. A
// nil *ParseCache is valid and keeps nothing: every method parses, as the
// function it stands for does. A ParseCache is safe for concurrent use
// and must not be copied after first use; parsing happens outside its lock, so two goroutines that miss on
// the same input at once may both parse it.
type ParseCache struct {
	max int64

	mu      sync.Mutex
	entries [numKinds]map[string]*cacheEntry
	lru     cacheEntry // sentinel: lru.next is the most recently used
	stats   ParseCacheStats
}

// ParseCacheStats is what a ParseCache holds and how it has done, for a
// host's metrics.
type ParseCacheStats struct {
	// Entries and Bytes are what it holds now; Bytes is its estimate.
	Entries int
	Bytes   int64
	// Hits and Misses count lookups; Evictions counts entries dropped to
	// stay within the bound.
	Hits, Misses, Evictions uint64
}

// cacheKind is what a cache entry is a parse of: the same bytes parse to
// different things as a key, a leaf or a request.
type cacheKind uint8

const (
	kindPrivateKey  cacheKind = iota // DecodePrivateKey
	kindLeaf                         // parseLeaf (ParseSecretData's tls.crt)
	kindCertificate                  // x509.ParseCertificate
	kindRequest                      // DecodeCertificateRequest
	numKinds
)

type cacheEntry struct {
	kind cacheKind
	key  string
	size int64

	// The parse, never changed after the entry is added.
	value any
	at    int    // parseLeaf's restAt
	typ   string // decodePrivateKey's PEM block type
	err   error

	prev, next *cacheEntry // guarded by ParseCache.mu
}

// NewParseCache returns a cache that holds at most maxBytes by its
// estimate (see ParseCache); zero or less means DefaultParseCacheBytes.
func NewParseCache(maxBytes int64) *ParseCache {
	if maxBytes <= 0 {
		maxBytes = DefaultParseCacheBytes
	}
	return &ParseCache{max: maxBytes}
}

// init makes a zero ParseCache ready; c.mu is held.
func (c *ParseCache) init() {
	if c.lru.next != nil {
		return
	}
	if c.max <= 0 {
		c.max = DefaultParseCacheBytes
	}
	for k := range c.entries {
		c.entries[k] = make(map[string]*cacheEntry)
	}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
}

// DecodePrivateKey is keys.DecodePrivateKey, cached.
func (c *ParseCache) DecodePrivateKey(pemBytes []byte) (crypto.Signer, error) {
	if c == nil {
		return DecodePrivateKey(pemBytes)
	}
	k, _, err := c.decodePrivateKey(pemBytes)
	return k, err
}

// EncodePrivateKey is keys.EncodePrivateKey, and it keeps key as what
// DecodePrivateKey makes of the PEM it returns: a key just generated is
// not parsed again when it is read back.
func (c *ParseCache) EncodePrivateKey(key crypto.Signer, enc Encoding) ([]byte, error) {
	b, err := EncodePrivateKey(key, enc)
	if err != nil || c == nil {
		return b, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return b, nil
	}
	c.put(kindPrivateKey, b, &cacheEntry{value: key, typ: block.Type})
	return b, nil
}

func (c *ParseCache) decodePrivateKey(pemBytes []byte) (crypto.Signer, string, error) {
	if len(pemBytes) > MaxPrivateKeyBytes {
		return decodePrivateKey(pemBytes) // refused unread, and not kept
	}
	e := c.get(kindPrivateKey, pemBytes, func() *cacheEntry {
		k, typ, err := decodePrivateKey(pemBytes)
		return &cacheEntry{value: k, typ: typ, err: err}
	})
	k, _ := e.value.(crypto.Signer)
	return k, e.typ, e.err
}

// ParseSecretData is keys.ParseSecretData with tls.crt's leaf and tls.key
// cached. The ParsedSecret is new on every call (its Chain and CA parse
// the caller's bytes); its Leaf and Key are shared.
func (c *ParseCache) ParseSecretData(data map[string][]byte) (*ParsedSecret, error) {
	if c == nil {
		return ParseSecretData(data)
	}
	return parseSecretData(data, c.leaf, c.decodePrivateKey)
}

func (c *ParseCache) leaf(crt []byte) (*x509.Certificate, int, error) {
	e := c.get(kindLeaf, crt, func() *cacheEntry {
		// Through the certificates kept by DER: a certificate the host
		// parsed when its request was answered (ParseCertificates) is
		// not parsed again when it is read back from the secret.
		leaf, at, err := parseLeafWith(crt, c.ParseCertificate)
		return &cacheEntry{value: leaf, at: at, err: err}
	})
	leaf, _ := e.value.(*x509.Certificate)
	return leaf, e.at, e.err
}

// ParseCertificate is x509.ParseCertificate, cached. The certificate's
// Raw fields point into the cache's own copy of der, not into der.
func (c *ParseCache) ParseCertificate(der []byte) (*x509.Certificate, error) {
	if c == nil {
		return x509.ParseCertificate(der)
	}
	e := c.get(kindCertificate, der, func() *cacheEntry {
		// x509 keeps slices of its input (Raw, RawSubject…): parse a copy
		// the caller cannot change.
		cert, err := x509.ParseCertificate(bytes.Clone(der))
		return &cacheEntry{value: cert, err: err}
	})
	cert, _ := e.value.(*x509.Certificate)
	return cert, e.err
}

// ParseCertificates parses every block of a PEM certificate bundle, such
// as tls.crt or ca.crt, each certificate through the cache (nil: parsing
// each). Every block must be a CERTIFICATE; a bundle with text but no
// block is an error, an empty one none. A bundle beyond
// MaxSecretValueBytes or MaxCertificates is not parsed: its error wraps
// ErrTooLarge.
func (c *ParseCache) ParseCertificates(pemBytes []byte) ([]*x509.Certificate, error) {
	return parseBundle(pemBytes, c.ParseCertificate)
}

// SecretData is keys.SecretData with the chain and the CA parsed through
// the cache, and the private key's encoding kept as EncodePrivateKey
// keeps it: a host that parsed the chain when its request was answered
// does not parse it again to write the secret, nor when it reads the
// secret back.
func (c *ParseCache) SecretData(rand io.Reader, key crypto.Signer, chainPEM, caPEM []byte, out OutputSpec) (map[string][]byte, error) {
	if c == nil {
		return SecretData(rand, key, chainPEM, caPEM, out)
	}
	return secretData(rand, key, chainPEM, caPEM, out, c.ParseCertificates, c.EncodePrivateKey)
}

// DecodeCertificateRequest is keys.DecodeCertificateRequest, cached: a
// request read without checking its signature.
func (c *ParseCache) DecodeCertificateRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	if c == nil {
		return DecodeCertificateRequest(pemBytes)
	}
	e := c.get(kindRequest, pemBytes, func() *cacheEntry {
		csr, err := DecodeCertificateRequest(pemBytes)
		return &cacheEntry{value: csr, err: err}
	})
	csr, _ := e.value.(*x509.CertificateRequest)
	return csr, e.err
}

// Stats reports what the cache holds and how it has done; a nil cache
// reports zeros.
func (c *ParseCache) Stats() ParseCacheStats {
	if c == nil {
		return ParseCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// charge is the memory an entry of kind for an input of n bytes is
// taken to hold: the key (n), the entry and its map slot, and what the
// parser builds. Measured with Go 1.26 (heap kept per parse): an RSA-2048
// key from 1.7 KB of PEM keeps 4.3 KB, RSA-4096 from 3.3 KB 6.8 KB,
// ECDSA P-256 0.3 KB, Ed25519 0.1 KB; a 0.6 KB certificate 3.7 KB besides
// its DER, a request 1.3–1.9 KB besides its DER.
func charge(kind cacheKind, n int) int64 {
	if kind == kindPrivateKey {
		return 4*int64(n) + 512
	}
	return 3*int64(n) + 4096
}

// get returns the entry for (kind, b), parsing with parse and adding the
// result when there is none.
func (c *ParseCache) get(kind cacheKind, b []byte, parse func() *cacheEntry) *cacheEntry {
	c.mu.Lock()
	c.init()
	if e, ok := c.entries[kind][string(b)]; ok {
		c.stats.Hits++
		c.unlink(e)
		c.pushFront(e)
		c.mu.Unlock()
		return e
	}
	c.stats.Misses++
	c.mu.Unlock()

	return c.put(kind, b, parse())
}

// put adds e as the parse of (kind, b), unless there is one already or
// it is too large for the bound on its own, and returns the entry kept
// (e when nothing is).
func (c *ParseCache) put(kind cacheKind, b []byte, e *cacheEntry) *cacheEntry {
	e.kind, e.size = kind, charge(kind, len(b))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if e.size > c.max {
		return e
	}
	e.key = string(b)
	if old, ok := c.entries[kind][e.key]; ok {
		// Another goroutine parsed the same bytes meanwhile.
		return old
	}
	c.entries[kind][e.key] = e
	c.pushFront(e)
	c.stats.Entries++
	c.stats.Bytes += e.size
	for c.stats.Bytes > c.max {
		c.evict(c.lru.prev)
	}
	return e
}

func (c *ParseCache) evict(e *cacheEntry) {
	c.unlink(e)
	delete(c.entries[e.kind], e.key)
	c.stats.Entries--
	c.stats.Bytes -= e.size
	c.stats.Evictions++
}

func (c *ParseCache) unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *ParseCache) pushFront(e *cacheEntry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

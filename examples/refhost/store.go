package refhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/certlife/certlife/certificate"
)

// The store's errors, as a Kubernetes API server gives them.
var (
	// ErrNotFound: no object of that name.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a create met an object of the same name.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: an update named a resource version that is not the
	// object's any more (someone wrote it since it was read).
	ErrConflict = errors.New("conflict: the object has been modified")
)

// Store keeps certificates, secrets and certificate requests in plain
// maps, each object with a resource version that every write bumps. An
// update must name the version it read, or it conflicts — the optimistic
// concurrency a host relies on so that a decision made on a stale read
// never overwrites a newer object. Reads return copies, so a caller never
// changes a stored object in place.
type Store struct {
	mu           sync.Mutex
	version      int64
	certificates map[string]*certificate.Certificate
	secrets      map[string]*certificate.Secret
	requests     map[string]*certificate.CertificateRequest
	watchers     []func(kind, name string, meta certificate.ObjectMeta)
}

// watch calls f after every write, outside the store's lock, with the
// object's kind ("certificate", "secret", "request"), name and metadata.
func (s *Store) watch(f func(kind, name string, meta certificate.ObjectMeta)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, f)
}

// write runs f under the lock and, when it succeeds, tells the watchers.
func (s *Store) write(kind, name string, f func() (certificate.ObjectMeta, error)) error {
	s.mu.Lock()
	meta, err := f()
	watchers := slices.Clone(s.watchers)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for _, w := range watchers {
		w(kind, name, meta)
	}
	return nil
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		certificates: map[string]*certificate.Certificate{},
		secrets:      map[string]*certificate.Secret{},
		requests:     map[string]*certificate.CertificateRequest{},
	}
}

func (s *Store) next() string {
	s.version++
	return strconv.FormatInt(s.version, 10)
}

// Certificate returns a copy of the named certificate.
func (s *Store) Certificate(name string) (*certificate.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.certificates[name]
	if !ok {
		return nil, fmt.Errorf("certificate %s: %w", name, ErrNotFound)
	}
	return copyCertificate(c), nil
}

// Certificates lists copies of every certificate, by name.
func (s *Store) Certificates() []*certificate.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*certificate.Certificate, 0, len(s.certificates))
	for _, name := range slices.Sorted(maps.Keys(s.certificates)) {
		out = append(out, copyCertificate(s.certificates[name]))
	}
	return out
}

// CreateCertificate stores a new certificate, giving it a UID, generation 1
// and a creation time.
func (s *Store) CreateCertificate(c *certificate.Certificate) error {
	return s.write("certificate", c.Name, func() (certificate.ObjectMeta, error) {
		if _, ok := s.certificates[c.Name]; ok {
			return certificate.ObjectMeta{}, fmt.Errorf("certificate %s: %w", c.Name, ErrAlreadyExists)
		}
		c = copyCertificate(c)
		if c.UID == "" {
			c.UID = "uid-" + c.Name
		}
		c.Generation = 1
		c.ResourceVersion = s.next()
		s.certificates[c.Name] = c
		return c.ObjectMeta, nil
	})
}

// UpdateCertificateSpec replaces a certificate's spec (not its status),
// bumping its generation as the API server does.
func (s *Store) UpdateCertificateSpec(c *certificate.Certificate) error {
	return s.write("certificate", c.Name, func() (certificate.ObjectMeta, error) {
		old, ok := s.certificates[c.Name]
		if !ok {
			return certificate.ObjectMeta{}, fmt.Errorf("certificate %s: %w", c.Name, ErrNotFound)
		}
		if err := checkVersion("certificate", c.Name, old.ResourceVersion, c.ResourceVersion); err != nil {
			return certificate.ObjectMeta{}, err
		}
		n := copyCertificate(old)
		n.Spec = copyCertificate(c).Spec
		n.Generation++
		n.ResourceVersion = s.next()
		s.certificates[c.Name] = n
		return n.ObjectMeta, nil
	})
}

// UpdateCertificateStatus replaces a certificate's status (the status
// subresource): the spec and generation stay.
func (s *Store) UpdateCertificateStatus(name, resourceVersion string, st certificate.Status) error {
	return s.write("certificate", name, func() (certificate.ObjectMeta, error) {
		old, ok := s.certificates[name]
		if !ok {
			return certificate.ObjectMeta{}, fmt.Errorf("certificate %s: %w", name, ErrNotFound)
		}
		if err := checkVersion("certificate", name, old.ResourceVersion, resourceVersion); err != nil {
			return certificate.ObjectMeta{}, err
		}
		n := copyCertificate(old)
		n.Status = copyCertificate(&certificate.Certificate{Status: st}).Status
		n.ResourceVersion = s.next()
		s.certificates[name] = n
		return n.ObjectMeta, nil
	})
}

// Secret returns a copy of the named secret.
func (s *Store) Secret(name string) (*certificate.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.secrets[name]
	if !ok {
		return nil, fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	return copySecret(sec), nil
}

// Secrets lists copies of the secrets that pass keep, by name.
func (s *Store) Secrets(keep func(*certificate.Secret) bool) []*certificate.Secret {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*certificate.Secret
	for _, name := range slices.Sorted(maps.Keys(s.secrets)) {
		if sec := s.secrets[name]; keep(sec) {
			out = append(out, copySecret(sec))
		}
	}
	return out
}

// CreateSecret stores a new secret.
func (s *Store) CreateSecret(sec *certificate.Secret) error {
	return s.write("secret", sec.Name, func() (certificate.ObjectMeta, error) {
		if _, ok := s.secrets[sec.Name]; ok {
			return certificate.ObjectMeta{}, fmt.Errorf("secret %s: %w", sec.Name, ErrAlreadyExists)
		}
		sec = copySecret(sec)
		sec.ResourceVersion = s.next()
		s.secrets[sec.Name] = sec
		return sec.ObjectMeta, nil
	})
}

// UpdateSecret replaces a secret that is still at sec.ResourceVersion.
func (s *Store) UpdateSecret(sec *certificate.Secret) error {
	return s.write("secret", sec.Name, func() (certificate.ObjectMeta, error) {
		old, ok := s.secrets[sec.Name]
		if !ok {
			return certificate.ObjectMeta{}, fmt.Errorf("secret %s: %w", sec.Name, ErrNotFound)
		}
		if err := checkVersion("secret", sec.Name, old.ResourceVersion, sec.ResourceVersion); err != nil {
			return certificate.ObjectMeta{}, err
		}
		sec = copySecret(sec)
		sec.ResourceVersion = s.next()
		s.secrets[sec.Name] = sec
		return sec.ObjectMeta, nil
	})
}

// DeleteSecret deletes a secret.
func (s *Store) DeleteSecret(name string) error {
	return s.write("secret", name, func() (certificate.ObjectMeta, error) {
		old, ok := s.secrets[name]
		if !ok {
			return certificate.ObjectMeta{}, fmt.Errorf("secret %s: %w", name, ErrNotFound)
		}
		delete(s.secrets, name)
		return old.ObjectMeta, nil
	})
}

// Request returns a copy of the named request.
func (s *Store) Request(name string) (*certificate.CertificateRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[name]
	if !ok {
		return nil, fmt.Errorf("request %s: %w", name, ErrNotFound)
	}
	return copyRequest(r), nil
}

// Requests lists copies of the requests that pass keep, by name.
func (s *Store) Requests(keep func(*certificate.CertificateRequest) bool) []*certificate.CertificateRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*certificate.CertificateRequest
	for _, name := range slices.Sorted(maps.Keys(s.requests)) {
		if r := s.requests[name]; keep(r) {
			out = append(out, copyRequest(r))
		}
	}
	return out
}

// CreateRequest stores a new request, with its creation time.
func (s *Store) CreateRequest(r *certificate.CertificateRequest) error {
	return s.write("request", r.Name, func() (certificate.ObjectMeta, error) {
		if _, ok := s.requests[r.Name]; ok {
			return certificate.ObjectMeta{}, fmt.Errorf("request %s: %w", r.Name, ErrAlreadyExists)
		}
		r = copyRequest(r)
		r.ResourceVersion = s.next()
		s.requests[r.Name] = r
		return r.ObjectMeta, nil
	})
}

// UpdateRequestStatus replaces a request's status (an issuer's answer).
func (s *Store) UpdateRequestStatus(name, resourceVersion string, st certificate.RequestStatus) error {
	return s.write("request", name, func() (certificate.ObjectMeta, error) {
		old, ok := s.requests[name]
		if !ok {
			return certificate.ObjectMeta{}, fmt.Errorf("request %s: %w", name, ErrNotFound)
		}
		if err := checkVersion("request", name, old.ResourceVersion, resourceVersion); err != nil {
			return certificate.ObjectMeta{}, err
		}
		n := copyRequest(old)
		n.Status = copyRequest(&certificate.CertificateRequest{Status: st}).Status
		n.ResourceVersion = s.next()
		s.requests[name] = n
		return n.ObjectMeta, nil
	})
}

// DeleteRequest deletes a request.
func (s *Store) DeleteRequest(name string) error {
	return s.write("request", name, func() (certificate.ObjectMeta, error) {
		old, ok := s.requests[name]
		if !ok {
			return certificate.ObjectMeta{}, fmt.Errorf("request %s: %w", name, ErrNotFound)
		}
		delete(s.requests, name)
		return old.ObjectMeta, nil
	})
}

// checkVersion is the API server's check on an update: the object is still
// at the version the writer read.
func checkVersion(kind, name, have, want string) error {
	if have != want {
		return fmt.Errorf("%s %s is at version %s, not %s: %w", kind, name, have, want, ErrConflict)
	}
	return nil
}

// The copies are deep, through JSON: slow, and plainly right.
func copyCertificate(c *certificate.Certificate) *certificate.Certificate { return deepCopy(c) }
func copySecret(s *certificate.Secret) *certificate.Secret                { return deepCopy(s) }
func copyRequest(r *certificate.CertificateRequest) *certificate.CertificateRequest {
	return deepCopy(r)
}

func deepCopy[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("refhost: copying %T: %v", v, err)) // the types always marshal
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("refhost: copying %T: %v", v, err))
	}
	return out
}

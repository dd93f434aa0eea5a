package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
)

// Labels the ACME store puts on its Orders and Challenges.
const (
	// LabelACMEIssuer: a hash of the issuer (kind, namespace, name) an
	// Order or Challenge belongs to, so each issuer lists its own.
	LabelACMEIssuer = "operator.certlife.dev/acme-issuer"
	// LabelACMEOrder on a Challenge: the name of its Order (a hash of it
	// when the name is longer than a label value may be).
	LabelACMEOrder = "operator.certlife.dev/acme-order"
	// LabelACMERequest on an Order: the name of its CertificateRequest (a
	// hash of it when too long).
	LabelACMERequest = "operator.certlife.dev/acme-request"
)

// labelValue is s when it fits in a label value, else a hash of it.
func labelValue(s string) string {
	if len(s) <= 63 && (len(s) == 0 || alnum(s[0]) && alnum(s[len(s)-1])) {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

func alnum(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' }

// orderStore is an acmeclient.Store kept in Order and Challenge
// resources, so ACME work survives a restart and shows in kubectl: an
// acmeclient.State is one Order (spec, status, and when its request was
// answered) and one Challenge per challenge, owned by the Order, which is
// owned by its CertificateRequest.
//
// Get reads the API server, not the cache: a state read from a cache that
// has not seen the last write would repeat its ACME calls (a second
// order). Every write is at the resourceVersion last read or written, so
// a write over a state this process has not seen fails (and the step is
// tried again on a fresh read) instead of overwriting it. List, which the
// challenge scheduler reads for the other requests' challenges, reads the
// cache.
type orderStore struct {
	client client.Client // writes
	api    client.Reader // Get
	cache  client.Reader // List
	// issuer is the LabelACMEIssuer value; namespace is the Issuer's, ""
	// for a ClusterIssuer (its requests are in every namespace).
	issuer, namespace string

	mu    sync.Mutex
	known map[string]*stored // by key: what was last read or written
}

// stored is a state's objects as last read or written.
type stored struct {
	order      *cmacme.Order
	challenges map[string]*cmacme.Challenge
}

func newOrderStore(c client.Client, api, cache client.Reader, issuer, namespace string) *orderStore {
	return &orderStore{client: c, api: api, cache: cache, issuer: issuer, namespace: namespace, known: map[string]*stored{}}
}

var _ acmeclient.Store = (*orderStore)(nil)

// errRequestGone: the request an order would be made for is deleted.
var errRequestGone = errors.New("the request is deleted")

// errNoRequest: the issuer did not say which request a state is for.
var errNoRequest = errors.New("the ACME store was not told the state's request")

// Get reads a state from the API server, in the namespace of its request.
func (s *orderStore) Get(ctx context.Context, r acmeclient.RequestRef, key string) (*acmeclient.State, error) {
	if r.Name == "" {
		return nil, errNoRequest
	}
	var o cmacme.Order
	err := s.api.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: key}, &o)
	if apierrors.IsNotFound(err) {
		s.forget(key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cl cmacme.ChallengeList
	if err := s.api.List(ctx, &cl, client.InNamespace(r.Namespace), client.MatchingLabels{LabelACMEIssuer: s.issuer, LabelACMEOrder: labelValue(key)}); err != nil {
		return nil, err
	}
	st := &stored{order: &o, challenges: map[string]*cmacme.Challenge{}}
	for i := range cl.Items {
		c := &cl.Items[i]
		if ref := metav1.GetControllerOfNoCopy(c); ref != nil && ref.UID == o.UID {
			st.challenges[c.Name] = c
		}
	}
	s.mu.Lock()
	s.known[key] = st
	s.mu.Unlock()
	return s.state(st), nil
}

// state converts stored objects into a state.
func (s *orderStore) state(st *stored) *acmeclient.State {
	out := OrderToCore(st.order, LabelACMEIssuer, LabelACMERequest)
	names := make([]string, 0, len(st.challenges))
	for n := range st.challenges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out.Challenges = append(out.Challenges, ChallengeToCore(st.challenges[n]))
	}
	return &out
}

func (s *orderStore) forget(key string) {
	s.mu.Lock()
	delete(s.known, key)
	s.mu.Unlock()
}

// Put writes what changed: the Order (created with its state, in the
// namespace of the request state.Request names and owned by it, then its
// state and its status as they change) and each Challenge (created,
// changed, or deleted).
func (s *orderStore) Put(ctx context.Context, key string, state *acmeclient.State) error {
	s.mu.Lock()
	st := s.known[key]
	s.mu.Unlock()
	err := s.put(ctx, key, state, st)
	if err != nil {
		s.forget(key) // read again before the next write
		return err
	}
	if state.AnsweredAt != nil {
		s.forget(key) // no more steps; the next Get reads it, should one come
	}
	return nil
}

func (s *orderStore) put(ctx context.Context, key string, state *acmeclient.State, st *stored) error {
	want := OrderFromCore(state)
	want.Name = key
	want.Labels = mergeInto(want.Labels, map[string]string{LabelACMEIssuer: s.issuer})
	if st == nil {
		r := state.Request
		if r.Name == "" || r.UID == "" {
			return errNoRequest
		}
		// A request answered from a cache that has not seen its
		// deletion (its issuer told to forget it a moment ago) gets no
		// order: the API server has the last word on whether it is there.
		var live cmapi.CertificateRequest
		if err := s.api.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Name}, &live); err != nil || string(live.UID) != r.UID || live.DeletionTimestamp != nil {
			if err == nil || apierrors.IsNotFound(err) {
				err = errRequestGone
			}
			return fmt.Errorf("creating order %s/%s for request %s/%s: %w", r.Namespace, key, r.Namespace, r.Name, err)
		}
		o := want.DeepCopy()
		o.Namespace = r.Namespace
		o.Status = cmacme.OrderStatus{}
		o.Labels[LabelACMERequest] = labelValue(r.Name)
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateRequestKind,
			Name: r.Name, UID: types.UID(r.UID), Controller: new(true), BlockOwnerDeletion: new(true)}}
		if err := s.client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating order %s/%s: %w", o.Namespace, o.Name, err)
		}
		st = &stored{order: o, challenges: map[string]*cmacme.Challenge{}}
		s.mu.Lock()
		s.known[key] = st
		s.mu.Unlock()
	}
	o, err := putObject(ctx, s.client, st.order, want.Annotations[AnnotationACMEState], func(o *cmacme.Order) bool {
		if equality.Semantic.DeepEqual(o.Status, want.Status) {
			return false
		}
		o.Status = want.Status
		return true
	})
	if err != nil {
		return fmt.Errorf("updating order %s/%s: %w", st.order.Namespace, st.order.Name, err)
	}
	st.order = o
	seen := map[string]bool{}
	for i := range state.Challenges {
		c := &state.Challenges[i]
		seen[c.Name] = true
		if err := s.putChallenge(ctx, st, key, c); err != nil {
			return err
		}
	}
	for name, c := range st.challenges {
		if seen[name] {
			continue
		}
		uid := c.UID
		err := s.client.Delete(ctx, c, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting challenge %s/%s: %w", c.Namespace, c.Name, err)
		}
		s.mu.Lock() // challengeByToken reads the challenges of every state
		delete(st.challenges, name)
		s.mu.Unlock()
	}
	return nil
}

func (s *orderStore) putChallenge(ctx context.Context, st *stored, key string, c *challenge.Challenge) error {
	want := ChallengeFromCore(c)
	have := st.challenges[c.Name]
	if have == nil {
		obj := want.DeepCopy()
		obj.Namespace = st.order.Namespace
		obj.Status = cmacme.ChallengeStatus{}
		obj.Labels = map[string]string{LabelACMEIssuer: s.issuer, LabelACMEOrder: labelValue(key)}
		obj.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(st.order, cmacme.SchemeGroupVersion.WithKind(cmacme.OrderKind))}
		if err := s.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating challenge %s/%s: %w", obj.Namespace, obj.Name, err)
		}
		have = obj
		s.mu.Lock()
		st.challenges[c.Name] = obj
		s.mu.Unlock()
	}
	obj, err := putObject(ctx, s.client, have, want.Annotations[AnnotationACMEState], func(o *cmacme.Challenge) bool {
		if equality.Semantic.DeepEqual(o.Status, want.Status) {
			return false
		}
		o.Status = want.Status
		return true
	})
	if err != nil {
		return fmt.Errorf("updating challenge %s/%s: %w", have.Namespace, have.Name, err)
	}
	s.mu.Lock()
	st.challenges[c.Name] = obj
	s.mu.Unlock()
	return nil
}

// putObject brings an Order or Challenge, as last read or written, to the
// state annotation given (a merge patch at its version) and then to the
// status setStatus makes (the status subresource, at the version the
// patch left), each only when it changes; it returns the object as
// written.
func putObject[T interface {
	client.Object
	DeepCopy() T
}](ctx context.Context, c client.Client, have T, state string, setStatus func(T) bool) (T, error) {
	cur := have
	if cur.GetAnnotations()[AnnotationACMEState] != state {
		patched := cur.DeepCopy()
		a := maps.Clone(patched.GetAnnotations())
		if a == nil {
			a = map[string]string{}
		}
		a[AnnotationACMEState] = state
		patched.SetAnnotations(a)
		if err := c.Patch(ctx, patched, mergePatch(cur)); err != nil {
			return have, err
		}
		cur = patched
	}
	upd := cur.DeepCopy()
	if setStatus(upd) {
		if err := c.Status().Update(ctx, upd); err != nil {
			return cur, err
		}
		cur = upd
	}
	return cur, nil
}

// Delete removes a state's Order and its Challenges (Kubernetes' garbage
// collector would remove the Challenges with their Order; the store does
// not wait for it), in the namespace of the request r the state is for.
func (s *orderStore) Delete(ctx context.Context, r acmeclient.RequestRef, key string) error {
	s.mu.Lock()
	st := s.known[key]
	delete(s.known, key)
	s.mu.Unlock()
	ns := ""
	switch {
	case st != nil:
		ns = st.order.Namespace
	case r.Name != "":
		ns = r.Namespace
	default:
		// A state that names no request (written before states did):
		// find it among the issuer's Orders.
		var ol cmacme.OrderList
		opts := []client.ListOption{client.MatchingLabels{LabelACMEIssuer: s.issuer}}
		if s.namespace != "" {
			opts = append(opts, client.InNamespace(s.namespace))
		}
		if err := s.cache.List(ctx, &ol, opts...); err != nil {
			return err
		}
		for i := range ol.Items {
			if ol.Items[i].Name == key {
				ns = ol.Items[i].Namespace
			}
		}
		if ns == "" {
			return nil // nothing known to delete
		}
	}
	var cl cmacme.ChallengeList
	if err := s.api.List(ctx, &cl, client.InNamespace(ns), client.MatchingLabels{LabelACMEIssuer: s.issuer, LabelACMEOrder: labelValue(key)}); err != nil {
		return err
	}
	for i := range cl.Items {
		if err := s.client.Delete(ctx, &cl.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	o := &cmacme.Order{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key}}
	if err := s.client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// challengeByToken is the Challenge of an HTTP-01 or DNS-01 token among
// the states as last read or written (a copy), nil when none has it.
func (s *orderStore) challengeByToken(token string) *cmacme.Challenge {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.known {
		for _, c := range st.challenges {
			if c.Spec.Token == token {
				return c.DeepCopy()
			}
		}
	}
	return nil
}

// List reads every state of the issuer from the cache.
func (s *orderStore) List(ctx context.Context) (map[string]*acmeclient.State, error) {
	opts := []client.ListOption{client.MatchingLabels{LabelACMEIssuer: s.issuer}}
	if s.namespace != "" {
		opts = append(opts, client.InNamespace(s.namespace))
	}
	var ol cmacme.OrderList
	if err := s.cache.List(ctx, &ol, opts...); err != nil {
		return nil, err
	}
	var cl cmacme.ChallengeList
	if err := s.cache.List(ctx, &cl, opts...); err != nil {
		return nil, err
	}
	byOrder := map[types.UID]*stored{}
	out := make(map[string]*acmeclient.State, len(ol.Items))
	for i := range ol.Items {
		byOrder[ol.Items[i].UID] = &stored{order: &ol.Items[i], challenges: map[string]*cmacme.Challenge{}}
	}
	for i := range cl.Items {
		c := &cl.Items[i]
		if ref := metav1.GetControllerOfNoCopy(c); ref != nil && byOrder[ref.UID] != nil {
			byOrder[ref.UID].challenges[c.Name] = c
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range byOrder {
		state := s.state(st)
		out[st.order.Name] = state
		if _, ok := s.known[st.order.Name]; !ok && state.AnsweredAt != nil {
			s.known[st.order.Name] = st // for Delete, which removes old answered states
		}
	}
	return out, nil
}

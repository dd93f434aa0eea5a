package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
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

// stepRequest is the context key of the CertificateRequest being stepped.
type stepRequest struct{}

// withRequest tells the store which request a Step is for: its Order is
// created in the request's namespace, owned by it.
func withRequest(ctx context.Context, cr *v1alpha1.CertificateRequest) context.Context {
	return context.WithValue(ctx, stepRequest{}, cr)
}

func requestOf(ctx context.Context) *v1alpha1.CertificateRequest {
	cr, _ := ctx.Value(stepRequest{}).(*v1alpha1.CertificateRequest)
	return cr
}

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
	order      *v1alpha1.Order
	challenges map[string]*v1alpha1.Challenge
}

func newOrderStore(c client.Client, api, cache client.Reader, issuer, namespace string) *orderStore {
	return &orderStore{client: c, api: api, cache: cache, issuer: issuer, namespace: namespace, known: map[string]*stored{}}
}

var _ acmeclient.Store = (*orderStore)(nil)

// errNoRequest: the store was called outside a Step of a request.
var errNoRequest = errors.New("the ACME store was called without the request being stepped")

// Get reads a state from the API server.
func (s *orderStore) Get(ctx context.Context, key string) (*acmeclient.State, error) {
	cr := requestOf(ctx)
	if cr == nil {
		return nil, errNoRequest
	}
	var o v1alpha1.Order
	err := s.api.Get(ctx, types.NamespacedName{Namespace: cr.Namespace, Name: key}, &o)
	if apierrors.IsNotFound(err) {
		s.forget(key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cl v1alpha1.ChallengeList
	if err := s.api.List(ctx, &cl, client.InNamespace(cr.Namespace), client.MatchingLabels{LabelACMEIssuer: s.issuer, LabelACMEOrder: labelValue(key)}); err != nil {
		return nil, err
	}
	st := &stored{order: &o, challenges: map[string]*v1alpha1.Challenge{}}
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
	out := &acmeclient.State{Order: OrderToCore(st.order, LabelACMEIssuer, LabelACMERequest), AnsweredAt: microToCore(st.order.Status.AnsweredAt)}
	names := make([]string, 0, len(st.challenges))
	for n := range st.challenges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out.Challenges = append(out.Challenges, ChallengeToCore(st.challenges[n]))
	}
	return out
}

func (s *orderStore) forget(key string) {
	s.mu.Lock()
	delete(s.known, key)
	s.mu.Unlock()
}

// Put writes what changed: the Order (created with its spec, then its
// status) and each Challenge (created, status updated, or deleted).
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
	want := OrderFromCore(&state.Order)
	want.Name = key
	want.Labels = mergeInto(want.Labels, map[string]string{LabelACMEIssuer: s.issuer})
	want.Status.AnsweredAt = microFromCore(state.AnsweredAt)
	normalize(&want.Status)
	if st == nil {
		cr := requestOf(ctx)
		if cr == nil {
			return errNoRequest
		}
		o := want.DeepCopy()
		o.Status = v1alpha1.OrderStatus{}
		o.Labels[LabelACMERequest] = labelValue(cr.Name)
		o.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cr, v1alpha1.GroupVersion.WithKind("CertificateRequest"))}
		if err := s.client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating order %s/%s: %w", o.Namespace, o.Name, err)
		}
		st = &stored{order: o, challenges: map[string]*v1alpha1.Challenge{}}
		s.mu.Lock()
		s.known[key] = st
		s.mu.Unlock()
	}
	if !equality.Semantic.DeepEqual(st.order.Status, want.Status) {
		o := st.order.DeepCopy()
		o.Status = want.Status
		if err := s.client.Status().Update(ctx, o); err != nil {
			return fmt.Errorf("updating order %s/%s: %w", o.Namespace, o.Name, err)
		}
		st.order = o
	}
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
		delete(st.challenges, name)
	}
	return nil
}

func (s *orderStore) putChallenge(ctx context.Context, st *stored, key string, c *challenge.Challenge) error {
	want := ChallengeFromCore(c)
	want.Namespace = st.order.Namespace
	normalize(&want.Status)
	have := st.challenges[c.Name]
	if have == nil {
		obj := want.DeepCopy()
		obj.Status = v1alpha1.ChallengeStatus{}
		obj.Labels = map[string]string{LabelACMEIssuer: s.issuer, LabelACMEOrder: labelValue(key)}
		obj.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(st.order, v1alpha1.GroupVersion.WithKind("Order"))}
		if err := s.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating challenge %s/%s: %w", obj.Namespace, obj.Name, err)
		}
		have = obj
		st.challenges[c.Name] = obj
	}
	if equality.Semantic.DeepEqual(have.Status, want.Status) {
		return nil
	}
	obj := have.DeepCopy()
	obj.Status = want.Status
	if err := s.client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("updating challenge %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	st.challenges[c.Name] = obj
	return nil
}

// normalize gives a status the precision the API server keeps
// (microseconds), so that what was written compares equal to what is
// read back.
func normalize[T any](v *T) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	var out T
	if json.Unmarshal(b, &out) == nil {
		*v = out
	}
}

// Delete removes a state's Order and its Challenges (Kubernetes' garbage
// collector would remove the Challenges with their Order; the store does
// not wait for it).
func (s *orderStore) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	st := s.known[key]
	delete(s.known, key)
	s.mu.Unlock()
	ns := ""
	switch {
	case st != nil:
		ns = st.order.Namespace
	default:
		// Not read nor written lately (the issuer removes an old state
		// during another request's step): find it among the issuer's
		// Orders.
		var ol v1alpha1.OrderList
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
		if ns == "" && requestOf(ctx) != nil {
			ns = requestOf(ctx).Namespace
		}
		if ns == "" {
			return nil // nothing known to delete
		}
	}
	var cl v1alpha1.ChallengeList
	if err := s.api.List(ctx, &cl, client.InNamespace(ns), client.MatchingLabels{LabelACMEIssuer: s.issuer, LabelACMEOrder: labelValue(key)}); err != nil {
		return err
	}
	for i := range cl.Items {
		if err := s.client.Delete(ctx, &cl.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	o := &v1alpha1.Order{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key}}
	if err := s.client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// List reads every state of the issuer from the cache.
func (s *orderStore) List(ctx context.Context) (map[string]*acmeclient.State, error) {
	opts := []client.ListOption{client.MatchingLabels{LabelACMEIssuer: s.issuer}}
	if s.namespace != "" {
		opts = append(opts, client.InNamespace(s.namespace))
	}
	var ol v1alpha1.OrderList
	if err := s.cache.List(ctx, &ol, opts...); err != nil {
		return nil, err
	}
	var cl v1alpha1.ChallengeList
	if err := s.cache.List(ctx, &cl, opts...); err != nil {
		return nil, err
	}
	byOrder := map[types.UID]*stored{}
	out := make(map[string]*acmeclient.State, len(ol.Items))
	for i := range ol.Items {
		byOrder[ol.Items[i].UID] = &stored{order: &ol.Items[i], challenges: map[string]*v1alpha1.Challenge{}}
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
		out[st.order.Name] = s.state(st)
		if _, ok := s.known[st.order.Name]; !ok && st.order.Status.AnsweredAt != nil {
			s.known[st.order.Name] = st // for Delete, which removes old answered states
		}
	}
	return out, nil
}

package operator

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// rememberingMapper answers RESTMapping from the mappings it has found
// before, and asks the mapper it wraps only for a kind (and versions) it
// has not. A cache restricted to some namespaces (Options.Namespaces,
// cache.Options.DefaultNamespaces) asks whether an object's kind is
// namespaced on every read; controller-runtime's mapper answers by trying
// each API group of the cluster in turn, about 11 µs a read, which made
// it the largest single cost of a namespace-restricted operator's reads.
// Only mappings found are kept, never an error: a kind installed later
// (a CRD) is found by the wrapped mapper, which discovers it, as before.
// The mappings of the kinds the operator reads (core, cert-manager.io,
// networking, Gateway API) do not change while their CRDs stay installed.
type rememberingMapper struct {
	meta.RESTMapper
	mu    sync.RWMutex
	known map[string]*meta.RESTMapping
}

// newRememberingMapper is manager.Options.MapperProvider: next's mapper
// (controller-runtime's own when next is nil), remembering its mappings.
func newRememberingMapper(next func(*rest.Config, *http.Client) (meta.RESTMapper, error)) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	if next == nil {
		next = apiutil.NewDynamicRESTMapper
	}
	return func(c *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
		m, err := next(c, hc)
		if err != nil {
			return nil, err
		}
		return &rememberingMapper{RESTMapper: m, known: map[string]*meta.RESTMapping{}}, nil
	}
}

// RESTMapping is the wrapped mapper's answer, remembered when it is a
// mapping. The caller gets its own copy, as it would from the wrapped
// mapper.
func (m *rememberingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := gk.String()
	if len(versions) > 0 {
		key += "/" + strings.Join(versions, ",")
	}
	m.mu.RLock()
	found, ok := m.known[key]
	m.mu.RUnlock()
	if ok {
		c := *found
		return &c, nil
	}
	found, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	c := *found
	m.mu.Lock()
	m.known[key] = &c
	m.mu.Unlock()
	return found, nil
}

package operator

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// countingMapper counts the RESTMapping calls that reach apimachinery's
// DefaultRESTMapper.
type countingMapper struct {
	*meta.DefaultRESTMapper
	calls int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls++
	return m.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func TestRememberingMapperAsksOncePerKind(t *testing.T) {
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	inner := &countingMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})}
	inner.Add(secret, meta.RESTScopeNamespace)
	provide := newRememberingMapper(func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return inner, nil })
	m, err := provide(nil, nil)
	require.NoError(t, err)

	for range 3 {
		got, err := m.RESTMapping(secret.GroupKind(), "v1")
		require.NoError(t, err)
		require.Equal(t, meta.RESTScopeNameNamespace, got.Scope.Name())
		require.Equal(t, secret, got.GroupVersionKind)
		got.Resource.Resource = "changed by the caller"
	}
	require.Equal(t, 1, inner.calls, "a mapping found is remembered")
	got, err := m.RESTMapping(secret.GroupKind(), "v1")
	require.NoError(t, err)
	require.Equal(t, "secrets", got.Resource.Resource, "each caller gets its own copy")

	// Other versions are other questions.
	_, err = m.RESTMapping(secret.GroupKind())
	require.NoError(t, err)
	require.Equal(t, 2, inner.calls)

	// A kind not (yet) installed is asked about every time, so that it is
	// found once it is.
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	for range 2 {
		_, err = m.RESTMapping(widget.GroupKind(), "v1")
		require.True(t, meta.IsNoMatchError(err), "%v", err)
	}
	require.Equal(t, 4, inner.calls)
	inner.Add(widget, meta.RESTScopeNamespace)
	got, err = m.RESTMapping(widget.GroupKind(), "v1")
	require.NoError(t, err)
	require.Equal(t, widget, got.GroupVersionKind)
}

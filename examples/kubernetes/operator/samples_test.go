package operator_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The samples the README applies are accepted by the schema and end with
// the web certificate Ready, through a self-signed root and a CA issuer.
func TestSamples(t *testing.T) {
	h := newHarness(t)
	h.start()
	for _, file := range []string{"issuers.yaml", "certificate.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "config", "samples", file))
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var obj unstructured.Unstructured
			err := dec.Decode(&obj.Object)
			if err == io.EOF {
				break
			}
			require.NoError(t, err, file)
			if obj.Object == nil {
				continue
			}
			h.create(&obj)
		}
	}
	h.waitReady("example-ca", 1)
	h.waitReady("web", 1)
}

// The ACME sample is accepted by the schema as it is (it is not run: it
// names Let's Encrypt's staging server).
func TestACMESampleIsAccepted(t *testing.T) {
	h := newHarness(t)
	b, err := os.ReadFile(filepath.Join("..", "config", "samples", "acme-issuer.yaml"))
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	n := 0
	for {
		var obj unstructured.Unstructured
		err := dec.Decode(&obj.Object)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if obj.Object != nil {
			h.create(&obj)
			n++
		}
	}
	require.Equal(t, 2, n, "an Issuer and a Certificate")
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The checked-in RBAC role is what controller-gen (the version pinned as
// a tool in go.mod) makes from the operator's markers today. Fix a
// failure with `go generate`.
func TestRBACIsUpToDate(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen", "rbac:roleName=certlife-operator", "paths=./operator/...", "output:rbac:artifacts:config="+tmp)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run(), "controller-gen")
	want := readDir(t, tmp)
	have := readDir(t, filepath.Join("config", "rbac"))
	delete(have, "kustomization.yaml") // not controller-gen's: lists role.yaml for kubectl apply -k
	require.NotEmpty(t, want)
	for name, content := range want {
		assert.Equal(t, content, have[name], "config/rbac/%s differs from what controller-gen makes: run go generate", name)
	}
	for name := range have {
		_, ok := want[name]
		assert.True(t, ok, "config/rbac/%s is not made by controller-gen any more: remove it", name)
	}
}

// The CRDs in config/crd are cert-manager's own, as its module (the
// version in go.mod) ships them in deploy/crds: the operator serves
// exactly the API the reference operator does. Fix a failure after a
// version change with `go generate`.
func TestCRDsAreTheReferenceOperators(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	require.NoError(t, err, "go list -m github.com/cert-manager/cert-manager")
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	want := readDir(t, dir)
	for name := range want {
		if !strings.HasSuffix(name, ".yaml") {
			delete(want, name)
		}
	}
	have := readDir(t, filepath.Join("config", "crd"))
	delete(have, "kustomization.yaml") // not cert-manager's: lists its CRDs for kubectl apply -k
	require.Len(t, want, 6, "cert-manager's CRDs: certificates, certificaterequests, issuers, clusterissuers, orders, challenges")
	for name, content := range want {
		assert.Equal(t, content, have[name], "config/crd/%s differs from %s: run go generate", name, filepath.Join(dir, name))
	}
	for name := range have {
		_, ok := want[name]
		assert.True(t, ok, "config/crd/%s is not one of cert-manager's CRDs: remove it", name)
	}
}

// The Gateway API's CRDs in config/crd/gateway-api are its module's
// standard channel (the version in go.mod), for the tests' API server and
// for users without them: the operator does not install them. Fix a
// failure after a version change with `go generate`.
func TestGatewayAPICRDsAreTheModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	require.NoError(t, err, "go list -m sigs.k8s.io/gateway-api")
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	want := readDir(t, dir)
	have := readDir(t, filepath.Join("config", "crd", "gateway-api"))
	require.Contains(t, want, "gateway.networking.k8s.io_gateways.yaml")
	for name, content := range want {
		assert.Equal(t, content, have[name], "config/crd/gateway-api/%s differs from %s: run go generate", name, filepath.Join(dir, name))
	}
	for name := range have {
		_, ok := want[name]
		assert.True(t, ok, "config/crd/gateway-api/%s is not one of the Gateway API's standard CRDs: remove it", name)
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue // config/crd/gateway-api: the Gateway API's CRDs, for the tests
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// Package examples holds the runnable programs on the public host loop
// (certificate/host). This test keeps them honest: they may import only
// what users can.
package examples

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No Go file under examples/ — the quickstart, the embedded host, the
// fleet simulation, the Kubernetes operator (its own module) — imports a
// package under the module's top-level internal/: users cannot, so an
// example that needs one shows a gap in the public API. What only the
// examples share lives under examples/internal/, which they may import.
func TestExamplesImportOnlyPublicPackages(t *testing.T) {
	const module = "github.com/certlife/certlife"
	const forbidden = module + "/internal/"
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			assert.False(t, strings.HasPrefix(p, forbidden), "%s imports %s, which users cannot import", path, p)
		}
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, files, 10, "Go files under examples/: the walk missed them")
}

// The embedded host is written as a new user writes one: it imports no
// package under examples/ either, so no helper hides its real size.
func TestEmbeddedImportsNoExampleHelpers(t *testing.T) {
	files, err := filepath.Glob("embedded/*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files, "examples/embedded")
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			assert.False(t, strings.HasPrefix(p, "github.com/certlife/certlife/examples/"), "%s imports %s", path, p)
		}
	}
}

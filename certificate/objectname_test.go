package certificate

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Names and namespaces are judged as Kubernetes judges them, and an error
// quotes the value and says what is wrong with it.
func TestValidateObjectNameAndNamespace(t *testing.T) {
	names := map[string]string{ // name → part of the error, "" when valid
		"web":                    "",
		"web-tls":                "",
		"web.example.com":        "",
		"0":                      "",
		"a-1.b-2":                "",
		strings.Repeat("a", 253): "",
		"":                       "it is empty",
		strings.Repeat("a", 254): "it is 254 characters long, over 253",
		"team-b/db-tls":          `"team-b/db-tls" is not a valid object name: it has the character '/'`,
		"Web":                    "it has the upper-case letter 'W'",
		"web_tls":                "it has the character '_'",
		"-web":                   `it starts with '-'`,
		"web-":                   `it ends with '-'`,
		".web":                   `it starts with '.'`,
		"web.":                   `it ends with '.'`,
		"a..b":                   `it has '.' before a dot`,
		"a-.b":                   `it has '-' before a dot`,
		"a.-b":                   `it has '-' after a dot`,
		"..":                     `it starts with '.'`,
		"caf\u00e9":              "it has a non-ASCII character",
		"web tls":                "it has the character ' '",
		"web\x00":                `it has the character '\x00'`,
	}
	for name, want := range names {
		err := ValidateObjectName(name)
		if want == "" {
			assert.NoError(t, err, "%q", name)
			continue
		}
		require.Error(t, err, "%q", name)
		assert.ErrorIs(t, err, ErrInvalidName)
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), objectNameRule)
	}
	namespaces := map[string]string{
		"":                      "",
		"default":               "",
		"team-b":                "",
		strings.Repeat("n", 63): "",
		strings.Repeat("n", 64): "it is 64 characters long, over 63",
		"team.b":                `"team.b" is not a valid namespace: it has the character '.'`,
		"team/b":                "it has the character '/'",
		"Default":               "it has the upper-case letter 'D'",
		"-team":                 `it starts with '-'`,
	}
	for ns, want := range namespaces {
		err := ValidateNamespace(ns)
		if want == "" {
			assert.NoError(t, err, "%q", ns)
			continue
		}
		require.Error(t, err, "%q", ns)
		assert.ErrorIs(t, err, ErrInvalidName)
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), namespaceRule)
	}
}

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateObjectName and ValidateNamespace agree with Kubernetes' own
// regular expressions and length bounds (k8s.io/apimachinery's
// IsDNS1123Subdomain and IsDNS1123Label).
func FuzzValidateObjectName(f *testing.F) {
	for _, s := range []string{"web", "a.b", "a..b", "A", "-", "a-", "a.-b", "team-b/db", "", strings.Repeat("a", 254)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		wantName := len(s) <= 253 && dns1123Subdomain.MatchString(s)
		if got := ValidateObjectName(s) == nil; got != wantName {
			t.Errorf("ValidateObjectName(%q) valid = %v, Kubernetes says %v", s, got, wantName)
		}
		wantNS := s == "" || len(s) <= 63 && dns1123Label.MatchString(s)
		if got := ValidateNamespace(s) == nil; got != wantNS {
			t.Errorf("ValidateNamespace(%q) valid = %v, Kubernetes says %v", s, got, wantNS)
		}
	})
}

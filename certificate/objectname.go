package certificate

import (
	"errors"
	"fmt"
)

// ErrInvalidName is wrapped by the errors of ValidateObjectName and
// ValidateNamespace.
var ErrInvalidName = errors.New("certificate: invalid name")

// The rules of ValidateObjectName and ValidateNamespace, as error messages
// end with them.
const (
	objectNameRule = "an object name is a lower-case RFC 1123 subdomain: at most 253 characters, a-z, 0-9, '-' and '.', each part between dots starting and ending with a letter or digit"
	namespaceRule  = "a namespace is a lower-case RFC 1123 label: at most 63 characters, a-z, 0-9 and '-', starting and ending with a letter or digit"
)

// ValidateObjectName returns an error wrapping ErrInvalidName when name
// cannot name a certificate, a secret or a request, and nil when it can.
// The rule is Kubernetes' for the names of these objects (a DNS-1123
// subdomain): 1 to 253 characters, lower-case letters, digits, '-' and
// '.', each part between dots starting and ending with a letter or digit.
// So a name never holds '/' and cannot reach into another namespace;
// certlife's stores (package certificate/host) refuse every object whose
// name fails it, and Validate every spec.secretName. The error quotes the
// name and says what is wrong with it.
func ValidateObjectName(name string) error {
	if e := objectNameError(name); e != nil {
		return e
	}
	return nil
}

// ValidateNamespace returns an error wrapping ErrInvalidName when
// namespace cannot be an object's namespace, and nil when it can. The
// rule is Kubernetes' for namespaces (a DNS-1123 label): at most 63
// characters, lower-case letters, digits and '-', starting and ending
// with a letter or digit; and the empty namespace, which a host without
// namespaces puts every object in, is valid.
func ValidateNamespace(namespace string) error {
	if e := namespaceError(namespace); e != nil {
		return e
	}
	return nil
}

// nameError is the error of ValidateObjectName and ValidateNamespace.
type nameError struct{ what, value, why, rule string }

func objectNameError(name string) *nameError {
	if why := labelProblem(name, MaxNameLength, true); why != "" {
		return &nameError{what: "object name", value: name, why: why, rule: objectNameRule}
	}
	return nil
}

func namespaceError(namespace string) *nameError {
	if namespace == "" {
		return nil
	}
	if why := labelProblem(namespace, 63, false); why != "" {
		return &nameError{what: "namespace", value: namespace, why: why, rule: namespaceRule}
	}
	return nil
}

func (e *nameError) Error() string { return "certificate: " + e.detail() }

// detail is the error without the package: what a field error puts after
// the field's path.
func (e *nameError) detail() string {
	return fmt.Sprintf("%q is not a valid %s: %s (%s)", e.value, e.what, e.why, e.rule)
}

func (e *nameError) Unwrap() error { return ErrInvalidName }

// labelProblem says what keeps s from being a DNS-1123 label of at most
// max characters, or a subdomain (dots allowed) when dots; "" when it is
// one.
func labelProblem(s string, max int, dots bool) string {
	switch {
	case s == "":
		return "it is empty"
	case len(s) > max:
		return fmt.Sprintf("it is %d characters long, over %d", len(s), max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			continue
		case c == '-' || c == '.' && dots:
		case 'A' <= c && c <= 'Z':
			return fmt.Sprintf("it has the upper-case letter %q", c)
		case c >= 0x80:
			return "it has a non-ASCII character"
		default:
			return fmt.Sprintf("it has the character %q", c)
		}
		// c is '-' or '.': a letter or digit must come before and after.
		switch {
		case i == 0:
			return fmt.Sprintf("it starts with %q", c)
		case i == len(s)-1:
			return fmt.Sprintf("it ends with %q", c)
		case c == '.' && (s[i-1] == '-' || s[i-1] == '.'):
			return fmt.Sprintf("it has %q before a dot", s[i-1])
		case s[i-1] == '.' && c == '-':
			return "it has '-' after a dot"
		}
	}
	return ""
}

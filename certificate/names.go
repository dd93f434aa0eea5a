package certificate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/certlife/certlife/internal/stablehash"
	"github.com/certlife/certlife/keys"
)

// MaxNameLength is the longest object name certlife makes: a Kubernetes
// object name (a DNS-1123 subdomain) holds at most 253 characters.
const MaxNameLength = 253

// RequestName is the deterministic name of a certificate's request for a
// revision: "<certificate>-<revision>". A second create of the same name,
// from a stale cache, conflicts instead of making a second request.
//
// A certificate name too long to take the suffix is shortened and a stable
// hash of the whole name put in its place ("<prefix>-<hash>-<revision>"),
// so the name stays within MaxNameLength and is still the same for the
// same certificate and revision. From a name that is a DNS-1123 subdomain
// the result is one too.
func RequestName(certificate string, revision int) string {
	return objectName(certificate, "-"+strconv.Itoa(revision))
}

// nextKeySecretName is deterministic per certificate, revision and key
// spec: a spec change mid-issuance gives a new name, so a stale cache never
// confuses the old key for the new one.
func nextKeySecretName(c *Certificate, rev int, spec keys.KeySpec) string {
	h := stablehash.Sum64("next-key", fmt.Sprintf("%s/%d/%s/%d", c.UID, rev, spec.Algorithm, spec.Size))
	return objectName(c.Name, fmt.Sprintf("-next-key-%d-%08x", rev, uint32(h)))
}

// objectName is base+suffix, shortened as RequestName describes when it
// would be longer than MaxNameLength.
func objectName(base, suffix string) string {
	if len(base)+len(suffix) <= MaxNameLength {
		return base + suffix
	}
	hash := fmt.Sprintf("-%08x", uint32(stablehash.Sum64("object-name", base)))
	keep := MaxNameLength - len(suffix) - len(hash)
	if keep < 0 {
		keep = 0
	}
	// A subdomain's parts end with a letter or digit: cut back to one.
	prefix := strings.TrimRight(base[:min(keep, len(base))], "-.")
	if prefix == "" {
		hash = hash[1:]
	}
	return prefix + hash + suffix
}

package order

import (
	"net/netip"
	"strings"

	"github.com/certlife/certlife/challenge"
)

// ChooseSolver picks the solver for one identifier (a DNS name, its base
// name when wildcard is set, or an IP address) among those whose challenge
// type the authorization offers (offered; nil means any type). A
// selector's fields are all conditions: every matchLabel must be on the
// order, and when a selector lists dnsNames the identifier must be one of
// them, and when it lists dnsZones the identifier must be in one of them —
// a selector with both needs both. Of the solvers that apply, the most
// specific wins, in this order:
//
//  1. a selector that names the identifier in dnsNames;
//  2. a selector whose dnsZones hold the identifier;
//  3. a selector with only matchLabels;
//  4. a solver with no selector (or an empty one), the default.
//
// Within a tier the longer matching zone wins, then the selector with more
// matchLabels; a tie after that goes to the first in spec order.
//
// Names compare without case or a trailing dot. A wildcard identifier
// (RFC 8555 §7.1.3) matches the dnsNames entry "*.example.com", never the
// bare "example.com"; a zone holds a name equal to it or ending in "."
// and the zone, so the zone "example.com" holds both "example.com" and
// "*.example.com". Wildcards can only be solved with DNS-01 (RFC 8555
// §7.1.3, RFC 8737 §3), and IP addresses never with DNS-01 (RFC 8738 §7);
// zones never hold an IP address. It returns false when no solver applies.
func ChooseSolver(solvers []SolverConfig, name string, wildcard bool, offered []challenge.Type, labels map[string]string) (challenge.Solver, bool) {
	base := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "*."), "."))
	id := identifier{base: base, wildcard: wildcard}
	if _, err := netip.ParseAddr(base); err == nil && !wildcard {
		id.ip = true
	}
	best, bestRank := -1, [3]int{}
	for i, s := range solvers {
		typ, ok := solverType(s.Solver)
		if !ok || !offers(offered, typ) {
			continue
		}
		if (wildcard && typ != challenge.TypeDNS01) || (id.ip && typ == challenge.TypeDNS01) {
			continue
		}
		rank, ok := rankSolver(s.Selector, id, labels)
		if !ok {
			continue
		}
		if best < 0 || better(rank, bestRank) {
			best, bestRank = i, rank
		}
	}
	if best < 0 {
		return challenge.Solver{}, false
	}
	return solvers[best].Solver, true
}

// identifier is what a selector is matched against.
type identifier struct {
	base     string // lower case, no trailing dot, no "*."
	wildcard bool
	ip       bool
}

// name is the identifier as a selector's dnsNames lists it.
func (id identifier) name() string {
	if id.wildcard {
		return "*." + id.base
	}
	return id.base
}

// solverType is the challenge type a solver solves: DNS-01 when it
// configures DNS-01, else HTTP-01 when it configures HTTP-01, else
// TLS-ALPN-01; false when it configures none.
func solverType(s challenge.Solver) (challenge.Type, bool) {
	switch {
	case s.DNS01 != nil:
		return challenge.TypeDNS01, true
	case s.HTTP01 != nil:
		return challenge.TypeHTTP01, true
	case s.TLSALPN01 != nil:
		return challenge.TypeTLSALPN01, true
	}
	return "", false
}

func offers(offered []challenge.Type, t challenge.Type) bool {
	if offered == nil {
		return true
	}
	for _, o := range offered {
		if o == t {
			return true
		}
	}
	return false
}

// rankSolver returns (tier, matching zone length, labels): higher is more
// specific; false when the selector does not apply.
func rankSolver(sel *Selector, id identifier, labels map[string]string) ([3]int, bool) {
	if sel == nil || (len(sel.DNSNames) == 0 && len(sel.DNSZones) == 0 && len(sel.MatchLabels) == 0) {
		return [3]int{1, 0, 0}, true
	}
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return [3]int{}, false
		}
	}
	nl := len(sel.MatchLabels)
	named := false
	if len(sel.DNSNames) > 0 {
		want := id.name()
		for _, n := range sel.DNSNames {
			if strings.ToLower(strings.TrimSuffix(n, ".")) == want {
				named = true
				break
			}
		}
		if !named {
			return [3]int{}, false
		}
	}
	zone := 0
	if len(sel.DNSZones) > 0 {
		zone = -1
		if !id.ip {
			for _, z := range sel.DNSZones {
				z = strings.ToLower(strings.Trim(z, "."))
				if z != "" && (id.base == z || strings.HasSuffix(id.base, "."+z)) {
					zone = max(zone, len(z))
				}
			}
		}
		if zone < 0 {
			return [3]int{}, false
		}
	}
	switch {
	case named:
		return [3]int{4, zone, nl}, true
	case len(sel.DNSZones) > 0:
		return [3]int{3, zone, nl}, true
	}
	return [3]int{2, 0, nl}, true
}

func better(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

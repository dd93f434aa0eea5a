package order

import (
	"strings"

	"github.com/certlife/certlife/challenge"
)

// ChooseSolver picks the solver for one identifier, as the reference
// operator's users expect:
//
//  1. a selector naming the DNS name exactly (most matchLabels wins a tie);
//  2. a selector whose DNS zone the name is in, the longest zone first
//     (then most matchLabels);
//  3. a selector with only matchLabels, the most labels first;
//  4. a solver with no selector (the default).
//
// A selector's matchLabels must all be on the order. Wildcard names can
// only be solved with DNS-01 (RFC 8555 §7.1.3), so HTTP-01 solvers are
// skipped for them. It returns false when no solver applies. Ties keep the
// first in spec order.
func ChooseSolver(solvers []SolverConfig, name string, wildcard bool, labels map[string]string) (challenge.Solver, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	best, bestRank := -1, [3]int{}
	for i, s := range solvers {
		if wildcard && s.Solver.DNS01 == nil {
			continue
		}
		if s.Solver.HTTP01 == nil && s.Solver.DNS01 == nil {
			continue
		}
		rank, ok := rankSolver(s.Selector, name, labels)
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

// rankSolver returns (tier, zone length, labels): higher is more specific.
func rankSolver(sel *Selector, name string, labels map[string]string) ([3]int, bool) {
	if sel == nil || (len(sel.DNSNames) == 0 && len(sel.DNSZones) == 0 && len(sel.MatchLabels) == 0) {
		return [3]int{1, 0, 0}, true
	}
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return [3]int{}, false
		}
	}
	nl := len(sel.MatchLabels)
	if len(sel.DNSNames) > 0 || len(sel.DNSZones) > 0 {
		for _, n := range sel.DNSNames {
			if strings.ToLower(strings.TrimSuffix(n, ".")) == name {
				return [3]int{4, 0, nl}, true
			}
		}
		zone := -1
		for _, z := range sel.DNSZones {
			z = strings.ToLower(strings.Trim(z, "."))
			if name == z || strings.HasSuffix(name, "."+z) {
				zone = max(zone, len(z))
			}
		}
		if zone >= 0 {
			return [3]int{3, zone, nl}, true
		}
		return [3]int{}, false // names or zones given, and none matches
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

package hosttest

import (
	"slices"
	"sync"

	"github.com/certlife/certlife/certificate/host"
)

// key names an object of a kind.
type key struct {
	kind            host.Kind
	namespace, name string
}

// report is a write the Watcher is to report.
type report struct {
	key
	what    string // "Update of Secret a/b", for messages
	rv      string
	uid     string // empty: not known to the suite
	owner   string
	deleted bool
}

// recorder keeps a Watcher's reports, by object, as they come (from any
// goroutine), and the writes the suite expects it to report.
type recorder struct {
	mu         sync.Mutex
	namespaces []string
	byKey      map[key][]host.Change
	claimed    map[key]int // reports of the object matched to writes
	wake       chan struct{}
	expected   []report
}

// newRecorder keeps the reports of objects in namespaces.
func newRecorder(namespaces []string) *recorder {
	return &recorder{namespaces: slices.Clone(namespaces), byKey: map[key][]host.Change{}, claimed: map[key]int{}, wake: make(chan struct{})}
}

func (r *recorder) add(ch host.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.namespaces, ch.Namespace) {
		return
	}
	k := key{ch.Kind, ch.Namespace, ch.Name}
	r.byKey[k] = append(r.byKey[k], ch)
	close(r.wake)
	r.wake = make(chan struct{})
}

func (r *recorder) expect(p report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expected = append(r.expected, p)
}

// takeExpected returns the writes not yet matched to reports, in order.
func (r *recorder) takeExpected() []report {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.expected
	r.expected = nil
	return out
}

// claim matches the first report of p's object that is p's write: the
// reports of the object before it are skipped (returned, to be reported
// as departures) but, with split, those of versions the object was never
// reported at (the steps of one write). Without a match, wake is closed
// at the next report.
func (r *recorder) claim(p report, split bool) (skipped []host.Change, got host.Change, ok bool, wake <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.byKey[p.key]
	done := r.claimed[p.key]
	for i, ch := range all[done:] {
		if ch.Deleted == p.deleted && (p.deleted || ch.Meta.ResourceVersion == p.rv) {
			r.claimed[p.key] += i + 1
			for _, s := range all[done : done+i] {
				if !split || s.Deleted || slices.ContainsFunc(all[:done], func(c host.Change) bool { return c.Meta.ResourceVersion == s.Meta.ResourceVersion }) {
					skipped = append(skipped, s)
				}
			}
			return skipped, ch, true, nil
		}
	}
	return nil, host.Change{}, false, r.wake
}

// unclaimed returns the reports matched to no write, and forgets them.
func (r *recorder) unclaimed() []host.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []host.Change
	for k, chs := range r.byKey {
		out = append(out, chs[r.claimed[k]:]...)
		r.claimed[k] = len(chs)
	}
	return out
}

package acmetest

import (
	"net/http"
	"sort"
	"strings"
)

// OrdersCreated is how many orders Pebble has created for each set of
// identifiers, keyed by the identifiers' values sorted and joined with
// ",": what a test counts to show that a name was ordered once (or once
// per renewal), whichever client or process asked. Refused newOrder
// requests are not counted.
func (s *Server) OrdersCreated() map[string]int {
	s.ordersMu.Lock()
	defer s.ordersMu.Unlock()
	out := make(map[string]int, len(s.orders))
	for k, v := range s.orders {
		out[k] = v
	}
	return out
}

// countOrders counts each newOrder that Pebble answers with 201 Created,
// by the identifiers in the request's payload.
func (s *Server) countOrders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != newOrderPath {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := requestBody(w, r)
		if !ok {
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status != http.StatusCreated {
			return
		}
		key := orderKey(body)
		s.ordersMu.Lock()
		defer s.ordersMu.Unlock()
		if s.orders == nil {
			s.orders = map[string]int{}
		}
		s.orders[key]++
	})
}

// orderKey is the sorted, comma-joined identifier values in the payload
// of a newOrder JWS (RFC 8555 §7.4); "?" when it cannot be read.
func orderKey(body []byte) string {
	var p struct {
		Identifiers []struct {
			Value string `json:"value"`
		} `json:"identifiers"`
	}
	if !jwsPart(body, "payload", &p) || len(p.Identifiers) == 0 {
		return "?"
	}
	vals := make([]string, len(p.Identifiers))
	for i, id := range p.Identifiers {
		vals[i] = id.Value
	}
	sort.Strings(vals)
	return strings.Join(vals, ",")
}

// statusRecorder keeps the status an http.Handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

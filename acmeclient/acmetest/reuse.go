package acmetest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/letsencrypt/pebble/v2/acme"
	"github.com/letsencrypt/pebble/v2/core"
)

// Pebble's paths for creating an order and for accounts.
const (
	newOrderPath = "/order-plz"
	accountPath  = "/my-account/"
)

// withoutReuse makes "never reuse an authorization" exact. Pebble looks
// for a valid authorization of the account for each identifier of a new
// order, and reuses it unless rand.Intn(100) > percent — so one time in a
// hundred at 0. While Pebble creates an order, this hides the account's
// valid authorizations from that search (it skips those whose expiry has
// passed) and puts them back after: the order gets new authorizations,
// and nobody sees the hidden dates, since every other request waits.
func (s *Server) withoutReuse(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != newOrderPath {
			s.newOrders.RLock()
			defer s.newOrders.RUnlock()
			next.ServeHTTP(w, r)
			return
		}
		body, ok := requestBody(w, r)
		if !ok {
			return
		}
		s.newOrders.Lock()
		defer s.newOrders.Unlock()
		defer s.hideValidAuthorizations(accountOf(body))()
		next.ServeHTTP(w, r)
	})
}

// requestBody reads r's body (up to 1 MiB) and puts it back for the
// handler after; when it cannot, it answers 400 and reports false.
func requestBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// accountOf is the account ID in the "kid" of a JWS request body (RFC
// 8555 §6.2), empty when there is none.
func accountOf(body []byte) string {
	var h struct {
		KID string `json:"kid"`
	}
	if !jwsPart(body, "protected", &h) {
		return ""
	}
	_, id, ok := strings.Cut(h.KID, accountPath)
	if !ok {
		return ""
	}
	return id
}

// jwsPart decodes the part ("protected" or "payload") of a flattened JWS
// request body (RFC 8555 §6.2) into v, unverified; false when it cannot.
func jwsPart(body []byte, part string, v any) bool {
	var jws map[string]json.RawMessage
	if json.Unmarshal(body, &jws) != nil {
		return false
	}
	var enc string
	if json.Unmarshal(jws[part], &enc) != nil {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	return err == nil && json.Unmarshal(raw, v) == nil
}

// hideValidAuthorizations gives the account's valid authorizations an
// expiry in the past, and returns the function that puts each back
// (unless something else set it meanwhile).
func (s *Server) hideValidAuthorizations(account string) (restore func()) {
	if account == "" {
		return func() {}
	}
	type hidden struct {
		authz   *core.Authorization
		expires time.Time
	}
	var all []hidden
	now := time.Now()
	for _, o := range s.db.GetOrdersByAccountID(account) {
		o.RLock()
		authzs := append([]*core.Authorization(nil), o.AuthorizationObjects...)
		o.RUnlock()
		for _, a := range authzs {
			a.Lock()
			if a.Status == acme.StatusValid && a.ExpiresDate.After(now) {
				all = append(all, hidden{a, a.ExpiresDate})
				a.ExpiresDate = time.Time{}
			}
			a.Unlock()
		}
	}
	return func() {
		for _, h := range all {
			h.authz.Lock()
			if h.authz.ExpiresDate.IsZero() {
				h.authz.ExpiresDate = h.expires
			}
			h.authz.Unlock()
		}
	}
}

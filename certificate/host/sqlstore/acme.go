package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
)

// The Store is the acmeclient.Store of one ACME issuer: Get, Put, Delete
// and List keep its states (ACMEStore("")). A host with more than one
// ACME issuer gives each another with ACMEStore.

// Get implements acmeclient.Store.
func (s *Store) Get(ctx context.Context, req acmeclient.RequestRef, key string) (*acmeclient.State, error) {
	return s.acme("").Get(ctx, req, key)
}

// Put implements acmeclient.Store.
func (s *Store) Put(ctx context.Context, key string, st *acmeclient.State) error {
	return s.acme("").Put(ctx, key, st)
}

// Delete implements acmeclient.Store.
func (s *Store) Delete(ctx context.Context, req acmeclient.RequestRef, key string) error {
	return s.acme("").Delete(ctx, req, key)
}

// List implements acmeclient.Store.
func (s *Store) List(ctx context.Context) (map[string]*acmeclient.State, error) {
	return s.acme("").List(ctx)
}

// ACMEStore returns the acmeclient.Store of the ACME issuer named issuer,
// in the same table as the Store's own states, apart from them and from
// every other issuer's: an acmeclient.Issuer reads its store whole, so
// two issuers never share one. ACMEStore("") is the Store itself.
func (s *Store) ACMEStore(issuer string) acmeclient.Store { return s.acme(issuer) }

func (s *Store) acme(issuer string) acmeStore { return acmeStore{s, issuer} }

// acmeStore is one issuer's states: each a row, beside the request it is
// for.
type acmeStore struct {
	s      *Store
	issuer string
}

func (a acmeStore) selectData() string {
	return fmt.Sprintf("SELECT CASE WHEN length(data) <= %d THEN data END, length(data), state_key FROM certlife_acme_states", a.s.opts.MaxObjectBytes)
}

func (a acmeStore) Get(ctx context.Context, _ acmeclient.RequestRef, key string) (*acmeclient.State, error) {
	var r stateRow
	err := a.s.db.QueryRowContext(ctx, a.s.rebind(a.selectData()+" WHERE issuer = ? AND state_key = ?"), a.issuer, key).Scan(&r.data, &r.size, &r.key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the ACME state of %s: %w", key, err)
	}
	return a.decode(r)
}

func (a acmeStore) Put(ctx context.Context, key string, st *acmeclient.State) error {
	if key == "" {
		return errors.New("sqlstore: an ACME state needs a key")
	}
	if st == nil {
		return fmt.Errorf("sqlstore: a nil ACME state for %s", key)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("sqlstore: encoding the ACME state of %s: %w", key, err)
	}
	if len(b) > a.s.opts.MaxObjectBytes {
		return fmt.Errorf("sqlstore: the ACME state of %s encodes to %d bytes, beyond the bound of %d (Options.MaxObjectBytes): %w", key, len(b), a.s.opts.MaxObjectBytes, keys.ErrTooLarge)
	}
	_, err = a.s.db.ExecContext(ctx, a.s.rebind(`INSERT INTO certlife_acme_states (issuer, state_key, request_namespace, request_name, request_uid, data) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (issuer, state_key) DO UPDATE SET request_namespace = excluded.request_namespace, request_name = excluded.request_name,
		request_uid = excluded.request_uid, data = excluded.data`),
		a.issuer, key, st.Request.Namespace, st.Request.Name, st.Request.UID, b)
	if err != nil {
		return fmt.Errorf("sqlstore: writing the ACME state of %s: %w", key, err)
	}
	return nil
}

func (a acmeStore) Delete(ctx context.Context, _ acmeclient.RequestRef, key string) error {
	if _, err := a.s.db.ExecContext(ctx, a.s.rebind(`DELETE FROM certlife_acme_states WHERE issuer = ? AND state_key = ?`), a.issuer, key); err != nil {
		return fmt.Errorf("sqlstore: deleting the ACME state of %s: %w", key, err)
	}
	return nil
}

func (a acmeStore) List(ctx context.Context) (map[string]*acmeclient.State, error) {
	rows, err := a.s.db.QueryContext(ctx, a.s.rebind(a.selectData()+" WHERE issuer = ?"), a.issuer)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing the ACME states: %w", err)
	}
	var raw []stateRow
	for rows.Next() {
		var r stateRow
		if err := rows.Scan(&r.data, &r.size, &r.key); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlstore: listing the ACME states: %w", err)
		}
		raw = append(raw, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlstore: listing the ACME states: %w", err)
	}
	out := make(map[string]*acmeclient.State, len(raw))
	for _, r := range raw {
		st, err := a.decode(r)
		if err != nil {
			return nil, err
		}
		out[r.key] = st
	}
	return out, nil
}

type stateRow struct {
	data []byte
	size int64
	key  string
}

func (a acmeStore) decode(r stateRow) (*acmeclient.State, error) {
	if r.data == nil || r.size > int64(a.s.opts.MaxObjectBytes) {
		return nil, fmt.Errorf("sqlstore: the ACME state of %s is %d bytes, beyond the bound of %d (Options.MaxObjectBytes): not read: %w",
			r.key, r.size, a.s.opts.MaxObjectBytes, keys.ErrTooLarge)
	}
	var st acmeclient.State
	if err := json.Unmarshal(r.data, &st); err != nil {
		return nil, fmt.Errorf("sqlstore: decoding the ACME state of %s: %w", r.key, err)
	}
	return &st, nil
}

// PutPresentation implements acmeclient.PresentationStore.
func (s *Store) PutPresentation(ctx context.Context, p acmeclient.Presentation) error {
	key, err := presentationKey(p)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("sqlstore: encoding presentation %v: %w", p, err)
	}
	if len(b) > s.opts.MaxObjectBytes {
		return fmt.Errorf("sqlstore: presentation %v encodes to %d bytes, beyond the bound of %d (Options.MaxObjectBytes): %w", p, len(b), s.opts.MaxObjectBytes, keys.ErrTooLarge)
	}
	_, err = s.db.ExecContext(ctx, s.rebind(`INSERT INTO certlife_presentations (challenge_type, lookup_key, key_authorization, data) VALUES (?, ?, ?, ?)
		ON CONFLICT (challenge_type, lookup_key) DO UPDATE SET key_authorization = excluded.key_authorization, data = excluded.data`),
		string(p.Type), key, p.KeyAuthorization, b)
	if err != nil {
		return fmt.Errorf("sqlstore: writing presentation %v: %w", p, err)
	}
	return nil
}

// DeletePresentation implements acmeclient.PresentationStore.
func (s *Store) DeletePresentation(ctx context.Context, p acmeclient.Presentation) error {
	key, err := presentationKey(p)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.rebind(`DELETE FROM certlife_presentations WHERE challenge_type = ? AND lookup_key = ? AND key_authorization = ?`),
		string(p.Type), key, p.KeyAuthorization)
	if err != nil {
		return fmt.Errorf("sqlstore: deleting presentation %v: %w", p, err)
	}
	return nil
}

// LookupPresentation implements acmeclient.PresentationStore.
func (s *Store) LookupPresentation(ctx context.Context, t challenge.Type, key string) (acmeclient.Presentation, bool, error) {
	var (
		data []byte
		size int64
	)
	err := s.db.QueryRowContext(ctx, s.rebind(fmt.Sprintf(`SELECT CASE WHEN length(data) <= %d THEN data END, length(data) FROM certlife_presentations WHERE challenge_type = ? AND lookup_key = ?`, s.opts.MaxObjectBytes)),
		string(t), key).Scan(&data, &size)
	if errors.Is(err, sql.ErrNoRows) {
		return acmeclient.Presentation{}, false, nil
	}
	if err != nil {
		return acmeclient.Presentation{}, false, fmt.Errorf("sqlstore: looking up the %s presentation of %q: %w", t, key, err)
	}
	if data == nil || size > int64(s.opts.MaxObjectBytes) {
		return acmeclient.Presentation{}, false, fmt.Errorf("sqlstore: the %s presentation of %q is %d bytes, beyond the bound of %d (Options.MaxObjectBytes): not read: %w",
			t, key, size, s.opts.MaxObjectBytes, keys.ErrTooLarge)
	}
	var p acmeclient.Presentation
	if err := json.Unmarshal(data, &p); err != nil {
		return acmeclient.Presentation{}, false, fmt.Errorf("sqlstore: decoding the %s presentation of %q: %w", t, key, err)
	}
	return p, true, nil
}

func presentationKey(p acmeclient.Presentation) (string, error) {
	if p.Type == "" {
		return "", fmt.Errorf("sqlstore: presentation %v has no challenge type", p)
	}
	key := acmeclient.PresentationKey(p)
	if key == "" {
		return "", fmt.Errorf("sqlstore: presentation %v has nothing to look it up by (a token for HTTP-01, an identifier for the others)", p)
	}
	return key, nil
}

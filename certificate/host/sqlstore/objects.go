package sqlstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
)

// Certificates implements host.Store.
func (s *Store) Certificates() host.Collection[*certificate.Certificate] {
	return collection[*certificate.Certificate]{s, host.KindCertificate, "certlife_certificates"}
}

// Secrets implements host.Store.
func (s *Store) Secrets() host.Collection[*certificate.Secret] {
	return collection[*certificate.Secret]{s, host.KindSecret, "certlife_secrets"}
}

// Requests implements host.Store.
func (s *Store) Requests() host.Collection[*certificate.CertificateRequest] {
	return collection[*certificate.CertificateRequest]{s, host.KindRequest, "certlife_requests"}
}

// collection is the objects of one kind: a table.
type collection[T host.Object] struct {
	s     *Store
	kind  host.Kind
	table string
}

// selectData selects an object's JSON when it is within the bound (NULL
// beyond), its length, namespace and name.
func (c collection[T]) selectData() string {
	return fmt.Sprintf("SELECT CASE WHEN length(data) <= %d THEN data END, length(data), namespace, name FROM %s",
		c.s.opts.MaxObjectBytes, c.table)
}

// Get implements host.Collection.
func (c collection[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	if err := checkNames(c.kind, namespace, name); err != nil {
		return nil, err
	}
	var r dataRow
	err := c.s.db.QueryRowContext(ctx, c.s.rebind(c.selectData()+" WHERE namespace = ? AND name = ?"), namespace, name).
		Scan(&r.data, &r.size, &r.namespace, &r.name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s %s: %w", c.kind, objectName(namespace, name), host.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading %s %s: %w", c.kind, objectName(namespace, name), err)
	}
	return c.decode(r)
}

// List implements host.Collection. Each option that is set is a
// condition on an indexed column.
func (c collection[T]) List(ctx context.Context, opts host.ListOptions) ([]T, error) {
	if err := certificate.ValidateNamespace(opts.Namespace); err != nil {
		return nil, fmt.Errorf("sqlstore: listing: ListOptions.Namespace: %w", err)
	}
	if opts.SecretName != "" {
		if err := certificate.ValidateObjectName(opts.SecretName); err != nil {
			return nil, fmt.Errorf("sqlstore: listing: ListOptions.SecretName: %w", err)
		}
	}
	if _, ok := opts.Labels[""]; ok {
		return nil, errors.New("sqlstore: listing: ListOptions.Labels: a label key is empty")
	}
	q, args := c.listQuery(opts)
	rows, err := c.s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing %ss: %w", c.kind, err)
	}
	var raw []dataRow
	for rows.Next() {
		var r dataRow
		if err := rows.Scan(&r.data, &r.size, &r.namespace, &r.name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlstore: listing %ss: %w", c.kind, err)
		}
		raw = append(raw, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlstore: listing %ss: %w", c.kind, err)
	}
	out := make([]T, 0, len(raw))
	for _, r := range raw {
		obj, err := c.decode(r)
		if err != nil {
			return nil, err
		}
		// Labels are inside the encoded object, not in a column: they
		// are selected here.
		if opts.MatchesLabels(obj.Meta().Labels) {
			out = append(out, obj)
		}
	}
	return out, nil
}

// listQuery is the query of List and its arguments: each option that is
// set is a condition on an indexed column.
func (c collection[T]) listQuery(opts host.ListOptions) (string, []any) {
	var conds []string
	var args []any
	if opts.Namespace != "" {
		conds, args = append(conds, "namespace = ?"), append(args, opts.Namespace)
	}
	if opts.OwnerUID != "" {
		conds, args = append(conds, "owner_uid = ?"), append(args, opts.OwnerUID)
	}
	if opts.SecretName != "" {
		// Only certificates have one; no other object matches.
		conds, args = append(conds, "secret_name = ?"), append(args, opts.SecretName)
	}
	q := c.selectData()
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	return c.s.rebind(q + " ORDER BY namespace, name"), args
}

// Create implements host.Collection.
func (c collection[T]) Create(ctx context.Context, obj T) (T, error) {
	if obj == nil {
		return nil, fmt.Errorf("sqlstore: a nil %s", c.kind)
	}
	obj = shallow(obj)
	m := obj.Meta()
	if err := checkNames(c.kind, m.Namespace, m.Name); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%s %s", c.kind, objectName(m.Namespace, m.Name))
	var data []byte
	err := c.s.write(ctx, func(t *tx, v int64) (host.Change, error) {
		var one int
		err := t.queryRow("SELECT 1 FROM "+c.table+" WHERE namespace = ? AND name = ?", m.Namespace, m.Name).Scan(&one)
		if err == nil {
			return host.Change{}, fmt.Errorf("%s: %w", what, host.ErrAlreadyExists)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return host.Change{}, err
		}
		m.ResourceVersion = strconv.FormatInt(v, 10)
		if m.UID == "" {
			m.UID = newUID()
		}
		if m.CreationTimestamp.IsZero() {
			m.CreationTimestamp = c.s.clock.Now()
		}
		if c.kind != host.KindSecret {
			m.Generation = 1
		}
		r, err := c.encode(obj)
		if err != nil {
			return host.Change{}, err
		}
		data = r.data
		_, err = t.exec("INSERT INTO "+c.table+" (namespace, name, uid, owner_uid, secret_name, version, generation, created, spec_hash, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			m.Namespace, m.Name, m.UID, m.OwnerUID, r.secretName, v, m.Generation, r.created, r.specHash, r.data)
		return c.change(m, false), err
	})
	if err != nil {
		return nil, c.writeError("creating", what, err)
	}
	return c.decode(dataRow{data: data, size: int64(len(data)), namespace: m.Namespace, name: m.Name})
}

// Update implements host.Collection.
func (c collection[T]) Update(ctx context.Context, obj T) (T, error) {
	if obj == nil {
		return nil, fmt.Errorf("sqlstore: a nil %s", c.kind)
	}
	obj = shallow(obj)
	m := obj.Meta()
	if err := checkNames(c.kind, m.Namespace, m.Name); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%s %s", c.kind, objectName(m.Namespace, m.Name))
	var data []byte
	err := c.s.write(ctx, func(t *tx, v int64) (host.Change, error) {
		var (
			uid, created string
			generation   int64
			specHash     []byte
			version      int64
		)
		err := t.queryRow("SELECT uid, created, generation, spec_hash, version FROM "+c.table+" WHERE namespace = ? AND name = ?", m.Namespace, m.Name).
			Scan(&uid, &created, &generation, &specHash, &version)
		if errors.Is(err, sql.ErrNoRows) {
			return host.Change{}, fmt.Errorf("%s: %w", what, host.ErrNotFound)
		}
		if err != nil {
			return host.Change{}, err
		}
		if read := strconv.FormatInt(version, 10); m.ResourceVersion != read {
			return host.Change{}, fmt.Errorf("%s is at version %s, the update read %q: %w", what, read, m.ResourceVersion, host.ErrConflict)
		}
		m.ResourceVersion = strconv.FormatInt(v, 10)
		m.UID, m.Generation = uid, generation
		if m.CreationTimestamp, err = time.Parse(time.RFC3339Nano, created); err != nil {
			return host.Change{}, fmt.Errorf("the creation time %q: %w", created, err)
		}
		r, err := c.encode(obj)
		if err != nil {
			return host.Change{}, err
		}
		if r.specHash != nil && !bytes.Equal(r.specHash, specHash) {
			m.Generation++
			if r, err = c.encode(obj); err != nil {
				return host.Change{}, err
			}
		}
		data = r.data
		_, err = t.exec("UPDATE "+c.table+" SET owner_uid = ?, secret_name = ?, version = ?, generation = ?, spec_hash = ?, data = ? WHERE namespace = ? AND name = ?",
			m.OwnerUID, r.secretName, v, m.Generation, r.specHash, r.data, m.Namespace, m.Name)
		return c.change(m, false), err
	})
	if err != nil {
		return nil, c.writeError("updating", what, err)
	}
	return c.decode(dataRow{data: data, size: int64(len(data)), namespace: m.Namespace, name: m.Name})
}

// Delete implements host.Collection.
func (c collection[T]) Delete(ctx context.Context, namespace, name string) error {
	if err := checkNames(c.kind, namespace, name); err != nil {
		return err
	}
	what := fmt.Sprintf("%s %s", c.kind, objectName(namespace, name))
	err := c.s.write(ctx, func(t *tx, v int64) (host.Change, error) {
		m := certificate.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: strconv.FormatInt(v, 10)}
		err := t.queryRow("SELECT uid, owner_uid FROM "+c.table+" WHERE namespace = ? AND name = ?", namespace, name).Scan(&m.UID, &m.OwnerUID)
		if errors.Is(err, sql.ErrNoRows) {
			return host.Change{}, fmt.Errorf("%s: %w", what, host.ErrNotFound)
		}
		if err != nil {
			return host.Change{}, err
		}
		_, err = t.exec("DELETE FROM "+c.table+" WHERE namespace = ? AND name = ?", namespace, name)
		return c.change(&m, true), err
	})
	return c.writeError("deleting", what, err)
}

// writeError wraps an error of the database with what was being done;
// the store's own errors (not found, conflict, ...) name the object
// already.
func (c collection[T]) writeError(doing, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, host.ErrNotFound), errors.Is(err, host.ErrConflict), errors.Is(err, host.ErrAlreadyExists):
		return err
	}
	return fmt.Errorf("sqlstore: %s %s: %w", doing, what, err)
}

// change is the report of a write of the object with metadata m.
func (c collection[T]) change(m *certificate.ObjectMeta, deleted bool) host.Change {
	return host.Change{Kind: c.kind, Namespace: m.Namespace, Name: m.Name, Deleted: deleted,
		Meta: certificate.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID, OwnerUID: m.OwnerUID, ResourceVersion: m.ResourceVersion}}
}

// dataRow is an object's JSON as read: nil when it is beyond the bound.
type dataRow struct {
	data            []byte
	size            int64
	namespace, name string
}

func (c collection[T]) decode(r dataRow) (T, error) {
	if r.data == nil || r.size > int64(c.s.opts.MaxObjectBytes) {
		return nil, fmt.Errorf("sqlstore: %s %s in %s is %d bytes, beyond the bound of %d (Options.MaxObjectBytes): not read: %w",
			c.kind, objectName(r.namespace, r.name), c.table, r.size, c.s.opts.MaxObjectBytes, keys.ErrTooLarge)
	}
	obj := newObject[T]()
	if err := json.Unmarshal(r.data, obj); err != nil {
		return nil, fmt.Errorf("sqlstore: decoding %s %s: %w", c.kind, objectName(r.namespace, r.name), err)
	}
	return obj, nil
}

// encoded is an object as it is written.
type encoded struct {
	data       []byte
	specHash   []byte // certificates and requests: the spec's, for the generation
	secretName string
	created    string
}

func (c collection[T]) encode(obj T) (encoded, error) {
	m := obj.Meta()
	b, err := json.Marshal(obj)
	if err != nil {
		return encoded{}, fmt.Errorf("encoding: %w", err)
	}
	if len(b) > c.s.opts.MaxObjectBytes {
		return encoded{}, fmt.Errorf("it encodes to %d bytes, beyond the bound of %d (Options.MaxObjectBytes): %w", len(b), c.s.opts.MaxObjectBytes, keys.ErrTooLarge)
	}
	e := encoded{data: b, created: m.CreationTimestamp.Format(time.RFC3339Nano)}
	var spec any
	switch o := any(obj).(type) {
	case *certificate.Certificate:
		spec, e.secretName = o.Spec, o.Spec.SecretName
	case *certificate.CertificateRequest:
		spec = o.Spec
	}
	if spec != nil {
		sb, err := json.Marshal(spec)
		if err != nil {
			return encoded{}, fmt.Errorf("encoding the spec: %w", err)
		}
		h := sha256.Sum256(sb)
		e.specHash = h[:]
	}
	return e, nil
}

func newObject[T host.Object]() T {
	var obj T
	switch any(obj).(type) {
	case *certificate.Certificate:
		return any(new(certificate.Certificate)).(T)
	case *certificate.Secret:
		return any(new(certificate.Secret)).(T)
	default:
		return any(new(certificate.CertificateRequest)).(T)
	}
}

// shallow is a copy of obj whose metadata the store can fill in without
// changing the caller's: what is shared with obj is only read (encoded).
func shallow[T host.Object](obj T) T {
	switch o := any(obj).(type) {
	case *certificate.Certificate:
		c := *o
		return any(&c).(T)
	case *certificate.Secret:
		c := *o
		return any(&c).(T)
	case *certificate.CertificateRequest:
		c := *o
		return any(&c).(T)
	}
	return obj
}

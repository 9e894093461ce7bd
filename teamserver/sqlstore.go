package teamserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// sqlStore is the Store every SQL database shares, over database/sql with
// any driver: the same tables, the same queries (written with "?" and
// rebound per dialect), the same transactions. What differs is how writes
// are serialised: SQLite runs every write through one connection (writes
// queue in the process, not in the database's busy timeout) in IMMEDIATE
// transactions; PostgreSQL takes a transaction-scoped advisory lock on the
// repo (SQLDialect.LockRepo) and, when a write creates a repo, on its
// tenant (so the repo limit holds across servers). Reads run in one read
// transaction each, so a version, its checksum and its entries always
// belong together. The drivers live in modules of their own
// (teamserver/sqlite, teamserver/postgres), so this module
// compiles none. Safe for concurrent use.
type sqlStore struct {
	id string
	w  *sql.DB // writes
	r  *sql.DB // reads (the same pool on PostgreSQL)
	d  SQLDialect
	// writers serializes the writers of one memory store, or of one
	// repo, in this process (keylock.go).
	writers keyLocks
}

// SQLDialect is what differs between SQL databases.
type SQLDialect struct {
	// Dollar rewrites "?" placeholders as $1, $2, ... (PostgreSQL).
	Dollar bool
	// LockRepo, when set, runs first in every write transaction with the
	// repo's "tenant\nname" (or a tenant's "tenant\n") as its argument.
	LockRepo string
	// ReadOptions are the options of read transactions.
	ReadOptions *sql.TxOptions
}

// NewSQLStore makes the store on open databases: writes go to w, reads to
// r (the same pool is fine), and creates its tables if needed. It owns
// both from then on: Close closes them. The store has every protocol and
// reports its reading pool (PoolStats).
func NewSQLStore(ctx context.Context, w, r *sql.DB, d SQLDialect) (Store, error) {
	if _, err := w.ExecContext(ctx, sqlSchema+memStoreSchema+idempotencySchema); err != nil {
		return nil, fmt.Errorf("server: prepare the database: %w", err)
	}
	s := &sqlStore{w: w, r: r, d: d}
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("server: upgrade the database: %w", err)
	}
	// The identity is made by whichever server first opens the database;
	// the others (and every later start) read it back.
	if _, err := w.ExecContext(ctx, s.q(`INSERT INTO team_store (one, id) VALUES (1, ?) ON CONFLICT (one) DO NOTHING`), newStoreID()); err != nil {
		return nil, fmt.Errorf("server: prepare the database: %w", err)
	}
	if err := w.QueryRowContext(ctx, `SELECT id FROM team_store WHERE one = 1`).Scan(&s.id); err != nil {
		return nil, fmt.Errorf("server: read the store identity: %w", err)
	}
	return s, nil
}

// ID implements Store: the identity kept in the database, so a copy of
// the database (a backup) keeps it and a new database has its own.
func (s *sqlStore) ID() string { return s.id }

const sqlSchema = `
CREATE TABLE IF NOT EXISTS team_store (
	one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS team_repos (
	tenant TEXT NOT NULL, name TEXT NOT NULL,
	version BIGINT NOT NULL, checksum TEXT NOT NULL, last_modified_ms BIGINT NOT NULL,
	PRIMARY KEY (tenant, name));
CREATE TABLE IF NOT EXISTS team_entries (
	tenant TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL,
	content TEXT NOT NULL, checksum TEXT NOT NULL,
	PRIMARY KEY (tenant, name, key));
CREATE TABLE IF NOT EXISTS team_tombstones (
	tenant TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL, deleted_ms BIGINT NOT NULL,
	PRIMARY KEY (tenant, name, key));
CREATE TABLE IF NOT EXISTS team_history (
	tenant TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL, version BIGINT NOT NULL,
	checksum TEXT NOT NULL, author TEXT NOT NULL, time_ms BIGINT NOT NULL, deleted INTEGER NOT NULL,
	content TEXT NOT NULL,
	PRIMARY KEY (tenant, name, key, version));
CREATE TABLE IF NOT EXISTS team_log (
	tenant TEXT NOT NULL, name TEXT NOT NULL, version BIGINT NOT NULL,
	time_ms BIGINT NOT NULL, author TEXT NOT NULL, keys TEXT NOT NULL, ops TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (tenant, name, version));
`

// provColumns are the provenance columns (teamwire.Provenance) added to the
// tables that record writes; a database made before them gets them on
// open, its rows reading as "not recorded".
var provTables = []string{"team_history", "team_log", "ms_versions"}

var provColumns = []string{"prov_door", "prov_session", "prov_origin", "prov_reviewer"}

// migrate brings a database made by an earlier version up to this one:
// it adds the columns it lacks (each with a default, so every row is
// kept) and the review tables. Two servers opening one old database at
// once both succeed: a column the other added first is taken as added.
func (s *sqlStore) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, reviewSchema); err != nil {
		return err
	}
	added := [][2]string{{"ms_memories", "metadata"}, {"team_log", "ops"}, {"ms_idempotency", "token_sha"}}
	for _, t := range provTables {
		for _, c := range provColumns {
			added = append(added, [2]string{t, c})
		}
	}
	for _, tc := range added {
		t, c := tc[0], tc[1]
		if s.hasColumn(ctx, t, c) {
			continue
		}
		if _, err := s.w.ExecContext(ctx, `ALTER TABLE `+t+` ADD COLUMN `+c+` TEXT NOT NULL DEFAULT ''`); err != nil && !s.hasColumn(ctx, t, c) {
			return fmt.Errorf("add %s.%s: %w", t, c, err)
		}
	}
	_, err := s.w.ExecContext(ctx, idempotencyIndexes)
	return err
}

// hasColumn reports whether table has column.
func (s *sqlStore) hasColumn(ctx context.Context, table, column string) bool {
	rows, err := s.w.QueryContext(ctx, `SELECT `+column+` FROM `+table+` WHERE 1 = 0`)
	if err != nil {
		return false
	}
	_ = rows.Close()
	return true
}

const provSelect = `prov_door, prov_session, prov_origin, prov_reviewer`

func provDest(p *teamwire.Provenance) []any {
	return []any{&p.Door, &p.Session, &p.Origin, &p.Reviewer}
}

// q rebinds a query's "?" placeholders for the dialect.
func (s *sqlStore) q(query string) string {
	if !s.d.Dollar {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Close implements Store.
func (s *sqlStore) Close() error {
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// Ping implements Store.
func (s *sqlStore) Ping(ctx context.Context) error {
	return overloaded(errors.Join(s.w.PingContext(ctx), s.r.PingContext(ctx)))
}

// overloaded marks the errors that mean "busy, try again" with
// ErrOverloaded (no free connection in time, SQLite's lock, PostgreSQL
// out of connections), a full disk with ErrStorageFull and a database
// that takes no writes with ErrStoreReadOnly.
func overloaded(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "database or disk is full") || strings.Contains(msg, "SQLITE_FULL") ||
		strings.Contains(msg, "no space left on device") || strings.Contains(msg, "53100") || strings.Contains(msg, "disk quota exceeded"):
		return fmt.Errorf("%w: %v", ErrStorageFull, err)
	case strings.Contains(msg, "readonly database") || strings.Contains(msg, "SQLITE_READONLY") ||
		strings.Contains(msg, "read-only file system") || strings.Contains(msg, "25006"):
		return fmt.Errorf("%w: %v", ErrStoreReadOnly, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY") ||
		strings.Contains(msg, "too many clients") || strings.Contains(msg, "53300") {
		return fmt.Errorf("%w: %v", ErrOverloaded, err)
	}
	return err
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rowScanner is a row or a cursor over rows.
type rowScanner interface{ Scan(...any) error }

// scanAll runs query and reads every row it returns with scan.
func scanAll[T any](ctx context.Context, q querier, query string, scan func(rowScanner) (T, error), args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// read runs fn in one read transaction, again on a fresh connection when
// the one it got turns out broken (driver.ErrBadConn: nothing was done).
func (s *sqlStore) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return retryBadConn(ctx, func() error { return s.readOnce(ctx, fn) })
}

// retryBadConn runs op up to three times while it fails with
// driver.ErrBadConn, which a driver returns only when the database did
// nothing (a connection broken by an earlier, cancelled request), and ctx
// is still alive.
func retryBadConn(ctx context.Context, op func() error) error {
	err := op()
	for i := 0; i < 2 && errors.Is(err, driver.ErrBadConn) && ctx.Err() == nil; i++ {
		err = op()
	}
	return err
}

// errBrokenMidStream is what a streaming read (Stream, EachMemory)
// returns when its database connection broke after it had handed its
// caller a part: it is not made again, since the caller cannot take back
// what it was given; the caller may read again from the start.
var errBrokenMidStream = errors.New("server: the database connection broke while a repo or store was being read; read it again")

// readStream is read for a read that hands what it reads to a caller as
// it goes: once fn calls handOver, a broken connection ends the read with
// errBrokenMidStream instead of making it again.
func (s *sqlStore) readStream(ctx context.Context, fn func(tx *sql.Tx, handOver func()) error) error {
	handed := false
	return s.read(ctx, func(tx *sql.Tx) error {
		if handed {
			return errBrokenMidStream
		}
		return fn(tx, func() { handed = true })
	})
}

func (s *sqlStore) readOnce(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, s.d.ReadOptions)
	if err != nil {
		return overloaded(err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return overloaded(err)
	}
	return tx.Commit()
}

func (s *sqlStore) head(ctx context.Context, q querier, repo Repo) (Snapshot, error) {
	var snap Snapshot
	var lastMS int64
	err := q.QueryRowContext(ctx, s.q(`SELECT version, checksum, last_modified_ms FROM team_repos WHERE tenant = ? AND name = ?`),
		repo.Tenant, repo.Name).Scan(&snap.Version, &snap.Checksum, &lastMS)
	if errors.Is(err, sql.ErrNoRows) {
		return Snapshot{}, ErrNotFound
	}
	if err != nil {
		return Snapshot{}, err
	}
	snap.LastModified = time.UnixMilli(lastMS).UTC()
	return snap, nil
}

// load reads a repo's state in q (one transaction).
func (s *sqlStore) load(ctx context.Context, q querier, repo Repo, withContent bool) (Snapshot, error) {
	snap, err := s.head(ctx, q, repo)
	if err != nil {
		return Snapshot{}, err
	}
	var entry func(key, content string) error
	if withContent {
		snap.Entries = map[string]string{}
		entry = func(k, content string) error { snap.Entries[k] = content; return nil }
	}
	if err := s.entries(ctx, q, repo, &snap, entry); err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// entries reads a repo's entry checksums and tombstones into snap, and
// passes each entry's content to entry in key order. Contents are
// selected only when entry is set: the hashes view never reads them.
func (s *sqlStore) entries(ctx context.Context, q querier, repo Repo, snap *Snapshot, entry func(key, content string) error) error {
	snap.Checksums, snap.Tombstones = map[string]string{}, map[string]int64{}
	query := `SELECT key, checksum, '' FROM team_entries WHERE tenant = ? AND name = ?`
	if entry != nil {
		query = `SELECT key, checksum, content FROM team_entries WHERE tenant = ? AND name = ? ORDER BY key`
	}
	err := s.each(ctx, q, query, repo, func(rows *sql.Rows) error {
		var k, sum, content string
		if err := rows.Scan(&k, &sum, &content); err != nil {
			return err
		}
		snap.Checksums[k] = sum
		if entry == nil {
			return nil
		}
		return entry(k, content)
	})
	if err != nil {
		return err
	}
	return s.each(ctx, q, `SELECT key, deleted_ms FROM team_tombstones WHERE tenant = ? AND name = ?`, repo, func(rows *sql.Rows) error {
		var k string
		var ms int64
		if err := rows.Scan(&k, &ms); err != nil {
			return err
		}
		snap.Tombstones[k] = ms
		return nil
	})
}

// each runs a per-repo query and calls fn for every row.
func (s *sqlStore) each(ctx context.Context, q querier, query string, repo Repo, fn func(*sql.Rows) error, args ...any) error {
	rows, err := q.QueryContext(ctx, s.q(query), append([]any{repo.Tenant, repo.Name}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Get implements Store.
func (s *sqlStore) Get(ctx context.Context, repo Repo, withContent bool) (Snapshot, error) {
	var snap Snapshot
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		snap, err = s.load(ctx, tx, repo, withContent)
		return err
	})
	return snap, err
}

// Head implements Store.
func (s *sqlStore) Head(ctx context.Context, repo Repo) (Snapshot, error) {
	snap, err := s.head(ctx, s.r, repo)
	return snap, overloaded(err)
}

// Stream implements Store: one read transaction, entries row by row.
func (s *sqlStore) Stream(ctx context.Context, repo Repo, head func(Snapshot) error, entry func(key, content string) error) (Snapshot, error) {
	var snap Snapshot
	err := s.readStream(ctx, func(tx *sql.Tx, handOver func()) error {
		var err error
		if snap, err = s.head(ctx, tx, repo); err != nil {
			return err
		}
		handOver()
		if err := head(snap); err != nil {
			return err
		}
		return s.entries(ctx, tx, repo, &snap, entry)
	})
	return snap, err
}

// Put implements Store, in one serialised transaction.
func (s *sqlStore) Put(ctx context.Context, repo Repo, req PutRequest) (snap Snapshot, err error) {
	// Writers of one repo wait here, not holding a connection (keylock.go).
	unlock, err := s.writers.lock(ctx, "repo\n"+repo.Tenant+"\n"+repo.Name)
	if err != nil {
		return Snapshot{}, overloaded(err)
	}
	defer unlock()
	err = retryBadConn(ctx, func() (err error) {
		snap, err = s.putOnce(ctx, repo, req)
		return err
	})
	return snap, err
}

func (s *sqlStore) putOnce(ctx context.Context, repo Repo, req PutRequest) (Snapshot, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Snapshot{}, overloaded(err)
	}
	defer tx.Rollback()
	next, err := s.put(ctx, tx, repo, req)
	if errors.Is(err, errNothingToWrite) {
		return headOnly(next), nil
	}
	if err != nil {
		return Snapshot{}, overloaded(err)
	}
	if err := tx.Commit(); err != nil {
		return Snapshot{}, overloaded(err)
	}
	next.Entries = nil
	return next, nil
}

func (s *sqlStore) put(ctx context.Context, tx *sql.Tx, repo Repo, req PutRequest) (Snapshot, error) {
	exec := func(query string, args ...any) error {
		_, err := tx.ExecContext(ctx, s.q(query), args...)
		return err
	}
	if s.d.LockRepo != "" {
		if err := exec(s.d.LockRepo, repo.Tenant+"\n"+repo.Name); err != nil {
			return Snapshot{}, err
		}
	}
	cur, err := s.load(ctx, tx, repo, false)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Snapshot{}, err
	}
	if !exists && req.MaxRepos > 0 && changes(cur, req) {
		if s.d.LockRepo != "" {
			if err := exec(s.d.LockRepo, repo.Tenant+"\n"); err != nil {
				return Snapshot{}, err
			}
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM team_repos WHERE tenant = ?`), repo.Tenant).Scan(&n); err != nil {
			return Snapshot{}, err
		}
		if n >= req.MaxRepos {
			return Snapshot{}, ErrTooManyRepos
		}
	}
	next, err := apply(cur, exists, req)
	if err != nil {
		return next, err
	}
	for k := range cur.Tombstones {
		if _, kept := next.Tombstones[k]; !kept {
			if err := exec(`DELETE FROM team_tombstones WHERE tenant = ? AND name = ? AND key = ?`, repo.Tenant, repo.Name, k); err != nil {
				return Snapshot{}, err
			}
		}
	}
	for _, k := range req.Deletes {
		if _, gone := cur.Checksums[k]; !gone {
			continue
		}
		if err := exec(`DELETE FROM team_entries WHERE tenant = ? AND name = ? AND key = ?`, repo.Tenant, repo.Name, k); err != nil {
			return Snapshot{}, err
		}
		if ms, ok := next.Tombstones[k]; ok {
			if err := exec(`INSERT INTO team_tombstones (tenant, name, key, deleted_ms) VALUES (?, ?, ?, ?)
				ON CONFLICT (tenant, name, key) DO UPDATE SET deleted_ms = excluded.deleted_ms`, repo.Tenant, repo.Name, k, ms); err != nil {
				return Snapshot{}, err
			}
		}
	}
	for k, v := range req.Entries {
		if cur.Checksums[k] == next.Checksums[k] {
			continue // unchanged
		}
		if err := exec(`INSERT INTO team_entries (tenant, name, key, content, checksum) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant, name, key) DO UPDATE SET content = excluded.content, checksum = excluded.checksum`,
			repo.Tenant, repo.Name, k, v, next.Checksums[k]); err != nil {
			return Snapshot{}, err
		}
		if _, was := cur.Tombstones[k]; was {
			if err := exec(`DELETE FROM team_tombstones WHERE tenant = ? AND name = ? AND key = ?`, repo.Tenant, repo.Name, k); err != nil {
				return Snapshot{}, err
			}
		}
	}
	if err := exec(`INSERT INTO team_repos (tenant, name, version, checksum, last_modified_ms) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version, checksum = excluded.checksum, last_modified_ms = excluded.last_modified_ms`,
		repo.Tenant, repo.Name, next.Version, next.Checksum, next.LastModified.UnixMilli()); err != nil {
		return Snapshot{}, err
	}
	revs := revisions(cur, next, req)
	keys, ops := make([]string, 0, len(revs)), make([]string, 0, len(revs))
	for _, r := range revs {
		deleted := 0
		if r.Deleted {
			deleted = 1
		}
		if err := exec(`INSERT INTO team_history (tenant, name, key, version, checksum, author, time_ms, deleted, content, `+provSelect+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			repo.Tenant, repo.Name, r.Key, r.Version, r.Checksum, r.Author, r.Time.UnixMilli(), deleted, r.Content, r.Door, r.Session, r.Origin, r.Reviewer); err != nil {
			return Snapshot{}, err
		}
		if err := s.trimHistory(exec, repo, r.Key, req.Retention, req.Now); err != nil {
			return Snapshot{}, err
		}
		keys, ops = append(keys, r.Key), append(ops, keyOp(cur, r))
	}
	rawKeys, _ := json.Marshal(keys)
	rawOps, _ := json.Marshal(ops)
	if err := exec(`INSERT INTO team_log (tenant, name, version, time_ms, author, keys, ops, `+provSelect+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		repo.Tenant, repo.Name, next.Version, req.Now.UnixMilli(), req.Author, string(rawKeys), string(rawOps), req.Door, req.Session, req.Origin, req.Reviewer); err != nil {
		return Snapshot{}, err
	}
	if age := req.Retention.HistoryAge; age > 0 {
		if err := exec(`DELETE FROM team_log WHERE tenant = ? AND name = ? AND time_ms < ?`, repo.Tenant, repo.Name, req.Now.Add(-age).UnixMilli()); err != nil {
			return Snapshot{}, err
		}
	}
	return next, nil
}

// trimHistory applies the history retention to one key: the newest
// HistoryKeep revisions, none older than HistoryAge but the newest.
func (s *sqlStore) trimHistory(exec func(string, ...any) error, repo Repo, key string, r Retention, now time.Time) error {
	if r.HistoryKeep > 0 {
		if err := exec(`DELETE FROM team_history WHERE tenant = ? AND name = ? AND key = ? AND version NOT IN
			(SELECT version FROM team_history WHERE tenant = ? AND name = ? AND key = ? ORDER BY version DESC LIMIT ?)`,
			repo.Tenant, repo.Name, key, repo.Tenant, repo.Name, key, r.HistoryKeep); err != nil {
			return err
		}
	}
	if r.HistoryAge > 0 {
		if err := exec(`DELETE FROM team_history WHERE tenant = ? AND name = ? AND key = ? AND time_ms < ? AND version <
			(SELECT MAX(version) FROM team_history WHERE tenant = ? AND name = ? AND key = ?)`,
			repo.Tenant, repo.Name, key, now.Add(-r.HistoryAge).UnixMilli(), repo.Tenant, repo.Name, key); err != nil {
			return err
		}
	}
	return nil
}

// History implements Store.
func (s *sqlStore) History(ctx context.Context, repo Repo, key string, limit int) ([]Revision, error) {
	limit = positiveOr(limit, 1000)
	var out []Revision
	err := s.each(ctx, s.r, `SELECT version, checksum, author, time_ms, deleted, `+provSelect+` FROM team_history
		WHERE tenant = ? AND name = ? AND key = ? ORDER BY version DESC LIMIT ?`, repo, func(rows *sql.Rows) error {
		r := Revision{Key: key}
		var ms int64
		var deleted int
		if err := rows.Scan(append([]any{&r.Version, &r.Checksum, &r.Author, &ms, &deleted}, provDest(&r.Provenance)...)...); err != nil {
			return err
		}
		r.Time, r.Deleted = time.UnixMilli(ms).UTC(), deleted != 0
		out = append(out, r)
		return nil
	}, key, limit)
	return out, overloaded(err)
}

// Revision implements Store.
func (s *sqlStore) Revision(ctx context.Context, repo Repo, key string, version int64) (Revision, error) {
	r := Revision{Key: key, Version: version}
	var ms int64
	var deleted int
	err := retryBadConn(ctx, func() error {
		return s.r.QueryRowContext(ctx, s.q(`SELECT checksum, author, time_ms, deleted, content, `+provSelect+` FROM team_history
		WHERE tenant = ? AND name = ? AND key = ? AND version = ?`), repo.Tenant, repo.Name, key, version).
			Scan(append([]any{&r.Checksum, &r.Author, &ms, &deleted, &r.Content}, provDest(&r.Provenance)...)...)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Revision{}, ErrNoRevision
	}
	if err != nil {
		return Revision{}, overloaded(err)
	}
	r.Time, r.Deleted = time.UnixMilli(ms).UTC(), deleted != 0
	return r, nil
}

// Log implements Store.
func (s *sqlStore) Log(ctx context.Context, repo Repo, since int64, limit int) ([]Change, error) {
	limit = positiveOr(limit, 1000)
	var out []Change
	err := s.each(ctx, s.r, `SELECT version, time_ms, author, keys, ops, `+provSelect+` FROM team_log
		WHERE tenant = ? AND name = ? AND version > ? ORDER BY version DESC LIMIT ?`, repo, func(rows *sql.Rows) error {
		var c Change
		var ms int64
		var keys, ops string
		if err := rows.Scan(append([]any{&c.Version, &ms, &c.Author, &keys, &ops}, provDest(&c.Provenance)...)...); err != nil {
			return err
		}
		c.Time = time.UnixMilli(ms).UTC()
		_ = json.Unmarshal([]byte(keys), &c.Keys)
		if ops != "" { // "": recorded before the operations were
			_ = json.Unmarshal([]byte(ops), &c.Ops)
		}
		out = append(out, c)
		return nil
	}, since, limit)
	return out, overloaded(err)
}

// Authors implements TeamStore: one query, the newest revision of each
// live key.
func (s *sqlStore) Authors(ctx context.Context, repo Repo) (map[string]Revision, error) {
	out := map[string]Revision{}
	err := s.each(ctx, s.r, `SELECT h.key, h.version, h.checksum, h.author, h.time_ms, `+strings.ReplaceAll(provSelect, "prov_", "h.prov_")+`
		FROM team_history h JOIN team_entries e ON e.tenant = h.tenant AND e.name = h.name AND e.key = h.key
		WHERE h.tenant = ? AND h.name = ? AND h.version = (SELECT MAX(version) FROM team_history m
			WHERE m.tenant = h.tenant AND m.name = h.name AND m.key = h.key)`, repo, func(rows *sql.Rows) error {
		var r Revision
		var ms int64
		if err := rows.Scan(append([]any{&r.Key, &r.Version, &r.Checksum, &r.Author, &ms}, provDest(&r.Provenance)...)...); err != nil {
			return err
		}
		r.Time = time.UnixMilli(ms).UTC()
		out[r.Key] = r
		return nil
	})
	return out, overloaded(err)
}

// Counts implements TeamStore.
func (s *sqlStore) Counts(ctx context.Context) (repos, entries, tombstones int64, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM team_repos), (SELECT COUNT(*) FROM team_entries), (SELECT COUNT(*) FROM team_tombstones)`).
		Scan(&repos, &entries, &tombstones)
	return repos, entries, tombstones, err
}

// PoolStats implements PoolStats (the reading pool on SQLite).
func (s *sqlStore) PoolStats() sql.DBStats { return s.r.Stats() }

var _ PoolStats = (*sqlStore)(nil)

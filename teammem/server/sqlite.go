package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// SQLiteStore keeps team memory in one SQLite file (pure Go, no cgo): the
// default for a self-hosted server on one machine. Writes run in
// IMMEDIATE transactions with the WAL journal and synchronous=FULL, so an
// acknowledged write survives a crash, and several server processes may
// share the file.
type SQLiteStore struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS repos (
	tenant TEXT NOT NULL, name TEXT NOT NULL,
	version INTEGER NOT NULL, checksum TEXT NOT NULL, last_modified_ms INTEGER NOT NULL,
	PRIMARY KEY (tenant, name));
CREATE TABLE IF NOT EXISTS entries (
	tenant TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL,
	content TEXT NOT NULL, checksum TEXT NOT NULL,
	PRIMARY KEY (tenant, name, key));
CREATE TABLE IF NOT EXISTS tombstones (
	tenant TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL, deleted_ms INTEGER NOT NULL,
	PRIMARY KEY (tenant, name, key));
`

// OpenSQLite opens (creating if needed) the store in the file at path.
func OpenSQLite(path string) (*SQLiteStore, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", path, err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("server: prepare the database: %w", err)
	}
	return &SQLiteStore{db: db}, nil
}

// Close implements Store.
func (s *SQLiteStore) Close() error { return s.db.Close() }

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func load(ctx context.Context, q querier, repo Repo, withContent bool) (Snapshot, error) {
	var snap Snapshot
	var lastMS int64
	err := q.QueryRowContext(ctx, `SELECT version, checksum, last_modified_ms FROM repos WHERE tenant = ? AND name = ?`,
		repo.Tenant, repo.Name).Scan(&snap.Version, &snap.Checksum, &lastMS)
	if errors.Is(err, sql.ErrNoRows) {
		return Snapshot{}, ErrNotFound
	}
	if err != nil {
		return Snapshot{}, err
	}
	snap.LastModified = time.UnixMilli(lastMS).UTC()
	snap.Checksums, snap.Tombstones = map[string]string{}, map[string]int64{}
	if withContent {
		snap.Entries = map[string]string{}
	}
	rows, err := q.QueryContext(ctx, `SELECT key, checksum, CASE WHEN ? THEN content ELSE '' END FROM entries WHERE tenant = ? AND name = ?`,
		withContent, repo.Tenant, repo.Name)
	if err != nil {
		return Snapshot{}, err
	}
	for rows.Next() {
		var k, sum, content string
		if err := rows.Scan(&k, &sum, &content); err != nil {
			rows.Close()
			return Snapshot{}, err
		}
		snap.Checksums[k] = sum
		if withContent {
			snap.Entries[k] = content
		}
	}
	if err := rows.Close(); err != nil {
		return Snapshot{}, err
	}
	rows, err = q.QueryContext(ctx, `SELECT key, deleted_ms FROM tombstones WHERE tenant = ? AND name = ?`, repo.Tenant, repo.Name)
	if err != nil {
		return Snapshot{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var ms int64
		if err := rows.Scan(&k, &ms); err != nil {
			return Snapshot{}, err
		}
		snap.Tombstones[k] = ms
	}
	return snap, rows.Err()
}

// Get implements Store.
func (s *SQLiteStore) Get(ctx context.Context, repo Repo, withContent bool) (Snapshot, error) {
	return load(ctx, s.db, repo, withContent)
}

// Put implements Store, in one IMMEDIATE transaction.
func (s *SQLiteStore) Put(ctx context.Context, repo Repo, req PutRequest) (Snapshot, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Snapshot{}, err
	}
	defer tx.Rollback()
	cur, err := load(ctx, tx, repo, false)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Snapshot{}, err
	}
	next, err := apply(cur, exists, req)
	if err != nil {
		return Snapshot{}, err
	}
	for _, k := range req.Deletes {
		if _, gone := next.Tombstones[k]; !gone {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM entries WHERE tenant = ? AND name = ? AND key = ?`, repo.Tenant, repo.Name, k); err != nil {
			return Snapshot{}, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tombstones (tenant, name, key, deleted_ms) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant, name, key) DO UPDATE SET deleted_ms = excluded.deleted_ms`, repo.Tenant, repo.Name, k, next.Tombstones[k]); err != nil {
			return Snapshot{}, err
		}
	}
	for k, v := range req.Entries {
		if _, err := tx.ExecContext(ctx, `INSERT INTO entries (tenant, name, key, content, checksum) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant, name, key) DO UPDATE SET content = excluded.content, checksum = excluded.checksum`,
			repo.Tenant, repo.Name, k, v, next.Checksums[k]); err != nil {
			return Snapshot{}, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tombstones WHERE tenant = ? AND name = ? AND key = ?`, repo.Tenant, repo.Name, k); err != nil {
			return Snapshot{}, err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO repos (tenant, name, version, checksum, last_modified_ms) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version, checksum = excluded.checksum, last_modified_ms = excluded.last_modified_ms`,
		repo.Tenant, repo.Name, next.Version, next.Checksum, next.LastModified.UnixMilli()); err != nil {
		return Snapshot{}, err
	}
	if err := tx.Commit(); err != nil {
		return Snapshot{}, err
	}
	next.Entries = nil
	next.LastModified = time.UnixMilli(next.LastModified.UnixMilli()).UTC()
	return next, nil
}

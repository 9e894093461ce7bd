package server

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"
)

// sqlStore is the Store both SQL databases share: the same tables, the
// same queries (written with "?" and rebound per dialect), the same
// transaction. Only how a write is serialised differs: SQLite takes the
// database write lock when the IMMEDIATE transaction begins; PostgreSQL
// takes a transaction-scoped advisory lock on the repo (lockRepo).
type sqlStore struct {
	db *sql.DB
	// dollar rewrites "?" placeholders as $1, $2, ... (PostgreSQL).
	dollar bool
	// lockRepo, when set, runs first in every write transaction with the
	// repo's "tenant\nname" as its argument.
	lockRepo string
}

const sqlSchema = `
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
`

// q rebinds a query's "?" placeholders for the dialect.
func (s *sqlStore) q(query string) string {
	if !s.dollar {
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
func (s *sqlStore) Close() error { return s.db.Close() }

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *sqlStore) load(ctx context.Context, q querier, repo Repo, withContent bool) (Snapshot, error) {
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
	snap.Checksums, snap.Tombstones = map[string]string{}, map[string]int64{}
	if withContent {
		snap.Entries = map[string]string{}
	}
	// Contents are selected only when asked for: the hashes view never
	// reads them.
	cols := "key, checksum, ''"
	if withContent {
		cols = "key, checksum, content"
	}
	err = s.each(ctx, q, `SELECT `+cols+` FROM team_entries WHERE tenant = ? AND name = ?`, repo, func(rows *sql.Rows) error {
		var k, sum, content string
		if err := rows.Scan(&k, &sum, &content); err != nil {
			return err
		}
		snap.Checksums[k] = sum
		if withContent {
			snap.Entries[k] = content
		}
		return nil
	})
	if err != nil {
		return Snapshot{}, err
	}
	err = s.each(ctx, q, `SELECT key, deleted_ms FROM team_tombstones WHERE tenant = ? AND name = ?`, repo, func(rows *sql.Rows) error {
		var k string
		var ms int64
		if err := rows.Scan(&k, &ms); err != nil {
			return err
		}
		snap.Tombstones[k] = ms
		return nil
	})
	return snap, err
}

// each runs a per-repo query and calls fn for every row.
func (s *sqlStore) each(ctx context.Context, q querier, query string, repo Repo, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, s.q(query), repo.Tenant, repo.Name)
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
	return s.load(ctx, s.db, repo, withContent)
}

// Put implements Store, in one serialised transaction.
func (s *sqlStore) Put(ctx context.Context, repo Repo, req PutRequest) (Snapshot, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Snapshot{}, err
	}
	defer tx.Rollback()
	if s.lockRepo != "" {
		if _, err := tx.ExecContext(ctx, s.lockRepo, repo.Tenant+"\n"+repo.Name); err != nil {
			return Snapshot{}, err
		}
	}
	cur, err := s.load(ctx, tx, repo, false)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Snapshot{}, err
	}
	next, err := apply(cur, exists, req)
	if err != nil {
		return Snapshot{}, err
	}
	exec := func(query string, args ...any) error {
		_, err := tx.ExecContext(ctx, s.q(query), args...)
		return err
	}
	for _, k := range req.Deletes {
		if _, gone := next.Tombstones[k]; !gone {
			continue
		}
		if err := exec(`DELETE FROM team_entries WHERE tenant = ? AND name = ? AND key = ?`, repo.Tenant, repo.Name, k); err != nil {
			return Snapshot{}, err
		}
		if err := exec(`INSERT INTO team_tombstones (tenant, name, key, deleted_ms) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant, name, key) DO UPDATE SET deleted_ms = excluded.deleted_ms`, repo.Tenant, repo.Name, k, next.Tombstones[k]); err != nil {
			return Snapshot{}, err
		}
	}
	for k, v := range req.Entries {
		if err := exec(`INSERT INTO team_entries (tenant, name, key, content, checksum) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant, name, key) DO UPDATE SET content = excluded.content, checksum = excluded.checksum`,
			repo.Tenant, repo.Name, k, v, next.Checksums[k]); err != nil {
			return Snapshot{}, err
		}
		if err := exec(`DELETE FROM team_tombstones WHERE tenant = ? AND name = ? AND key = ?`, repo.Tenant, repo.Name, k); err != nil {
			return Snapshot{}, err
		}
	}
	if err := exec(`INSERT INTO team_repos (tenant, name, version, checksum, last_modified_ms) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version, checksum = excluded.checksum, last_modified_ms = excluded.last_modified_ms`,
		repo.Tenant, repo.Name, next.Version, next.Checksum, next.LastModified.UnixMilli()); err != nil {
		return Snapshot{}, err
	}
	if err := tx.Commit(); err != nil {
		return Snapshot{}, err
	}
	next.Entries = nil
	return next, nil
}

package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresStore keeps team memory in PostgreSQL, for deployments that
// outgrow one machine: several server processes may share the database.
// Each write runs in one transaction that first takes a transaction-scoped
// advisory lock on the repo, so conditional writes to one repo are
// serialised across processes while other repos proceed in parallel.
type PostgresStore struct {
	pool *pgxpool.Pool
}

const pgSchema = `
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

// OpenPostgres connects to the database at dsn (a postgres:// URL or a
// key=value string) and creates the tables if needed.
func OpenPostgres(ctx context.Context, dsn string) (*PostgresStore, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("server: connect to PostgreSQL: %w", err)
	}
	if _, err := pool.Exec(ctx, pgSchema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("server: prepare the PostgreSQL tables: %w", err)
	}
	return &PostgresStore{pool: pool}, nil
}

// Close implements Store.
func (s *PostgresStore) Close() error {
	s.pool.Close()
	return nil
}

type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func pgLoad(ctx context.Context, q pgQuerier, repo Repo, withContent bool) (Snapshot, error) {
	var snap Snapshot
	var lastMS int64
	err := q.QueryRow(ctx, `SELECT version, checksum, last_modified_ms FROM team_repos WHERE tenant = $1 AND name = $2`,
		repo.Tenant, repo.Name).Scan(&snap.Version, &snap.Checksum, &lastMS)
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := q.Query(ctx, `SELECT key, checksum, CASE WHEN $3 THEN content ELSE '' END FROM team_entries WHERE tenant = $1 AND name = $2`,
		repo.Tenant, repo.Name, withContent)
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
	rows.Close()
	if err := rows.Err(); err != nil {
		return Snapshot{}, err
	}
	rows, err = q.Query(ctx, `SELECT key, deleted_ms FROM team_tombstones WHERE tenant = $1 AND name = $2`, repo.Tenant, repo.Name)
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
func (s *PostgresStore) Get(ctx context.Context, repo Repo, withContent bool) (Snapshot, error) {
	return pgLoad(ctx, s.pool, repo, withContent)
}

// Put implements Store.
func (s *PostgresStore) Put(ctx context.Context, repo Repo, req PutRequest) (Snapshot, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, repo.Tenant+"\n"+repo.Name); err != nil {
		return Snapshot{}, err
	}
	cur, err := pgLoad(ctx, tx, repo, false)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Snapshot{}, err
	}
	next, err := apply(cur, exists, req)
	if err != nil {
		return Snapshot{}, err
	}
	batch := &pgx.Batch{}
	for _, k := range req.Deletes {
		if _, gone := next.Tombstones[k]; !gone {
			continue
		}
		batch.Queue(`DELETE FROM team_entries WHERE tenant = $1 AND name = $2 AND key = $3`, repo.Tenant, repo.Name, k)
		batch.Queue(`INSERT INTO team_tombstones (tenant, name, key, deleted_ms) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant, name, key) DO UPDATE SET deleted_ms = EXCLUDED.deleted_ms`, repo.Tenant, repo.Name, k, next.Tombstones[k])
	}
	for k, v := range req.Entries {
		batch.Queue(`INSERT INTO team_entries (tenant, name, key, content, checksum) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant, name, key) DO UPDATE SET content = EXCLUDED.content, checksum = EXCLUDED.checksum`,
			repo.Tenant, repo.Name, k, v, next.Checksums[k])
		batch.Queue(`DELETE FROM team_tombstones WHERE tenant = $1 AND name = $2 AND key = $3`, repo.Tenant, repo.Name, k)
	}
	batch.Queue(`INSERT INTO team_repos (tenant, name, version, checksum, last_modified_ms) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant, name) DO UPDATE SET version = EXCLUDED.version, checksum = EXCLUDED.checksum, last_modified_ms = EXCLUDED.last_modified_ms`,
		repo.Tenant, repo.Name, next.Version, next.Checksum, next.LastModified.UnixMilli())
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return Snapshot{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Snapshot{}, err
	}
	next.Entries = nil
	return next, nil
}

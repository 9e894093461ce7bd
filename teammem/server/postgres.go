package server

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver for database/sql
)

// PostgresStore keeps team memory in PostgreSQL, for deployments that
// outgrow one machine: several server processes may share the database.
// Each write runs in one transaction that first takes a transaction-scoped
// advisory lock on the repo, so conditional writes to one repo are
// serialised across processes while other repos proceed in parallel.
// Reads run in REPEATABLE READ read-only transactions (one snapshot each).
// A server uses at most its pool's connections (DefaultMaxConns, or
// OpenPostgresMax); requests beyond wait for a free one.
type PostgresStore struct{ sqlStore }

// OpenPostgres connects to the database at dsn (a postgres:// URL or a
// key=value string) with DefaultMaxConns connections at most and creates
// the tables if needed.
func OpenPostgres(ctx context.Context, dsn string) (*PostgresStore, error) {
	return OpenPostgresMax(ctx, dsn, DefaultMaxConns)
}

// OpenPostgresMax is OpenPostgres with a pool of at most maxConns.
func OpenPostgresMax(ctx context.Context, dsn string, maxConns int) (*PostgresStore, error) {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("server: connect to PostgreSQL: %w", err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if _, err := db.ExecContext(ctx, sqlSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("server: prepare the PostgreSQL tables: %w", err)
	}
	return &PostgresStore{sqlStore{w: db, r: db, dollar: true,
		lockRepo: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		readOpts: &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}}}, nil
}

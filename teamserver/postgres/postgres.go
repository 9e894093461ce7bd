// Package postgres opens the sync server's store in PostgreSQL, for
// deployments that outgrow one machine: several server processes may
// share the database. It is a module of its own so that the core module
// compiles no SQL driver.
//
// Each write runs in one transaction that first takes a transaction-scoped
// advisory lock on the repo, so conditional writes to one repo are
// serialised across processes while other repos proceed in parallel.
// Reads run in REPEATABLE READ read-only transactions (one snapshot each).
// A server uses at most its pool's connections; requests beyond wait for a
// free one.
package postgres

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver for database/sql

	"github.com/agentmem-sdk/agentmem/teamserver"
)

// DefaultMaxConns is the default pool size, well under PostgreSQL's
// default limit of 100 connections with two servers.
const DefaultMaxConns = 20

// Open connects to the database at dsn (a postgres:// URL or a key=value
// string) with DefaultMaxConns connections at most and creates the tables
// if needed.
func Open(ctx context.Context, dsn string) (teamserver.Store, error) {
	return OpenMax(ctx, dsn, DefaultMaxConns)
}

// OpenMax is Open with a pool of at most maxConns.
func OpenMax(ctx context.Context, dsn string, maxConns int) (teamserver.Store, error) {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	s, err := teamserver.NewSQLStore(ctx, db, db, teamserver.SQLDialect{Dollar: true,
		LockRepo:    `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		ReadOptions: &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}})
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

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
type PostgresStore struct{ sqlStore }

// OpenPostgres connects to the database at dsn (a postgres:// URL or a
// key=value string) and creates the tables if needed.
func OpenPostgres(ctx context.Context, dsn string) (*PostgresStore, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("server: connect to PostgreSQL: %w", err)
	}
	if _, err := db.ExecContext(ctx, sqlSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("server: prepare the PostgreSQL tables: %w", err)
	}
	return &PostgresStore{sqlStore{db: db, dollar: true, lockRepo: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`}}, nil
}

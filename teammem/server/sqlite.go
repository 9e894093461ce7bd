package server

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// SQLiteStore keeps team memory in one SQLite file (pure Go, no cgo): the
// default for a self-hosted server on one machine. Writes go through one
// connection, so concurrent writers queue in the process instead of
// waiting out the database's busy timeout; each runs in an IMMEDIATE
// transaction with the WAL journal and synchronous=FULL, so an
// acknowledged write survives a crash, and several server processes may
// share the file. Reads run on their own connections in read
// transactions (WAL snapshots), beside the writer.
type SQLiteStore struct{ sqlStore }

// DefaultMaxConns is the default size of a store's connection pool (reads
// on SQLite; everything on PostgreSQL, well under its default limit of
// 100 connections with two servers).
const DefaultMaxConns = 20

// OpenSQLite opens (creating if needed) the store in the file at path,
// with DefaultMaxConns reading connections.
func OpenSQLite(path string) (*SQLiteStore, error) { return OpenSQLiteMax(path, DefaultMaxConns) }

// OpenSQLiteMax is OpenSQLite with maxConns reading connections.
func OpenSQLiteMax(path string, maxConns int) (*SQLiteStore, error) {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	dsn := func(lock string) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "busy_timeout(10000)")
		q.Set("_txlock", lock)
		return "file:" + path + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn("immediate"))
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1) // the one writer
	if _, err := w.Exec(sqlSchema); err != nil {
		w.Close()
		return nil, fmt.Errorf("server: prepare the database: %w", err)
	}
	r, err := sql.Open("sqlite", dsn("deferred"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("server: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(maxConns)
	r.SetMaxIdleConns(maxConns)
	return &SQLiteStore{sqlStore{w: w, r: r}}, nil
}

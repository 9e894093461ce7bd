package server

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// SQLiteStore keeps team memory in one SQLite file (pure Go, no cgo): the
// default for a self-hosted server on one machine. Writes run in
// IMMEDIATE transactions with the WAL journal and synchronous=FULL, so an
// acknowledged write survives a crash, and several server processes may
// share the file.
type SQLiteStore struct{ sqlStore }

// OpenSQLite opens (creating if needed) the store in the file at path.
func OpenSQLite(path string) (*SQLiteStore, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", path, err)
	}
	if _, err := db.Exec(sqlSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("server: prepare the database: %w", err)
	}
	return &SQLiteStore{sqlStore{db: db}}, nil
}

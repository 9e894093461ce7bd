// Package sqlite opens the sync server's store in one SQLite file (pure
// Go, no cgo): the default for a self-hosted server on one machine. It is
// a module of its own so that the core module compiles no SQL driver.
//
// Writes go through one connection, so concurrent writers queue in the
// process instead of waiting out the database's busy timeout; each runs
// in an IMMEDIATE transaction with the WAL journal and synchronous=FULL,
// so an acknowledged write survives a crash, and several server processes
// may share the file. Reads run on their own connections in read
// transactions (WAL snapshots), beside the writer.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver

	"github.com/agentmem-sdk/agentmem/teamserver"
)

// DefaultMaxConns is the default number of reading connections.
const DefaultMaxConns = 20

// Open opens (creating if needed) the store in the file at path, with
// DefaultMaxConns reading connections. The file's folder must exist: when
// it does not, the error names it and matches fs.ErrNotExist.
func Open(path string) (teamserver.Store, error) { return OpenMax(path, DefaultMaxConns) }

// OpenMax is Open with maxConns reading connections.
func OpenMax(path string, maxConns int) (teamserver.Store, error) {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	// SQLite's own error for a missing folder ("unable to open database
	// file (14)") names neither the path nor the cause.
	if dir := filepath.Dir(path); path != ":memory:" {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() { // a missing folder, or a file in its place
			return nil, fmt.Errorf("sqlite: cannot create the database %s: the folder %s does not exist; create it first or choose another path: %w", path, dir, fs.ErrNotExist)
		}
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
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1) // the one writer
	r, err := sql.Open("sqlite", dsn("deferred"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(maxConns)
	r.SetMaxIdleConns(maxConns)
	s, err := teamserver.NewSQLStore(context.Background(), w, r, teamserver.SQLDialect{})
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

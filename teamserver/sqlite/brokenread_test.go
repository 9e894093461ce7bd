package sqlite_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	msqlite "modernc.org/sqlite"

	"github.com/agentmem-sdk/agentmem/teamserver"
)

// brokenReadDriver is SQLite whose next read of team entries with their
// content delivers one row, calls midway, then reports a broken
// connection, as a driver may mid-stream; the store then reads again.
type brokenReadDriver struct{ driver.Driver }

var (
	breakNextRead atomic.Bool
	midway        func()
)

func (d brokenReadDriver) Open(name string) (driver.Conn, error) {
	c, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return &brokenReadConn{c}, nil
}

type brokenReadConn struct{ driver.Conn }

func (c *brokenReadConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *brokenReadConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *brokenReadConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *brokenReadConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
	if err == nil && strings.Contains(q, "content FROM team_entries") && breakNextRead.CompareAndSwap(true, false) {
		return &brokenRows{Rows: rows}, nil
	}
	return rows, err
}

type brokenRows struct {
	driver.Rows
	n int
}

func (r *brokenRows) Next(dest []driver.Value) error {
	if r.n == 1 {
		midway()
		return driver.ErrBadConn
	}
	r.n++
	return r.Rows.Next(dest)
}

func init() { sql.Register("sqlite-broken-read", brokenReadDriver{&msqlite.Driver{}}) }

// brokenReadServer is a SQLite store whose reads go through
// brokenReadDriver, a handler over it, and a token of organization acme.
func brokenReadServer(t *testing.T) (teamserver.Store, *teamserver.Handler, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "team.db")
	dsn := func(lock string) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "busy_timeout(10000)")
		q.Set("_txlock", lock)
		return "file:" + path + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn("immediate"))
	require.NoError(t, err)
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite-broken-read", dsn("deferred"))
	require.NoError(t, err)
	store, err := teamserver.NewSQLStore(context.Background(), w, r, teamserver.SQLDialect{})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	require.NoError(t, err)
	return store, h, token
}

// TestRedactionReadAgainKeepsATeammatesWrite: the start's credential
// redaction streams a repo; when the read breaks midway and is made
// again, what the first attempt saw is dropped, so a teammate's write
// between the attempts is kept, not overwritten with the redacted old
// content.
func TestRedactionReadAgainKeepsATeammatesWrite(t *testing.T) {
	ctx := context.Background()
	store, h, _ := brokenReadServer(t)
	token := "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	_, err := store.Put(ctx, repo, teamserver.PutRequest{Entries: map[string]string{
		"a.md": "old a " + token + "\n", "b.md": "old b " + token + "\n"}, Author: "ana", Now: time.Now()})
	require.NoError(t, err)
	midway = func() {
		_, err := store.Put(ctx, repo, teamserver.PutRequest{Entries: map[string]string{"a.md": "ben's new a\n"}, Author: "ben", Now: time.Now()})
		assert.NoError(t, err)
	}
	breakNextRead.Store(true)
	red, err := h.RedactStoredCredentials(ctx)
	require.NoError(t, err)
	require.False(t, breakNextRead.Load(), "the read broke midway")
	snap, err := store.Get(ctx, repo, true)
	require.NoError(t, err)
	assert.Equal(t, "ben's new a\n", snap.Entries["a.md"], "the teammate's write is kept")
	assert.Equal(t, "old b [REDACTED]\n", snap.Entries["b.md"])
	assert.Equal(t, []string{"acme acme/shop b.md"}, red.Entries)
}

// TestFullGetReadAgainIsCut: when the store reads a repo again (a broken
// connection) after part of a full GET's reply was sent, the reply is
// cut, so the client sees a failed read, never a complete-looking reply
// holding the first entries twice.
func TestFullGetReadAgainIsCut(t *testing.T) {
	ctx := context.Background()
	store, h, token := brokenReadServer(t)
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	big := strings.Repeat("A line of a long memory.\n", 8000) // past the reply's 64 kB buffer
	_, err := store.Put(ctx, repo, teamserver.PutRequest{Entries: map[string]string{"a.md": big, "b.md": "b\n"}, Author: "ana", Now: time.Now()})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	midway = func() {}
	breakNextRead.Store(true)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/claude_code/team_memory?repo=acme%2Fshop", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.False(t, breakNextRead.Load(), "the read broke midway")
	assert.Error(t, err, "the reply is cut, not complete-looking (%d bytes)", len(body))
}

package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
	"github.com/agentmem-sdk/agentmem/teamserver/storetest"
)

func TestSQLiteTrust(t *testing.T) {
	storetest.RunTrust(t, func(t *testing.T) teamserver.TeamStore {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// The SQLite store serves the Memory Stores protocol's interface.
func TestSQLiteMemoryStores(t *testing.T) {
	storetest.RunMemoryStores(t, func(t *testing.T) teamserver.MemoryStores {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// The Memory Stores API answers on SQLite as the official SDKs document.
func TestSQLiteMemoryStoresAPI(t *testing.T) {
	storetest.RunMemoryStoresAPI(t, func(t *testing.T) teamserver.TeamStore {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Claude Code's store route answers on SQLite as Claude Code expects.
func TestSQLiteClaudeCodeRoute(t *testing.T) {
	storetest.RunClaudeCodeRoute(t, func(t *testing.T) teamserver.TeamStore {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Both protocols refuse on SQLite what some store could not hold.
func TestSQLiteRefusals(t *testing.T) {
	storetest.RunRefusals(t, func(t *testing.T) teamserver.TeamStore {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// A database made before provenance and review opens with its data, and
// records both from then on.
func TestSQLiteMigratesAnOldDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	storetest.RunMigration(t, func(ddl string) error { _, err := db.Exec(ddl); return err }, func() teamserver.TeamStore {
		s, err := sqlite.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

package sqlite_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
	"github.com/agentmem-sdk/agentmem/teamserver/storetest"
)

func TestSQLiteStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) teamserver.TeamStore {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestSQLiteReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "team.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	snap, err := s.Put(context.Background(), repo, teamserver.PutRequest{Entries: map[string]string{"a.md": "kept"}, Now: time.Now()})
	require.NoError(t, err)
	id := s.ID()
	require.NoError(t, s.Close())
	s, err = sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Get(context.Background(), repo, true)
	require.NoError(t, err)
	require.Equal(t, "kept", got.Entries["a.md"])
	require.Equal(t, snap.Checksum, got.Checksum)
	require.Equal(t, id, s.ID(), "a reopened database keeps its identity")
}

// A database in a folder that does not exist is refused with an error
// that names the folder, not SQLite's "unable to open database file".
func TestOpenInAMissingFolderSaysWhich(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-folder")
	db := filepath.Join(missing, "team.db")
	_, err := sqlite.Open(db)
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), db)
	assert.Contains(t, err.Error(), "the folder "+missing+" does not exist")
	assert.NotContains(t, err.Error(), "(14)")
	assert.NoDirExists(t, missing, "nothing was created")
}

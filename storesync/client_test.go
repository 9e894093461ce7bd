package storesync_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
)

// syncFixture is one store, "team-store", on an in-process server, and
// the clients of teammates whose folders mount it.
type syncFixture struct {
	t     *testing.T
	url   string
	key   string
	id    string
	mount storesync.Mount
	now   time.Time
}

func newSyncFixture(t *testing.T) *syncFixture {
	t.Helper()
	url, key := inProcessServer(t)
	mounts, err := storesync.ParseMounts(`[{"path": "/v1/code/memory/team-store", "mount": "proj"}]`)
	require.NoError(t, err)
	f := &syncFixture{t: t, url: url, key: key, mount: mounts[0], now: time.Now()}
	f.id = createStore(t, url, key, "team-store")
	return f
}

// client opens a teammate's client and runs its first round.
func (f *syncFixture) client(name string, mode ...string) (*storesync.Client, string) {
	f.t.Helper()
	c, dir := f.newClient(name, mode...)
	syncOK(f.t, c)
	return c, dir
}

func (f *syncFixture) newClient(name string, mode ...string) (*storesync.Client, string) {
	f.t.Helper()
	dir := f.mount.Dir(filepath.Join(f.t.TempDir(), name))
	cfg := storesync.Options{BaseURL: f.url, Token: f.key, Mount: f.mount, Now: func() time.Time { return f.now }}
	if len(mode) > 0 {
		cfg.DeleteMode = mode[0]
	}
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(f.t, err)
	c, err := storesync.New(d, cfg)
	require.NoError(f.t, err)
	return c, dir
}

func syncOK(t *testing.T, c *storesync.Client) foldersync.Result {
	t.Helper()
	res, err := c.Sync(context.Background())
	require.NoError(t, err)
	return res
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(raw)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestStoreSyncBothWays(t *testing.T) {
	f := newSyncFixture(t)
	a, aDir := f.client("ana")
	b, bDir := f.client("ben")
	writeFile(t, aDir, "MEMORY.md", "- [Deploys](deploy.md)\n")
	writeFile(t, aDir, "deploy.md", "Deploys freeze on Fridays.\n")
	writeFile(t, aDir, "notes/ci.md", "CI runs on main.\n")
	writeFile(t, aDir, ".hidden.md", "never synced")
	writeFile(t, aDir, "image.png", "never synced")
	res := syncOK(t, a)
	assert.ElementsMatch(t, []string{"/MEMORY.md", "/deploy.md", "/notes/ci.md"}, res.Pushed)
	res = syncOK(t, b)
	assert.ElementsMatch(t, []string{"/MEMORY.md", "/deploy.md", "/notes/ci.md"}, res.Pulled)
	assert.Equal(t, "CI runs on main.\n", readFile(t, bDir, "notes/ci.md"))
	assert.NoFileExists(t, filepath.Join(bDir, "image.png"))

	// The manifests, in Claude Code's JSON.
	var manifest map[string]any
	require.NoError(t, json.Unmarshal([]byte(readFile(t, bDir, ".memory-sync")), &manifest))
	assert.Equal(t, map[string]any{"v": float64(1), "partition": "/v1/code/memory/team-store"}, manifest)
	var basis struct {
		V                 int             `json:"v"`
		Partition         string          `json:"partition"`
		Entries           [][]string      `json:"entries"`
		Deletes           []any           `json:"deletes"`
		EntriesWereOnDisk bool            `json:"entriesWereOnDisk"`
		Extra             json.RawMessage `json:"held"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, bDir, ".memory-sync-basis")), &basis))
	assert.Equal(t, 1, basis.V)
	assert.True(t, basis.EntriesWereOnDisk)
	require.Len(t, basis.Entries, 3)
	assert.Equal(t, "/MEMORY.md", basis.Entries[0][0])
	assert.Regexp(t, `^mem_`, basis.Entries[0][1])
	assert.Equal(t, sha("- [Deploys](deploy.md)\n"), basis.Entries[0][2])

	// One side edits: the other pulls. Nothing to do after.
	writeFile(t, bDir, "deploy.md", "Deploys freeze on Fridays, except hotfixes.\n")
	res = syncOK(t, b)
	assert.Equal(t, []string{"/deploy.md"}, res.Pushed)
	res = syncOK(t, a)
	assert.Equal(t, []string{"/deploy.md"}, res.Pulled)
	assert.Equal(t, "Deploys freeze on Fridays, except hotfixes.\n", readFile(t, aDir, "deploy.md"))
	assert.False(t, syncOK(t, a).Changed())

	// Both edit: the store's version takes the file, the local one is kept.
	writeFile(t, aDir, "notes/ci.md", "Ana's CI note.\n")
	writeFile(t, bDir, "notes/ci.md", "Ben's CI note.\n")
	syncOK(t, a)
	res = syncOK(t, b)
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "Ana's CI note.\n", readFile(t, bDir, "notes/ci.md"))
	saved, err := os.ReadFile(res.Conflicts[0].SavedAs)
	require.NoError(t, err)
	assert.Equal(t, "Ben's CI note.\n", string(saved))
	assert.True(t, strings.HasPrefix(res.Conflicts[0].SavedAs, filepath.Join(bDir, ".memory-sync-conflicts")))

	// A secret is never pushed.
	writeFile(t, aDir, "token.md", "token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 end")
	res = syncOK(t, a)
	assert.Contains(t, res.Skipped, foldersync.Skip{Path: "/token.md", Reason: "secret"})
	assert.Empty(t, res.Pushed)
}

func TestStoreSyncDeletes(t *testing.T) {
	f := newSyncFixture(t)
	a, aDir := f.client("ana")
	b, bDir := f.client("ben")
	writeFile(t, aDir, "old.md", "old")
	writeFile(t, aDir, "edited.md", "v1")
	syncOK(t, a)
	syncOK(t, b)

	// corroborate: the first walk records the miss, a walk 30 s later deletes.
	require.NoError(t, os.Remove(filepath.Join(aDir, "old.md")))
	res := syncOK(t, a)
	assert.Equal(t, []string{"/old.md"}, res.Pending)
	assert.Empty(t, res.DeletedRemote)
	assert.Contains(t, readFile(t, aDir, ".memory-sync-basis"), `"deletes":[["/old.md",`)
	f.now = f.now.Add(10 * time.Second)
	assert.Empty(t, syncOK(t, a).DeletedRemote, "two walks but only 10 s")
	f.now = f.now.Add(25 * time.Second)
	assert.Equal(t, []string{"/old.md"}, syncOK(t, a).DeletedRemote)
	assert.Equal(t, []string{"/old.md"}, syncOK(t, b).DeletedLocal)
	assert.NoFileExists(t, filepath.Join(bDir, "old.md"))

	// Deleted on one side, edited on the other: the edit wins.
	imm, immDir := f.client("ivy", foldersync.DeleteImmediate)
	syncOK(t, imm)
	require.NoError(t, os.Remove(filepath.Join(immDir, "edited.md")))
	writeFile(t, bDir, "edited.md", "v2")
	syncOK(t, b)
	res = syncOK(t, imm)
	assert.Equal(t, []string{"/edited.md"}, res.Pulled)
	assert.Equal(t, "v2", readFile(t, immDir, "edited.md"))

	// never: a local deletion never reaches the store.
	nev, nevDir := f.client("nora", foldersync.DeleteNever)
	syncOK(t, nev)
	require.NoError(t, os.Remove(filepath.Join(nevDir, "edited.md")))
	f.now = f.now.Add(time.Hour)
	syncOK(t, nev)
	assert.Empty(t, syncOK(t, nev).DeletedRemote)
	assert.Equal(t, []string{}, append([]string{}, syncOK(t, a).DeletedLocal...))
}

func TestStoreSyncMassDeleteHold(t *testing.T) {
	f := newSyncFixture(t)
	a, aDir := f.client("ana", foldersync.DeleteImmediate)
	for i := range 60 {
		writeFile(t, aDir, "m"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26))+".md", "memory")
	}
	syncOK(t, a)
	entries, err := os.ReadDir(aDir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			require.NoError(t, os.Remove(filepath.Join(aDir, e.Name())))
		}
	}
	res := syncOK(t, a)
	require.Len(t, res.Held, 1)
	assert.Equal(t, "store", res.Held[0].Side)
	assert.Len(t, res.Held[0].Paths, 60)
	assert.Empty(t, res.DeletedRemote)
	b, _ := f.newClient("ben")
	assert.Len(t, syncOK(t, b).Pulled, 60, "the store kept every memory")
}

func TestStoreSyncRefusesAForeignFolder(t *testing.T) {
	f := newSyncFixture(t)
	c, dir := f.newClient("ana")
	writeFile(t, dir, "mine.md", "written before any sync")
	_, err := c.Sync(context.Background())
	var foreign *storesync.ForeignDirError
	require.True(t, errors.As(err, &foreign), "%v", err)
	assert.Contains(t, err.Error(), "remove or rename the folder")
	assert.Equal(t, "written before any sync", readFile(t, dir, "mine.md"), "nothing was touched")
	assert.NoFileExists(t, filepath.Join(dir, ".memory-sync"))
}

// TestStoreSyncSurvivesAReplacedStore: a store deleted and made again
// under the same name deletes nothing on the clients; what the store
// lacks is pushed back. (A store restored from a backup: the engine's
// RestoredRemote through this driver in teamserver/sqlite, and
// TestStoreSyncSurvivesARestoredStore in cmd/agentmem.)
func TestStoreSyncSurvivesAReplacedStore(t *testing.T) {
	f := newSyncFixture(t)
	a, aDir := f.client("ana", foldersync.DeleteImmediate)
	writeFile(t, aDir, "one.md", "1")
	writeFile(t, aDir, "two.md", "2")
	syncOK(t, a)

	code, body := apiCall(t, http.MethodDelete, f.url+storewire.StoresPath+"/"+f.id, f.key, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	f.id = createStore(t, f.url, f.key, "team-store")
	res := syncOK(t, a)
	assert.True(t, res.BasisReset)
	assert.Empty(t, res.DeletedLocal)
	assert.ElementsMatch(t, []string{"/one.md", "/two.md"}, res.Pushed)
	assert.Equal(t, "1", readFile(t, aDir, "one.md"))
}

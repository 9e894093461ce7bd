package teammem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// swappable is a server whose store can be replaced behind one URL.
type swappable struct {
	syncEnv
	grant teamserver.TokenGrant
	h     atomic.Pointer[teamserver.Handler]
	id    string // the current store's identity
}

type handlerFunc func() *teamserver.Handler

func (f handlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) { f().ServeHTTP(w, r) }

// sameID is a store that reports a given identity: what a copy of a
// database (a backup) is to the store it was taken from.
type sameID struct {
	teamserver.Store
	id string
}

func (s sameID) ID() string { return s.id }

func startSwappable(t *testing.T) *swappable {
	t.Helper()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	s := &swappable{grant: grant}
	s.token = token
	s.swap(t, teamserver.NewMemoryStore())
	srv := httptest.NewServer(handlerFunc(func() *teamserver.Handler { return s.h.Load() }))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *swappable) swap(t testing.TB, store teamserver.Store) {
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{s.grant}})
	require.NoError(t, err)
	s.h.Store(h)
	s.id = store.ID()
}

func TestDeletionOnlyOnEvidence(t *testing.T) {
	// A server store that loses keys without recording their deletion
	// (here: replaced by one holding only some of them) is not evidence.
	e := startSwappable(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "alpha", "b.md": "bee"})
	state := filepath.Join(t.TempDir(), "state.json")
	c := newClient(t, e.syncEnv, dir, func(cfg *teammem.Options) { cfg.StateFile = state })
	ctx := context.Background()
	_, err := c.Sync(ctx, &teammem.SyncState{})
	require.NoError(t, err)

	e.swap(t, teamserver.NewMemoryStore())
	for _, mode := range []string{"pull", "sync"} {
		var res foldersync.Result
		var st teammem.SyncState
		if mode == "pull" {
			res, err = c.Pull(ctx, &st)
		} else {
			res, err = c.Sync(ctx, &st)
		}
		require.NoError(t, err, mode)
		assert.Empty(t, res.DeletedLocal, mode)
		assert.Equal(t, "alpha", readFile(t, filepath.Join(dir, "a.md")), mode)
		assert.Equal(t, "bee", readFile(t, filepath.Join(dir, "b.md")), mode)
		if mode == "pull" {
			assert.True(t, res.BasisReset, mode)
			assert.Contains(t, st.Reset, "not the one this directory last synced with")
		} else {
			assert.ElementsMatch(t, []string{"a.md", "b.md"}, res.Pushed, "what the new store lacks is pushed")
		}
	}

	// A real deletion (a tombstone) still propagates.
	other := t.TempDir()
	co := newClient(t, e.syncEnv, other, nil)
	var so teammem.SyncState
	_, err = co.Sync(ctx, &so)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(other, "b.md")))
	res, err := co.Sync(ctx, &so)
	require.NoError(t, err)
	require.Equal(t, []string{"b.md"}, res.DeletedRemote)
	var sc teammem.SyncState
	res, err = c.Sync(ctx, &sc)
	require.NoError(t, err)
	assert.Equal(t, []string{"b.md"}, res.DeletedLocal)
	assert.Empty(t, sc.Reset)
}

func TestRestoredStoreVersionGoesBack(t *testing.T) {
	// A backup taken at version 1, restored after versions 2 and 3: the
	// same identity, an older version. Nothing written after the backup
	// is deleted; the edit after it keeps the local text.
	e := startSwappable(t)
	live := teamserver.NewMemoryStore()
	e.swap(t, live)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "alpha", "edited.md": "first"})
	state := filepath.Join(t.TempDir(), "state.json")
	c := newClient(t, e.syncEnv, dir, func(cfg *teammem.Options) { cfg.StateFile = state })
	ctx := context.Background()
	_, err := c.Sync(ctx, &teammem.SyncState{})
	require.NoError(t, err)
	backup := teamserver.NewMemoryStore()
	_, err = backup.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"a.md": "alpha", "edited.md": "first"}, Now: time.Now()})
	require.NoError(t, err)

	writeFiles(t, dir, map[string]string{"late.md": "after the backup", "edited.md": "second"})
	_, err = c.Sync(ctx, &teammem.SyncState{})
	require.NoError(t, err)
	raw, err := os.ReadFile(state)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"storeId":"`+live.ID()+`"`)

	e.swap(t, sameID{backup, live.ID()})
	var restored teammem.SyncState
	res, err := c.Sync(ctx, &restored)
	require.NoError(t, err)
	assert.Contains(t, restored.Reset, "older than version")
	assert.Empty(t, res.DeletedLocal)
	assert.ElementsMatch(t, []string{"late.md", "edited.md"}, res.Pushed)
	require.Len(t, res.Conflicts, 1)
	assert.True(t, res.Conflicts[0].LocalKept)
	assert.Equal(t, "first", readFile(t, res.Conflicts[0].SavedAs), "the server's older copy is kept aside")
	assert.Equal(t, "second", readFile(t, filepath.Join(dir, "edited.md")))
	assert.Equal(t, "after the backup", readFile(t, filepath.Join(dir, "late.md")))

	// The next round is an ordinary one.
	var next teammem.SyncState
	res, err = c.Sync(ctx, &next)
	require.NoError(t, err)
	assert.Empty(t, next.Reset)
	assert.Empty(t, res.Pushed)
	assert.Empty(t, res.Conflicts)
}

func TestMassDeleteHoldLibrary(t *testing.T) {
	e := startServer(t, 1000)
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 120 {
		files[fmt.Sprintf("m%03d.md", i)] = fmt.Sprintf("memory %d", i)
	}
	writeFiles(t, dir, files)
	c := newClient(t, e, dir, nil)
	ctx := context.Background()
	var st teammem.SyncState
	_, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	assert.Equal(t, 50, foldersync.MassDeleteThreshold(120))
	assert.Equal(t, 100, foldersync.MassDeleteThreshold(1000))

	// 50 deletions at once pass (the threshold is "more than").
	for i := range 50 {
		require.NoError(t, os.Remove(filepath.Join(dir, fmt.Sprintf("m%03d.md", i))))
	}
	res, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	assert.Len(t, res.DeletedRemote, 50)
	assert.Empty(t, res.Held)

	// 51 of the 70 left are held; an edit in the same round still lands.
	for i := 50; i < 101; i++ {
		require.NoError(t, os.Remove(filepath.Join(dir, fmt.Sprintf("m%03d.md", i))))
	}
	writeFiles(t, dir, map[string]string{"m119.md": "edited"})
	res, err = c.Sync(ctx, &st)
	require.NoError(t, err)
	require.Len(t, res.Held, 1)
	assert.Equal(t, "remote", res.Held[0].Side)
	assert.Len(t, res.Held[0].Paths, 51)
	assert.Equal(t, 70, res.Held[0].Tracked)
	assert.Empty(t, res.DeletedRemote)
	assert.Equal(t, []string{"m119.md"}, res.Pushed)
	snap, err := e.store.Get(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, false)
	require.NoError(t, err)
	assert.Len(t, snap.Checksums, 70, "the server kept them")

	// Held again next round; confirmed, they go.
	res, err = c.Sync(ctx, &st)
	require.NoError(t, err)
	require.Len(t, res.Held, 1)
	confirmed := newClient(t, e, dir, func(cfg *teammem.Options) { cfg.AllowMassDelete = true })
	res, err = confirmed.Sync(ctx, &st)
	require.NoError(t, err)
	assert.Empty(t, res.Held)
	assert.Len(t, res.DeletedRemote, 51)
}

func TestTLSFailureSaysWhatIsWrong(t *testing.T) {
	srv := httptest.NewTLSServer(nil)
	t.Cleanup(srv.Close)
	c := newClient(t, syncEnv{url: srv.URL, token: "t"}, t.TempDir(), nil)
	_, err := c.Pull(context.Background(), &teammem.SyncState{})
	var se *teammem.SyncError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, teammem.ClassTLS, se.Class)
	assert.True(t, se.Permanent())
	assert.Contains(t, err.Error(), "signed by an authority this machine does not trust")
	assert.Equal(t, 1, se.Attempts, "not retried")

	// http:// spoken to a TLS server, and the reverse.
	plain := startServer(t, 10)
	c = newClient(t, syncEnv{url: "https" + plain.url[len("http"):], token: plain.token}, t.TempDir(), nil)
	_, err = c.Pull(context.Background(), &teammem.SyncState{})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassTLS, se.Class, "%v", err)
}

func TestRestoreRefusesADeletion(t *testing.T) {
	e := startServer(t, 10)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"x.md": "the text"})
	c := newClient(t, e, dir, nil)
	ctx := context.Background()
	var st teammem.SyncState
	_, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "x.md")))
	_, err = c.Sync(ctx, &st)
	require.NoError(t, err)
	hv, err := c.History(ctx, "x.md", 0)
	require.NoError(t, err)
	require.Len(t, hv.Versions, 2)
	require.True(t, hv.Versions[0].Deleted)

	_, err = c.Restore(ctx, "x.md", hv.Versions[0].Version)
	var dv *teammem.DeletionVersionError
	require.ErrorAs(t, err, &dv)
	assert.Equal(t, hv.Versions[1].Version, dv.LastWithContent)
	after, err := c.History(ctx, "x.md", 0)
	require.NoError(t, err)
	assert.Len(t, after.Versions, 2, "nothing written")

	v, err := c.Restore(ctx, "x.md", dv.LastWithContent)
	require.NoError(t, err)
	rev, err := c.Revision(ctx, "x.md", v)
	require.NoError(t, err)
	assert.Equal(t, "the text", rev.Content)
}

// TestRestoredStoreWrittenBackToTheSameVersion: a backup restored, then a
// teammate's push brings the repo back to the version this directory saw,
// with other content. The client names the restore (it cannot tell it by
// the version alone) and deletes nothing on the base's word.
func TestRestoredStoreWrittenBackToTheSameVersion(t *testing.T) {
	e := startSwappable(t)
	live := teamserver.NewMemoryStore()
	e.swap(t, live)
	ctx := context.Background()
	ben := t.TempDir()
	writeFiles(t, ben, map[string]string{"a.md": "alpha", "bulk.md": "old"})
	var benState teammem.SyncState
	cb := newClient(t, e.syncEnv, ben, nil)
	_, err := cb.Sync(ctx, &benState)
	require.NoError(t, err)
	backup := teamserver.NewMemoryStore()
	_, err = backup.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"a.md": "alpha", "bulk.md": "old"}, Now: time.Now()})
	require.NoError(t, err)

	require.NoError(t, os.Remove(filepath.Join(ben, "bulk.md")))
	_, err = cb.Sync(ctx, &benState)
	require.NoError(t, err)
	seen := benState.Version

	e.swap(t, sameID{backup, live.ID()})
	ana := t.TempDir()
	var anaState teammem.SyncState
	ca := newClient(t, e.syncEnv, ana, nil)
	_, err = ca.Sync(ctx, &anaState)
	require.NoError(t, err)
	writeFiles(t, ana, map[string]string{"ana.md": "written after the restore"})
	_, err = ca.Sync(ctx, &anaState)
	require.NoError(t, err)
	require.Equal(t, seen, anaState.Version, "the restored repo is back at the version Ben saw")

	res, err := cb.Sync(ctx, &benState)
	require.NoError(t, err)
	assert.Contains(t, benState.Reset, "other content at version")
	assert.Empty(t, res.DeletedRemote, "nothing deleted on the server on the base's word")
	assert.Equal(t, "written after the restore", readFile(t, filepath.Join(ben, "ana.md")))
}

package teammem_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// teamControl acts on a real team server's store from outside the
// driver: a teammate's writes, an operator's backup, restore and
// replacement, and a store that loses a key without a record.
type teamControl struct {
	srv   *swappable
	store teamserver.Store
}

var acmeShop = teamserver.Repo{Tenant: "acme", Name: "acme/shop"}

func (c *teamControl) put(t testing.TB, req teamserver.PutRequest) {
	t.Helper()
	req.Author, req.Now = "teammate", time.Now()
	if _, err := c.store.Put(context.Background(), acmeShop, req); err != nil {
		t.Fatalf("control: %v", err)
	}
}

func (c *teamControl) Write(t testing.TB, path string, content []byte) {
	c.put(t, teamserver.PutRequest{Entries: map[string]string{path: string(content)}})
}

func (c *teamControl) Remove(t testing.TB, path string) {
	c.put(t, teamserver.PutRequest{Deletes: []string{path}})
}

func (c *teamControl) entries(t testing.TB) (map[string]string, int64) {
	t.Helper()
	snap, err := c.store.Get(context.Background(), acmeShop, true)
	if err != nil {
		return map[string]string{}, 0 // no repo yet
	}
	return snap.Entries, snap.Version
}

func (c *teamControl) Read(t testing.TB, path string) ([]byte, bool) {
	e, _ := c.entries(t)
	v, ok := e[path]
	return []byte(v), ok
}

// rebuild puts a store in the server's place holding entries, under the
// identity id ("" for a new one), at a version of at least minVersion
// (moved on by writing and deleting a dot-file no folder syncs).
func (c *teamControl) rebuild(t testing.TB, id string, entries map[string]string, minVersion int64) {
	t.Helper()
	var store teamserver.Store = teamserver.NewMemoryStore()
	if id != "" {
		store = sameID{Store: store, id: id}
	}
	c.store = store
	if len(entries) > 0 {
		c.put(t, teamserver.PutRequest{Entries: entries})
	}
	for _, v := c.entries(t); v < minVersion; _, v = c.entries(t) {
		c.put(t, teamserver.PutRequest{Entries: map[string]string{".bump": "x"}})
		c.put(t, teamserver.PutRequest{Deletes: []string{".bump"}})
	}
	c.srv.swap(t, store)
}

// Backup keeps the repo's content; the restore puts a store of the same
// identity back holding it, at the version one write makes (no later
// than the backup's).
func (c *teamControl) Backup(t testing.TB) func() {
	saved, _ := c.entries(t)
	id := c.store.ID()
	return func() { c.rebuild(t, id, saved, 0) }
}

func (c *teamControl) Replace(t testing.TB, files map[string][]byte) {
	entries := map[string]string{}
	for p, b := range files {
		entries[p] = string(b)
	}
	c.rebuild(t, "", entries, 0)
}

func (c *teamControl) Lose(t testing.TB, path string) {
	entries, version := c.entries(t)
	delete(entries, path)
	c.rebuild(t, c.store.ID(), entries, version+1)
}

func teamRemote(t *testing.T) (foldersync.Remote, remotetest.Control) {
	s := startSwappable(t)
	store := teamserver.NewMemoryStore()
	s.swap(t, store)
	r, err := teammem.NewRemote(teammem.Options{BaseURL: s.url, Repo: "acme/shop", Token: s.token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return r, &teamControl{srv: s, store: store}
}

// The team driver keeps the Remote contract, on a real team server.
func TestTeamRemoteConformance(t *testing.T) {
	remotetest.Run(t, teamRemote)
}

// The engine's rules hold through the team driver, on a real team
// server.
func TestTeamRemoteEngine(t *testing.T) {
	remotetest.RunEngine(t, teamRemote)
}

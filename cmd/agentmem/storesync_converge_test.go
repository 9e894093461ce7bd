package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/lib/environments"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// folderFiles reads the synced files of a folder (no dot names).
func folderFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out["/"+filepath.ToSlash(rel)] = string(raw)
		}
		return nil
	}))
	return out
}

// storeFiles reads the store's memories from a full export.
func storeFiles(t *testing.T, url, key string) map[string]string {
	t.Helper()
	code, _, body := storeHTTP(t, "GET", url+"/v1/code/memory/team-store/memories/export", key, false, nil)
	require.Equal(t, 200, code, string(body))
	mems, whole := readExport(body)
	require.True(t, whole)
	out := map[string]string{}
	for p, m := range mems {
		out[p] = m.Content
	}
	return out
}

// TestStoreSyncConvergence runs three agentmem clients and the official Go
// SDK's own directory sync (lib/environments) on one store of the built
// server: creates, edits, deletes, a delete against an edit, an edit
// against an edit, the server SIGKILLed in the middle of a push and
// restarted, and churn. At the end every folder equals the store, every
// owner's last write is there, and the losing side of the conflict is
// kept.
func TestStoreSyncConvergence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, key, _, _ := storeTokens(t, dir)
	db := filepath.Join(dir, "team.db")
	addr := freeAddr(t)
	url, srv := serveArgs(t, db, tokens, "--addr", addr)
	code, _, body := storeHTTP(t, "POST", url+"/v1/memory_stores", key, true, map[string]any{"name": "team-store"})
	require.Equal(t, 200, code, string(body))
	storeID := decodeJSON(t, body)["id"].(string)
	mounts, err := storesync.ParseMounts(`["/v1/code/memory/team-store"]`)
	require.NoError(t, err)
	now := time.Now()
	clock := func() time.Time { return now }
	ctx := context.Background()
	type agent struct {
		name string
		c    *storesync.Client
		dir  string
	}
	var agents []*agent
	for _, name := range []string{"ana", "ben", "cy"} {
		d := mounts[0].Dir(filepath.Join(dir, name))
		c, err := storesync.New(folderAt(afero.NewOsFs(), d), storesync.Options{BaseURL: url, Token: key, Mount: mounts[0], Now: clock, Retries: -1})
		require.NoError(t, err)
		agents = append(agents, &agent{name, c, d})
	}
	round := func() {
		t.Helper()
		for _, a := range agents {
			_, err := a.c.Sync(ctx)
			require.NoError(t, err, a.name)
		}
	}
	ana, ben, cy := agents[0], agents[1], agents[2]
	round() // mount the store in every folder
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		writeFile(t, ana.dir, n+".md", "first "+n)
	}
	round()

	// The SDK's client, as a session would use it.
	sdkDir := filepath.Join(dir, "sdk", "memory")
	sdk, err := environments.NewSessionMemoryStores(anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey(key)),
		environments.SessionMemoryStoresOptions{Workdir: dir, SyncInterval: environments.MinMemorySyncInterval,
			Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	var session anthropic.BetaManagedAgentsSession
	require.NoError(t, json.Unmarshal(fmt.Appendf(nil, `{"id":"sesn_1","type":"session","resources":[{"type":"memory_store","memory_store_id":%q,"mount_path":%q}]}`, storeID, sdkDir), &session))
	require.NoError(t, sdk.Download(ctx, &session))
	sdkSynced := time.Now()
	sdkRound := func() {
		time.Sleep(time.Until(sdkSynced.Add(environments.MinMemorySyncInterval + 100*time.Millisecond)))
		sdk.SyncIfDue(ctx)
		sdkSynced = time.Now()
	}
	assert.Equal(t, storeFiles(t, url, key), folderFiles(t, sdkDir), "the SDK downloaded the store")

	// Edits, a delete against an edit (the edit wins), an SDK edit.
	writeFile(t, ben.dir, "a.md", "ben's a")
	require.NoError(t, os.Remove(filepath.Join(cy.dir, "b.md")))
	writeFile(t, ana.dir, "b.md", "ana's b")
	writeFile(t, sdkDir, "c.md", "the SDK's c")
	_, err = ana.c.Sync(ctx)
	require.NoError(t, err)
	sdkRound()
	now = now.Add(31 * time.Second)
	round()
	round()
	assert.Equal(t, "ana's b", readFile(t, cy.dir, "b.md"), "an edit beats a deletion")
	assert.Equal(t, "the SDK's c", readFile(t, ana.dir, "c.md"))

	// An edit against an edit: the store's version takes the file, the
	// other is kept.
	writeFile(t, ana.dir, "d.md", "ana's d")
	writeFile(t, ben.dir, "d.md", "ben's d")
	_, err = ana.c.Sync(ctx)
	require.NoError(t, err)
	res, err := ben.c.Sync(ctx)
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)
	kept, err := os.ReadFile(res.Conflicts[0].SavedAs)
	require.NoError(t, err)
	assert.Equal(t, "ben's d", string(kept))

	// The server is killed in the middle of a push, then restarted on the
	// same database and address.
	for i := range 40 {
		writeFile(t, cy.dir, fmt.Sprintf("bulk/%02d.md", i), fmt.Sprintf("bulk %d", i))
	}
	done := make(chan error, 1)
	go func() { _, err := cy.c.Sync(ctx); done <- err }()
	time.Sleep(30 * time.Millisecond)
	require.NoError(t, srv.Process.Signal(syscall.SIGKILL))
	_ = srv.Wait()
	t.Logf("the sync cut by SIGKILL ended with: %v", <-done)
	url2, _ := serveArgs(t, db, tokens, "--addr", addr)
	require.Equal(t, url, url2)
	round()

	// Churn: each agent rewrites, creates and deletes its own files.
	rng := rand.New(rand.NewPCG(1, 2))
	last := map[string]string{} // path -> the owner's last content ("" = deleted)
	for step := range 6 {
		for _, a := range agents {
			for k := range 3 {
				p := fmt.Sprintf("/%s/%d.md", a.name, rng.IntN(5))
				if rng.IntN(4) == 0 && last[p] != "" {
					require.NoError(t, os.Remove(filepath.Join(a.dir, filepath.FromSlash(p[1:]))))
					last[p] = ""
					continue
				}
				content := fmt.Sprintf("%s step %d write %d", a.name, step, k)
				writeFile(t, a.dir, p[1:], content)
				last[p] = content
			}
		}
		now = now.Add(31 * time.Second)
		round()
		if step%3 == 2 {
			sdkRound()
		}
	}

	// Quiesce, and the SDK's last sync.
	for range 3 {
		now = now.Add(31 * time.Second)
		round()
	}
	sdkRound()
	sdk.Finish(ctx)
	for range 2 {
		now = now.Add(31 * time.Second)
		round()
	}
	want := storeFiles(t, url, key)
	for p, content := range last {
		if content == "" {
			assert.NotContains(t, want, p, "%s was deleted by its owner", p)
		} else {
			assert.Equal(t, content, want[p], "%s holds its owner's last write", p)
		}
	}
	for i := range 40 {
		assert.Equal(t, fmt.Sprintf("bulk %d", i), want[fmt.Sprintf("/bulk/%02d.md", i)], "the push cut by SIGKILL completed later")
	}
	assert.Equal(t, "ana's d", want["/d.md"])
	for _, a := range agents {
		assert.Equal(t, want, folderFiles(t, a.dir), "%s equals the store", a.name)
	}
	assert.Equal(t, want, folderFiles(t, sdkDir), "the SDK's folder equals the store")
}

package storesync_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// authorsFixture is one store on an in-process server whose tokens are
// named after the teammates who hold them: the author of their writes.
type authorsFixture struct {
	t      *testing.T
	url    string
	tokens map[string]string
	id     string
	mount  storesync.Mount
	ids    map[string]string // path to memory ID, of the memories write made
}

func newAuthorsFixture(t *testing.T, names ...string) *authorsFixture {
	t.Helper()
	f := &authorsFixture{t: t, tokens: map[string]string{}, ids: map[string]string{}}
	var grants []teamserver.TokenGrant
	for _, name := range names {
		tok, g, err := teamserver.NewToken("acme", nil, "*")
		require.NoError(t, err)
		g.Name = name
		grants = append(grants, g)
		f.tokens[name] = tok
	}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: grants, RatePerToken: -1})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	mounts, err := storesync.ParseMounts(`[{"path": "/v1/code/memory/team-store", "mount": "proj"}]`)
	require.NoError(t, err)
	f.mount = mounts[0]
	f.id = createStore(t, f.url, f.tokens[names[0]], "team-store")
	return f
}

// versionRequests counts a client's requests for memory versions: pages
// of the store's versions and lookups of one memory's. before, when set,
// runs before a request for versions is sent (the store moving on after
// a round); none answers them 404, as a server without the versions API.
type versionRequests struct {
	pages, lookups atomic.Int64
	before         func()
	none           bool
}

func (v *versionRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/memory_versions") {
		if r.URL.Query().Has("memory_id") {
			v.lookups.Add(1)
		} else {
			v.pages.Add(1)
		}
		if v.before != nil {
			before := v.before
			v.before = nil
			before()
		}
		if v.none {
			rec := httptest.NewRecorder()
			http.NotFound(rec, r)
			return rec.Result(), nil
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// counts returns the pages and lookups since the last call.
func (v *versionRequests) counts() (pages, lookups int64) {
	return v.pages.Swap(0), v.lookups.Swap(0)
}

// client opens the folder of a teammate who syncs with the token of
// author, and runs its first round (counted).
func (f *authorsFixture) client(name, author string) (*storesync.Client, string, *versionRequests) {
	f.t.Helper()
	dir := f.mount.Dir(filepath.Join(f.t.TempDir(), name))
	count := &versionRequests{}
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(f.t, err)
	c, err := storesync.New(d, storesync.Options{BaseURL: f.url, Token: f.tokens[author], Mount: f.mount,
		HTTP: &http.Client{Transport: count, Timeout: time.Minute}})
	require.NoError(f.t, err)
	syncOK(f.t, c)
	return c, dir, count
}

// write writes path p's content in the store as author, through the
// public API (creating the memory when it is new), and returns the
// memory's ID.
func (f *authorsFixture) write(author, p, content string) string {
	f.t.Helper()
	base := f.url + storewire.StoresPath + "/" + f.id
	id, ok := f.ids[p]
	if !ok {
		id = f.memoryID(author, p)
	}
	if id != "" {
		code, out := apiCall(f.t, http.MethodPost, base+"/memories/"+id, f.tokens[author], storewire.UpdateMemory{Content: &content})
		require.Equal(f.t, http.StatusOK, code, string(out))
		return id
	}
	code, out := apiCall(f.t, http.MethodPost, base+"/memories", f.tokens[author], storewire.CreateMemory{Path: p, Content: &content})
	require.Equal(f.t, http.StatusOK, code, string(out))
	var m storewire.Memory
	require.NoError(f.t, json.Unmarshal(out, &m))
	f.ids[p] = m.ID
	return m.ID
}

// memoryID is the ID of the memory at path p ("" when there is none).
func (f *authorsFixture) memoryID(author, p string) string {
	f.t.Helper()
	page := ""
	for {
		code, out := apiCall(f.t, http.MethodGet, f.url+storewire.StoresPath+"/"+f.id+"/memories?limit=100&view=basic&page="+page, f.tokens[author], nil)
		require.Equal(f.t, http.StatusOK, code, string(out))
		var data []storewire.Memory
		reply := storewire.Page{Data: &data}
		require.NoError(f.t, json.Unmarshal(out, &reply))
		for _, m := range data {
			if m.Path == p {
				return m.ID
			}
		}
		if reply.NextPage == nil {
			return ""
		}
		page = *reply.NextPage
	}
}

// authors is who the folder's authors file says wrote each memory.
func authors(dir string) map[string]string {
	out := map[string]string{}
	for p, a := range storesync.Attributions(afero.NewOsFs(), dir) {
		out[p] = a.Author
	}
	return out
}

// A fresh folder of more memories than a page of versions holds learns
// every author by paging the store's versions, about one request per
// hundred memories; the next unchanged round asks for none.
func TestStoreAuthorsArePagedNotLookedUpOneByOne(t *testing.T) {
	const n = 250
	f := newAuthorsFixture(t, "ana")
	c, dir, count := f.client("ana", "ana")
	want := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("m%03d.md", i)
		writeFile(t, dir, name, fmt.Sprintf("memory %d\n", i))
		want[name] = "ana"
	}
	assert.Len(t, syncOK(t, c).Pushed, n)
	assert.Equal(t, want, authors(dir))
	pages, lookups := count.counts()
	assert.Equal(t, int64(n/100+1), pages, "one page of 100 versions after another")
	assert.Zero(t, lookups)
	for p, a := range storesync.Attributions(afero.NewOsFs(), dir) {
		assert.WithinDuration(t, time.Now(), a.Time, time.Hour, p)
	}

	syncOK(t, c)
	pages, lookups = count.counts()
	assert.Zero(t, pages+lookups, "an unchanged round asks for no versions")

	// One changed memory is looked up on its own.
	writeFile(t, dir, "m007.md", "changed\n")
	syncOK(t, c)
	pages, lookups = count.counts()
	assert.Equal(t, [2]int64{0, 1}, [2]int64{pages, lookups})
	assert.Equal(t, want, authors(dir))
}

// Memories written by a teammate are credited to the teammate, one's own
// to oneself; a memory another teammate changed after the round (between the
// round's listing and its look at the versions) is credited to no one
// until the round that pulls the change, whether the authors are paged
// (many new memories) or looked up one by one (a few).
func TestStoreAuthorsOfTwoWriters(t *testing.T) {
	for _, many := range []bool{false, true} {
		t.Run(map[bool]string{false: "few", true: "many"}[many], func(t *testing.T) {
			f := newAuthorsFixture(t, "ana", "ben", "cleo")
			a, aDir, aCount := f.client("ana", "ana")
			b, bDir, _ := f.client("ben", "ben")
			n := 2
			if many {
				n = 8
			}
			want := map[string]string{}
			for i := range n {
				writeFile(t, aDir, fmt.Sprintf("ana%d.md", i), fmt.Sprintf("by ana %d\n", i))
				writeFile(t, bDir, fmt.Sprintf("ben%d.md", i), fmt.Sprintf("by ben %d\n", i))
				want[fmt.Sprintf("ana%d.md", i)] = "ana"
				want[fmt.Sprintf("ben%d.md", i)] = "ben"
			}
			syncOK(t, a)
			assert.Equal(t, map[string]string{"ana0.md": "ana", "ana1.md": "ana"}, pick(authors(aDir), "ana0.md", "ana1.md"))
			syncOK(t, b)
			assert.Equal(t, want, authors(bDir), "ben learns ana's too")

			// ben's memories reach ana; before ana looks at the versions,
			// cleo changes one of them.
			aCount.counts()
			aCount.before = func() { f.write("cleo", "/ben0.md", "cleo's\n") }
			res := syncOK(t, a)
			assert.Len(t, res.Pulled, n)
			assert.Equal(t, "by ben 0\n", readFile(t, aDir, "ben0.md"))
			got := authors(aDir)
			assert.NotContains(t, got, "ben0.md", "its newest version is not the content the round pulled")
			delete(want, "ben0.md")
			assert.Equal(t, want, got)
			pages, lookups := aCount.counts()
			if many {
				assert.Equal(t, [2]int64{1, 0}, [2]int64{pages, lookups})
			} else {
				assert.Equal(t, [2]int64{0, int64(n)}, [2]int64{pages, lookups})
			}

			// The round that pulls the change credits it.
			res = syncOK(t, a)
			assert.Equal(t, []string{"/ben0.md"}, res.Pulled)
			want["ben0.md"] = "cleo"
			assert.Equal(t, want, authors(aDir))
			pages, lookups = aCount.counts()
			assert.Equal(t, [2]int64{0, 1}, [2]int64{pages, lookups})
			syncOK(t, a)
			pages, lookups = aCount.counts()
			assert.Zero(t, pages+lookups)
		})
	}
}

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// A folder joining a store whose newest versions are all of other
// memories (deeper than a round's pages reach) learns the authors of the
// rest one by one over the next rounds, never wrongly, without listing
// the same pages again.
func TestStoreAuthorsBelowDeepHistory(t *testing.T) {
	const old = 120
	f := newAuthorsFixture(t, "ana", "ben")
	want := map[string]string{}
	for i := range old {
		f.write("ana", fmt.Sprintf("/m%03d.md", i), fmt.Sprintf("memory %d\n", i))
		want[fmt.Sprintf("m%03d.md", i)] = "ana"
	}
	f.write("ben", "/m005.md", "ben's take\n")
	want["m005.md"] = "ben"
	for i := range 2_600 { // 26 pages of versions above the others
		f.write("ben", "/churn.md", fmt.Sprintf("churn %d\n", i))
	}
	want["churn.md"] = "ben"

	c, dir, count := f.client("cleo", "ana")
	pages, lookups := count.counts()
	assert.Equal(t, [2]int64{25, 50}, [2]int64{pages, lookups}, "the page budget, then lookups")
	got := authors(dir)
	assert.Len(t, got, 51)
	assert.Subset(t, want, got)

	syncOK(t, c)
	pages, lookups = count.counts()
	assert.Equal(t, [2]int64{0, 50}, [2]int64{pages, lookups}, "the memories left are looked up, not paged for")
	got = authors(dir)
	assert.Len(t, got, 101)
	assert.Subset(t, want, got)

	// One not attributed yet changes: the round that pulls it credits
	// the new author.
	var left string
	for p := range want {
		if _, ok := got[p]; !ok {
			left = p
			break
		}
	}
	require.NotEmpty(t, left)
	f.write("ben", "/"+left, "ben changed it\n")
	want[left] = "ben"
	assert.Equal(t, []string{"/" + left}, syncOK(t, c).Pulled)
	assert.Equal(t, want, authors(dir))
	pages, lookups = count.counts()
	assert.Equal(t, [2]int64{0, old + 1 - 101}, [2]int64{pages, lookups})

	syncOK(t, c)
	pages, lookups = count.counts()
	assert.Zero(t, pages+lookups)
}

// A memory whose newest version was redacted is attributed to no one,
// for good (until it is written again), whether looked up or paged for.
func TestStoreAuthorsOfARedactedVersion(t *testing.T) {
	for _, n := range []int{1, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := newAuthorsFixture(t, "ana", "ben")
			a, aDir, count := f.client("ana", "ana")
			for i := range n {
				writeFile(t, aDir, fmt.Sprintf("r%d.md", i), "ana's\n")
			}
			syncOK(t, a)
			var redacted string
			for i := range n {
				id := f.write("ben", fmt.Sprintf("/r%d.md", i), "ben's\n")
				if i == 0 {
					code, out := apiCall(t, http.MethodGet, f.url+storewire.StoresPath+"/"+f.id+"/memory_versions?limit=1&memory_id="+id, f.tokens["ben"], nil)
					require.Equal(t, http.StatusOK, code, string(out))
					var data []storewire.Version
					require.NoError(t, json.Unmarshal(out, &storewire.Page{Data: &data}))
					require.Len(t, data, 1)
					redacted = data[0].ID
				}
			}
			code, out := apiCall(t, http.MethodPost, f.url+storewire.StoresPath+"/"+f.id+"/memory_versions/"+redacted+"/redact", f.tokens["ben"], nil)
			require.Equal(t, http.StatusOK, code, string(out))

			count.counts()
			assert.Len(t, syncOK(t, a).Pulled, n)
			got := authors(aDir)
			assert.NotContains(t, got, "r0.md")
			for i := 1; i < n; i++ {
				assert.Equal(t, "ben", got[fmt.Sprintf("r%d.md", i)])
			}
			count.counts()
			syncOK(t, a)
			pages, lookups := count.counts()
			assert.Zero(t, pages+lookups, "settled: nothing to ask again")
			writeFile(t, aDir, "new.md", "another memory\n")
			syncOK(t, a)
			pages, lookups = count.counts()
			assert.Equal(t, [2]int64{0, 1}, [2]int64{pages, lookups}, "the new memory's author, not r0.md's again")
			got = authors(aDir)
			assert.NotContains(t, got, "r0.md")
			assert.Equal(t, "ana", got["new.md"])
		})
	}
}

// A server without the versions API is asked once, and the memories
// stay unattributed.
func TestStoreAuthorsWithoutVersions(t *testing.T) {
	f := newAuthorsFixture(t, "ana")
	a, aDir, count := f.client("ana", "ana")
	count.none = true
	for i := range 10 {
		writeFile(t, aDir, fmt.Sprintf("m%d.md", i), "a memory\n")
	}
	syncOK(t, a)
	assert.Empty(t, authors(aDir))
	pages, lookups := count.counts()
	assert.Equal(t, int64(1), pages+lookups)
	syncOK(t, a)
	pages, lookups = count.counts()
	assert.Zero(t, pages+lookups)
}

// A folder kept in step only by the watcher learns its authors too: each
// of the watcher's rounds is Sync's.
func TestStoreWatcherLearnsAuthors(t *testing.T) {
	f := newAuthorsFixture(t, "ana")
	c, dir, _ := f.client("ana", "ana")
	want := map[string]string{}
	for i := range 120 {
		name := fmt.Sprintf("w%03d.md", i)
		writeFile(t, dir, name, fmt.Sprintf("watched %d\n", i))
		want[name] = "ana"
	}
	w, err := c.StartWatcher(context.Background(), foldersync.WatchOptions{Debounce: 50 * time.Millisecond, Poll: 50 * time.Millisecond})
	require.NoError(t, err)
	defer w.Close()
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, authors(dir)) }, 20*time.Second, 50*time.Millisecond, "the watcher's first round credits every memory")

	writeFile(t, dir, "w200.md", "written while watched\n")
	want["w200.md"] = "ana"
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, authors(dir)) }, 20*time.Second, 50*time.Millisecond, "a later round credits a new memory")
}

// revoking answers 401 to every request once revoked is set, as a store
// whose token was revoked does.
type revoking struct {
	revoked atomic.Bool
	calls   atomic.Int64
}

func (r *revoking) RoundTrip(req *http.Request) (*http.Response, error) {
	r.calls.Add(1)
	if r.revoked.Load() {
		body := `{"type":"error","error":{"type":"authentication_error","message":"invalid token"}}`
		return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestStoreWatcherPausesOnARevokedToken: a store watcher whose token is
// revoked pauses after the failing round, as team sync's does, instead of
// retrying forever; Resume tries again.
func TestStoreWatcherPausesOnARevokedToken(t *testing.T) {
	f := newAuthorsFixture(t, "ana")
	rt := &revoking{}
	dir := f.mount.Dir(filepath.Join(t.TempDir(), "ana"))
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	c, err := storesync.New(d, storesync.Options{BaseURL: f.url, Token: f.tokens["ana"], Mount: f.mount, HTTP: &http.Client{Transport: rt}})
	require.NoError(t, err)
	w, err := c.StartWatcher(context.Background(), foldersync.WatchOptions{Debounce: 20 * time.Millisecond, Poll: 20 * time.Millisecond, Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	defer w.Close()
	rt.revoked.Store(true)
	writeFile(t, dir, "after.md", "written after the revocation\n")
	require.Eventually(t, func() bool { return w.Paused() != "" }, 10*time.Second, 20*time.Millisecond, "the watcher pauses")
	assert.Contains(t, w.Paused(), "authentication_error")
	n := rt.calls.Load()
	time.Sleep(500 * time.Millisecond) // ten intervals
	assert.Equal(t, n, rt.calls.Load(), "a paused watcher sends nothing")
	rt.revoked.Store(false)
	w.Resume()
	assert.Eventually(t, func() bool { return w.Paused() == "" && rt.calls.Load() > n }, 10*time.Second, 20*time.Millisecond, "Resume tries again")
}

// TestAFullDiskIsNotRetried: a store's 507 (its disk is full) is not
// mended by a retry, so it is said at once and pauses a watcher; a 503 or
// a 429 is retried.
func TestAFullDiskIsNotRetried(t *testing.T) {
	for status, temporary := range map[int]bool{507: false, 503: true, 500: true, 429: true, 401: false} {
		assert.Equal(t, temporary, !(&storesync.APIError{Status: status}).Permanent(), "%d", status)
	}
}

// storeControl acts on a store as a teammate's client would, through a
// driver of its own.
type storeControl struct{ r *storesync.Remote }

func (c storeControl) current(t testing.TB, p string) (foldersync.Entry, bool) {
	t.Helper()
	l, err := c.r.List(context.Background(), foldersync.Listing{})
	require.NoError(t, err)
	e, ok := l.Entries[p]
	return e, ok
}

func (c storeControl) apply(t testing.TB, ch foldersync.Change) {
	t.Helper()
	outs, err := c.r.Apply(context.Background(), []foldersync.Change{ch})
	require.NoError(t, err)
	require.Len(t, outs, 1)
	require.Equal(t, foldersync.Applied, outs[0].Status, "%s: %s", ch.Path, outs[0].Reason)
}

func (c storeControl) Write(t testing.TB, p string, content []byte) {
	e, _ := c.current(t, p)
	c.apply(t, foldersync.Change{Path: p, Content: content, Expect: e})
}

func (c storeControl) Remove(t testing.TB, p string) {
	if e, ok := c.current(t, p); ok {
		c.apply(t, foldersync.Change{Path: p, Delete: true, Expect: e})
	}
}

func (c storeControl) Read(t testing.TB, p string) ([]byte, bool) {
	if _, ok := c.current(t, p); !ok {
		return nil, false
	}
	got, err := c.r.Get(context.Background(), []string{p})
	require.NoError(t, err)
	b, ok := got[p]
	return b, ok
}

// inProcessServer starts agentmem's server over the in-memory store and
// returns its URL and a token that reaches every store of its
// organization.
func inProcessServer(t testing.TB) (url, token string) {
	t.Helper()
	tok, g, err := teamserver.NewToken("acme", nil, "*")
	require.NoError(t, err)
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{g}, RatePerToken: -1})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, tok
}

// apiCall sends one request to the Memory Stores API as an SDK does
// (x-api-key) and returns the status and body.
func apiCall(t testing.TB, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	req.Header.Set(storewire.APIKeyHeader, token)
	req.Header.Set(storewire.VersionHeader, storewire.APIVersion)
	req.Header.Set(storewire.BetaHeader, storewire.Beta)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// createStore makes a store named name and returns its ID.
func createStore(t testing.TB, url, token, name string) string {
	t.Helper()
	code, out := apiCall(t, http.MethodPost, url+storewire.StoresPath, token, map[string]string{"name": name})
	require.Equal(t, http.StatusOK, code, string(out))
	var st struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(out, &st))
	return st.ID
}

// storeFactory makes a fresh store on one in-process server per call,
// reached by the route given: Claude Code's (/v1/code/memory/NAME) or the
// public one (/v1/memory_stores/ID); the driver under test uses hc.
func storeFactory(t *testing.T, public bool, hc *http.Client) remotetest.Factory {
	url, token := inProcessServer(t)
	var n atomic.Int64
	return func(t *testing.T) (foldersync.Remote, remotetest.Control) {
		name := fmt.Sprintf("conformance-%d", n.Add(1))
		id := createStore(t, url, token, name)
		path := storewire.CodeStorePrefix + name
		if public {
			path = storewire.StoresPath + "/" + id
		}
		mk := func(hc *http.Client) *storesync.Remote {
			r, err := storesync.NewRemote(storesync.Options{BaseURL: url, Token: token, Mount: storesync.Mount{Path: path}, Retries: -1, HTTP: hc})
			require.NoError(t, err)
			return r
		}
		return mk(hc), storeControl{mk(nil)}
	}
}

func routeName(public bool) string {
	if public {
		return "public-route"
	}
	return "code-route"
}

// TestStoresDriver runs the drivers' conformance kit and the engine's
// own tests through the Memory Stores driver, on both routes.
func TestStoresDriver(t *testing.T) {
	for _, public := range []bool{false, true} {
		t.Run(routeName(public), func(t *testing.T) {
			f := storeFactory(t, public, nil)
			t.Run("Conformance", func(t *testing.T) { remotetest.Run(t, f) })
			t.Run("Engine", func(t *testing.T) { remotetest.RunEngine(t, f) })
		})
	}
}

// TestStoresDriverListsAnUnchangedStoreCheaply: agentmem's server
// answers a listing that names the store's ID and generation seen last
// with 304, so an unchanged round does not list every memory again.
func TestStoresDriverListsAnUnchangedStoreCheaply(t *testing.T) {
	for _, public := range []bool{false, true} {
		t.Run(routeName(public), func(t *testing.T) {
			recv := &receivedBytes{}
			r, ctl := storeFactory(t, public, &http.Client{Transport: recv})(t)
			for i := range 50 {
				ctl.Write(t, fmt.Sprintf("m%02d.md", i), []byte("a memory among fifty\n"))
			}
			ctl.Write(t, "a.md", []byte("a\n"))
			ctx := context.Background()
			recv.n.Store(0)
			first, err := r.List(ctx, foldersync.Listing{})
			require.NoError(t, err)
			require.NotEmpty(t, first.Tag)
			full := recv.n.Load()
			again, err := r.List(ctx, first)
			require.NoError(t, err)
			require.True(t, again.Unchanged, "an unchanged store was listed again")
			require.Less(t, recv.n.Load()-full, full/10, "the unchanged listing received %d bytes, the full one %d", recv.n.Load()-full, full)
			require.Equal(t, first.Entries, again.Entries)
			got, err := r.Get(ctx, []string{"a.md"})
			require.NoError(t, err)
			require.Equal(t, "a\n", string(got["a.md"]), "a fetch after an unchanged listing")
			ctl.Write(t, "a.md", []byte("a2\n"))
			moved, err := r.List(ctx, first)
			require.NoError(t, err)
			require.False(t, moved.Unchanged)
			require.Equal(t, foldersync.Sum([]byte("a2\n")), moved.Entries["a.md"].Sum)
		})
	}
}

// receivedBytes counts the bytes of the responses' bodies.
type receivedBytes struct{ n atomic.Int64 }

func (c *receivedBytes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{resp.Body, &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

package storesync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

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

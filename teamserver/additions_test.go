package teamserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeysThatCannotCoexistAreRefused(t *testing.T) {
	f := newServer(t, func(c *teamserver.Options) { c.MaxEntries = 100 })
	put := func(entries map[string]string) (*http.Response, teamwire.ErrorBody) {
		resp, body := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: entries}, nil)
		var eb teamwire.ErrorBody
		_ = json.Unmarshal(body, &eb)
		return resp, eb
	}
	resp, _ := put(map[string]string{"fd.md": "file", "ok.md": "ok"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for name, entries := range map[string]map[string]string{
		"below a file":        {"fd.md/child.md": "x"},
		"above a folder":      {"notes.md": "x", "notes.md/a.md": "y"},
		"case only":           {"OK.md": "x"},
		"in one request":      {"a/b.md": "x", "a": "y"},
		"differ in case here": {"Readme.md": "x", "README.md": "y"},
	} {
		resp, eb := put(entries)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, name)
		assert.Equal(t, teamwire.CodeKeyConflict, eb.Error.Details.ErrorCode, name)
		assert.NotEmpty(t, eb.Error.Details.Keys, name)
	}
	resp, eb := put(map[string]string{"cafe\u0301.md": "not NFC"})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, teamwire.CodeKeyNotNFC, eb.Error.Details.ErrorCode)
	resp, _ = put(map[string]string{"notes/a.md": "fine", "fd2.md": "fine"})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "keys that can coexist are accepted")
	snap, err := f.store.Get(t.Context(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"fd.md": "file", "ok.md": "ok", "notes/a.md": "fine", "fd2.md": "fine"}, snap.Entries, "refused requests wrote nothing")
}

func TestLimitsView(t *testing.T) {
	f := newServer(t, func(c *teamserver.Options) { c.MaxEntries = 50 })
	resp, body := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=limits", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var lv teamwire.LimitsView
	require.NoError(t, json.Unmarshal(body, &lv))
	assert.Equal(t, teamwire.LimitsView{MaxEntries: 50, MaxEntryBytes: teamwire.MaxEntryBytes, MaxBodyBytes: 1 << 20, MaxRepoBytes: 50 * teamwire.MaxEntryBytes}, lv)
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=nonsense", nil, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// The hashes view answers a client that already holds the repo's
// checksums with 304 and no body.
func TestHashesViewNotModified(t *testing.T) {
	f := newServer(t, nil)
	resp, _ := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	etag := resp.Header.Get("ETag")
	resp, body := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes", nil, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)
	assert.Empty(t, body)
	resp, body = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes", nil, map[string]string{"If-None-Match": `"sha256:other"`})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "entryChecksums")
}

func TestLongPoll(t *testing.T) {
	f := newServer(t, func(c *teamserver.Options) { c.PollEvery = time.Hour }) // only this server's writes wake it
	resp, _ := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	etag := resp.Header.Get("ETag")

	// Nothing changes: 304 after the wait.
	start := time.Now()
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes&wait=1", nil, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)

	// A write wakes the waiter at once.
	var wg sync.WaitGroup
	var got *http.Response
	var body []byte
	start = time.Now()
	wg.Go(func() {
		got, body = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes&wait=30", nil, map[string]string{"If-None-Match": etag})
	})
	time.Sleep(200 * time.Millisecond)
	resp, _ = f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"b.md": "2"}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	wg.Wait()
	assert.Equal(t, http.StatusOK, got.StatusCode)
	assert.Less(t, time.Since(start), 5*time.Second, "woken by the write, not by the 30 s wait")
	var hv teamwire.HashesView
	require.NoError(t, json.Unmarshal(body, &hv))
	assert.Contains(t, hv.EntryChecksums, "b.md")

	// A stale tag answers at once; a bad wait is refused.
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes&wait=30", nil, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes&wait=999", nil, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestLongPollSeesAnotherServersWrite(t *testing.T) {
	// A write straight into the store stands for another server on the
	// same database: this server learns of it by re-reading the store.
	f := newServer(t, func(c *teamserver.Options) { c.PollEvery = 50 * time.Millisecond })
	resp, _ := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
	etag := resp.Header.Get("ETag")
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		r, _ := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes&wait=30", nil, map[string]string{"If-None-Match": etag})
		done <- r.StatusCode
	}()
	time.Sleep(100 * time.Millisecond)
	_, err := f.store.Put(t.Context(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"b.md": "2"}, Now: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, <-done)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestHistoryAndLogViews(t *testing.T) {
	alice, aliceGrant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	aliceGrant.Name = "alice"
	f := newServer(t, func(c *teamserver.Options) { c.Tokens = append(c.Tokens, aliceGrant) })
	put := func(token string, body teamwire.PutBody, ifMatch string) *http.Response {
		h := map[string]string{}
		if ifMatch != "" {
			h["If-Match"] = ifMatch
		}
		resp, _ := f.do(t, http.MethodPut, token, "acme/shop", "", body, h)
		return resp
	}
	require.Equal(t, http.StatusOK, put(alice, teamwire.PutBody{Entries: map[string]string{"deploy.md": "Tuesdays"}}, "").StatusCode)
	require.Equal(t, http.StatusOK, put(f.acme, teamwire.PutBody{Entries: map[string]string{"deploy.md": "Fridays"}}, "").StatusCode)

	resp, body := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=history&key=deploy.md", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var hv teamwire.HistoryView
	require.NoError(t, json.Unmarshal(body, &hv))
	require.Len(t, hv.Versions, 2)
	assert.Equal(t, "alice", hv.Versions[1].Author, "the token's name")
	assert.Contains(t, hv.Versions[0].Author, "token:", "an unnamed token by its hash prefix")
	assert.NotContains(t, string(body), f.acme, "never the token")

	resp, body = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=history&key=deploy.md&version=1", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var rv teamwire.RevisionView
	require.NoError(t, json.Unmarshal(body, &rv))
	assert.Equal(t, teamwire.RevisionView{Key: "deploy.md", Version: 1, Content: "Tuesdays"}, rv)
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=history&key=deploy.md&version=9", nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=history&key=../x", nil, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	resp, body = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=log", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var log []teamwire.LogEntry
	require.NoError(t, json.Unmarshal(body, &log))
	require.Len(t, log, 2)
	assert.Equal(t, int64(2), log[0].Version)
	assert.Equal(t, []string{"deploy.md"}, log[1].Keys)
	resp, body = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=log&since=1", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.Unmarshal(body, &log))
	assert.Len(t, log, 1)

	// A restore is a conditional PUT of old content: a stale tag is 412.
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes", nil, nil)
	etag := resp.Header.Get("ETag")
	require.Equal(t, http.StatusOK, put(f.acme, teamwire.PutBody{Entries: map[string]string{"other.md": "x"}}, "").StatusCode)
	assert.Equal(t, http.StatusPreconditionFailed, put(f.acme, teamwire.PutBody{Entries: map[string]string{"deploy.md": rv.Content}}, etag).StatusCode)
}

func TestEmptyPutCreatesNoRepoAndReposAreBounded(t *testing.T) {
	f := newServer(t, func(c *teamserver.Options) { c.MaxRepos = 2 })
	resp, _ := f.do(t, http.MethodPut, f.acme, "acme/empty", "", teamwire.PutBody{Entries: map[string]string{}}, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/empty", "", nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "an empty PUT creates nothing")
	for _, r := range []string{"acme/one", "acme/two"} {
		resp, _ = f.do(t, http.MethodPut, f.acme, r, "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp, body := f.do(t, http.MethodPut, f.acme, "acme/three", "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), teamwire.CodeTooManyRepos)
}

func TestRateLimitPerToken(t *testing.T) {
	f := newServer(t, func(c *teamserver.Options) { c.RatePerToken, c.RateBurst = 1, 3 })
	codes := map[int]int{}
	var retryAfter string
	for range 6 {
		resp, _ := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=limits", nil, nil)
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			retryAfter = resp.Header.Get("Retry-After")
		}
	}
	assert.Equal(t, 3, codes[http.StatusOK], "the burst")
	assert.Equal(t, 3, codes[http.StatusTooManyRequests])
	assert.NotEmpty(t, retryAfter)
	resp, _ := f.do(t, http.MethodGet, f.globex, "globex/web", "&view=limits", nil, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another token has its own bucket")
}

// busyStore fails every call as a store that is out of connections.
type busyStore struct{ teamserver.Store }

func (busyStore) Get(context.Context, teamserver.Repo, bool) (teamserver.Snapshot, error) {
	return teamserver.Snapshot{}, teamserver.ErrOverloaded
}
func (busyStore) Head(context.Context, teamserver.Repo) (teamserver.Snapshot, error) {
	return teamserver.Snapshot{}, teamserver.ErrOverloaded
}
func (busyStore) Stream(context.Context, teamserver.Repo, func(teamserver.Snapshot) error, func(string, string) error) (teamserver.Snapshot, error) {
	return teamserver.Snapshot{}, teamserver.ErrOverloaded
}
func (busyStore) Put(context.Context, teamserver.Repo, teamserver.PutRequest) (teamserver.Snapshot, error) {
	return teamserver.Snapshot{}, teamserver.ErrOverloaded
}
func (busyStore) Ping(context.Context) error { return teamserver.ErrOverloaded }

func TestOverloadIs503NotA500(t *testing.T) {
	f := newServerOn(t, busyStore{teamserver.NewMemoryStore()}, nil)
	for _, q := range []string{"", "&view=hashes"} {
		resp, _ := f.do(t, http.MethodGet, f.acme, "acme/shop", q, nil, nil)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, q)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	}
	resp, _ := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	r, err := http.Get(f.srv.URL + teamserver.ReadyPath)
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, r.StatusCode)
	r, err = http.Get(f.srv.URL + teamserver.HealthPath)
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusOK, r.StatusCode, "alive, if not ready")
}

func TestHealthAndReady(t *testing.T) {
	f := newServer(t, nil)
	for _, p := range []string{teamserver.HealthPath, teamserver.ReadyPath} {
		r, err := http.Get(f.srv.URL + p)
		require.NoError(t, err)
		r.Body.Close()
		assert.Equal(t, http.StatusOK, r.StatusCode, p)
	}
}

func TestHashesViewCachedAndFresh(t *testing.T) {
	f := newServer(t, nil)
	hashes := func() teamwire.HashesView {
		resp, body := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes", nil, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var hv teamwire.HashesView
		require.NoError(t, json.Unmarshal(body, &hv))
		assert.Equal(t, `"`+hv.Checksum+`"`, resp.Header.Get("ETag"))
		return hv
	}
	f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
	first := hashes()
	assert.Equal(t, first, hashes(), "served from the cache")
	// A write through another server (straight into the store) is seen:
	// the cache is keyed by the version.
	_, err := f.store.Put(t.Context(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"b.md": "2"}, Now: time.Now()})
	require.NoError(t, err)
	second := hashes()
	assert.Contains(t, second.EntryChecksums, "b.md")
	assert.Equal(t, teamwire.RepoChecksum(second.EntryChecksums), second.Checksum)
}

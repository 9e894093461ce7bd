package server_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/teammem"
	"github.com/agentmem/agentmem/teammem/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeysThatCannotCoexistAreRefused(t *testing.T) {
	f := newServer(t, func(c *server.Config) { c.MaxEntries = 100 })
	put := func(entries map[string]string) (*http.Response, teammem.ErrorBody) {
		resp, body := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teammem.PutBody{Entries: entries}, nil)
		var eb teammem.ErrorBody
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
		assert.Equal(t, teammem.CodeKeyConflict, eb.Error.Details.ErrorCode, name)
		assert.NotEmpty(t, eb.Error.Details.Keys, name)
	}
	resp, eb := put(map[string]string{"cafe\u0301.md": "not NFC"})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, teammem.CodeKeyNotNFC, eb.Error.Details.ErrorCode)
	resp, _ = put(map[string]string{"notes/a.md": "fine", "fd2.md": "fine"})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "keys that can coexist are accepted")
	snap, err := f.store.Get(t.Context(), server.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"fd.md": "file", "ok.md": "ok", "notes/a.md": "fine", "fd2.md": "fine"}, snap.Entries, "refused requests wrote nothing")
}

func TestLimitsView(t *testing.T) {
	f := newServer(t, func(c *server.Config) { c.MaxEntries = 50 })
	resp, body := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=limits", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var lv teammem.LimitsView
	require.NoError(t, json.Unmarshal(body, &lv))
	assert.Equal(t, teammem.LimitsView{MaxEntries: 50, MaxEntryBytes: teammem.MaxEntryBytes, MaxBodyBytes: 1 << 20, MaxRepoBytes: 50 * teammem.MaxEntryBytes}, lv)
	resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=nonsense", nil, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestLongPoll(t *testing.T) {
	f := newServer(t, func(c *server.Config) { c.PollEvery = time.Hour }) // only this server's writes wake it
	resp, _ := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teammem.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
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
	resp, _ = f.do(t, http.MethodPut, f.acme, "acme/shop", "", teammem.PutBody{Entries: map[string]string{"b.md": "2"}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	wg.Wait()
	assert.Equal(t, http.StatusOK, got.StatusCode)
	assert.Less(t, time.Since(start), 5*time.Second, "woken by the write, not by the 30 s wait")
	var hv teammem.HashesView
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
	f := newServer(t, func(c *server.Config) { c.PollEvery = 50 * time.Millisecond })
	resp, _ := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teammem.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
	etag := resp.Header.Get("ETag")
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		r, _ := f.do(t, http.MethodGet, f.acme, "acme/shop", "&view=hashes&wait=30", nil, map[string]string{"If-None-Match": etag})
		done <- r.StatusCode
	}()
	time.Sleep(100 * time.Millisecond)
	_, err := f.store.Put(t.Context(), server.Repo{Tenant: "acme", Name: "acme/shop"}, server.PutRequest{Entries: map[string]string{"b.md": "2"}, Now: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, <-done)
	assert.Less(t, time.Since(start), 5*time.Second)
}

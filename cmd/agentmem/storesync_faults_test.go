package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultyProxy stands between a client and the built server and breaks
// answers as fault says: mode is read on every request.
func faultyProxy(t *testing.T, target string, fault *atomic.Value, hits *atomic.Int64) string {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode, _ := fault.Load().(string)
		export := strings.Contains(r.URL.Path, "/memories/export")
		switch {
		case mode == "500-once" && hits.Add(1) == 1:
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"type":"error","error":{"type":"api_error","message":"boom"}}`, http.StatusInternalServerError)
		case mode == "cut-export" && export:
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = w.Write([]byte(`{"type":"store","view":"basic"}` + "\n" + `{"type":"memory","id":"mem_x","path":"/a.md","content_sha256":"00"}` + "\n"))
		case mode == "bad-json" && export:
			_, _ = w.Write([]byte("{not json\n"))
		case mode == "no-export" && export:
			http.NotFound(w, r)
		case mode == "hostile" && strings.Contains(r.URL.Path, "/memories/mem_evil"):
			evilPath := map[bool]string{true: "/.memory-sync", false: "/../escape.md"}[strings.HasSuffix(r.URL.Path, "mem_evil1")]
			_, _ = w.Write([]byte(`{"id":"` + filepath.Base(r.URL.Path) + `","path":"` + evilPath + `","content":"x","content_sha256":"` + sha("x") + `"}`))
		case mode == "hostile" && export:
			rec := httptest.NewRecorder()
			forward.ServeHTTP(rec, r)
			lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
			evil := []string{
				`{"type":"memory","id":"mem_evil1","path":"/.memory-sync","content_sha256":"` + sha("x") + `","updated_at":"2026-12-01T00:00:00.000Z"}`,
				`{"type":"memory","id":"mem_evil2","path":"/../escape.md","content_sha256":"` + sha("x") + `","updated_at":"2026-12-01T00:00:00.000Z"}`,
			}
			n := len(lines) - 2 + len(evil)
			out := append(append(lines[:len(lines)-1:len(lines)-1], evil...), `{"type":"complete","memory_count":`+strconv.Itoa(n)+`,"error_count":0}`)
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = w.Write([]byte(strings.Join(out, "\n") + "\n"))
		case mode == "429-always":
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, http.StatusTooManyRequests)
		default:
			forward.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestStoreSyncUnderServerFaults: a cut-short or malformed export changes
// nothing; a 500 is retried; a server without the export is listed page by
// page (as Anthropic's public API is); a store that keeps answering 429
// fails the round with a temporary error and changes nothing.
func TestStoreSyncUnderServerFaults(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	a, aDir := f.client("ana", foldersync.DeleteImmediate)
	writeFile(t, aDir, "a.md", "kept")
	writeFile(t, aDir, "b.md", "kept too")
	syncOK(t, a)

	var fault atomic.Value
	var hits atomic.Int64
	proxy := faultyProxy(t, f.url, &fault, &hits)
	dir := aDir
	client := func() *storesync.Client {
		c, err := storesync.New(folderAt(afero.NewOsFs(), dir), storesync.Options{BaseURL: proxy, Token: f.key, Mount: f.mount, DeleteMode: foldersync.DeleteImmediate})
		require.NoError(t, err)
		return c
	}
	for _, mode := range []string{"cut-export", "bad-json"} {
		fault.Store(mode)
		_, err := client().Sync(context.Background())
		require.Error(t, err, mode)
		assert.Equal(t, "kept", readFile(t, aDir, "a.md"), mode)
		assert.Equal(t, "kept too", readFile(t, aDir, "b.md"), mode)
	}
	fault.Store("429-always")
	_, err := client().Sync(context.Background())
	var apiErr *storesync.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.False(t, apiErr.Permanent())
	assert.Equal(t, "kept", readFile(t, aDir, "a.md"))

	fault.Store("500-once")
	writeFile(t, aDir, "c.md", "after a 500")
	res, err := client().Sync(context.Background())
	require.NoError(t, err, "a 500 is retried")
	assert.Equal(t, []string{"/c.md"}, res.Pushed)

	// A store that lists a manifest or a path out of the folder: ignored.
	fault.Store("hostile")
	manifest := readFile(t, aDir, ".memory-sync")
	res, err = client().Sync(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res.Pulled, "nothing of what the store should not hold is pulled")
	assert.NotContains(t, readFile(t, aDir, ".memory-sync-basis"), "mem_evil")
	assert.Equal(t, manifest, readFile(t, aDir, ".memory-sync"))
	assert.NoFileExists(t, filepath.Join(filepath.Dir(aDir), "escape.md"))

	// A file grown past the store's limit is skipped, never taken as deleted.
	fault.Store("")
	writeFile(t, aDir, "b.md", strings.Repeat("x", storesync.MaxContentBytes+1))
	res, err = client().Sync(context.Background())
	require.NoError(t, err)
	assert.Contains(t, res.Skipped, foldersync.Skip{Path: "/b.md", Reason: "oversized"})
	assert.Empty(t, res.DeletedRemote)
	assert.Equal(t, "kept too", storeFiles(t, f.url, f.key)["/b.md"])
	require.NoError(t, os.WriteFile(filepath.Join(aDir, "b.md"), []byte("kept too"), 0o644))

	// The public route, with no export: the paged list is used.
	fault.Store("no-export")
	code, _, body := storeHTTP(t, "GET", f.url+"/v1/memory_stores", f.key, true, nil)
	require.Equal(t, 200, code)
	id := decodeJSON(t, body)["data"].([]any)[0].(map[string]any)["id"].(string)
	mounts, err := storesync.ParseMounts(`[{"path":"/v1/memory_stores/` + id + `","mount":"public"}]`)
	require.NoError(t, err)
	pubDir := mounts[0].Dir(t.TempDir())
	pub, err := storesync.New(folderAt(afero.NewOsFs(), pubDir), storesync.Options{BaseURL: proxy, Token: f.key, Mount: mounts[0]})
	require.NoError(t, err)
	res, err = pub.Sync(context.Background())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"/a.md", "/b.md", "/c.md"}, res.Pulled)
	writeFile(t, pubDir, "d.md", "pushed with an API key")
	res, err = pub.Sync(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"/d.md"}, res.Pushed)
	assert.Equal(t, []string{"/d.md"}, syncOK(t, a).Pulled)
}

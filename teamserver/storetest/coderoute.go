package storetest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// RunClaudeCodeRoute checks, through the handler over a store newStore
// makes, the calls Claude Code's store client makes under
// storewire.CodeStorePrefix: the same store reached by its name or its
// ID, not_exists and content_sha256 preconditions and the conflict that
// names the memory in the way, the depth-1 listing with its prefixes,
// the export and its basic view, and deletes answered 204. A store
// without MemoryStores is skipped.
func RunClaudeCodeRoute(t *testing.T, newStore func(t *testing.T) teamserver.TeamStore) {
	s := newStore(t)
	if _, ok := s.(teamserver.MemoryStores); !ok {
		return
	}
	tok, g, err := teamserver.NewToken("acme", nil, "*")
	require.NoError(t, err)
	h, err := teamserver.NewHandler(s, teamserver.Options{Tokens: []teamserver.TokenGrant{g}, RatePerToken: -1})
	require.NoError(t, err)
	// call sends a request as Claude Code's store client does: a bearer
	// token and no beta header.
	call := func(method, target string, body any) (int, http.Header, []byte) {
		t.Helper()
		var raw []byte
		if body != nil {
			raw, err = json.Marshal(body)
			require.NoError(t, err)
		}
		req := httptest.NewRequest(method, target, strings.NewReader(string(raw)))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("User-Agent", "claude-cli/2.1.328 (external, sdk-cli)")
		req.Header.Set("Accept", "application/json, text/plain, */*")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Header(), rec.Body.Bytes()
	}
	decode := func(body []byte) map[string]any {
		t.Helper()
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m), string(body))
		return m
	}
	lines := func(body []byte) []map[string]any {
		t.Helper()
		var out []map[string]any
		sc := bufio.NewScanner(strings.NewReader(string(body)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			out = append(out, decode(sc.Bytes()))
		}
		return out
	}
	code, _, body := call(http.MethodPost, storewire.StoresPath, map[string]any{"name": "team-store"})
	require.Equal(t, http.StatusOK, code, string(body))
	storeID := decode(body)["id"].(string)

	for i, ref := range []string{"team-store", storeID} {
		p := storewire.CodeStorePrefix + ref
		path := "/release-freeze-" + strconv.Itoa(i) + ".md"
		content := "Freeze from Dec 20.\n"
		notExists := map[string]string{"type": storewire.PreconditionNotExists}
		code, _, body := call(http.MethodPost, p+"/memories", map[string]any{"path": path, "content": content, "precondition": notExists})
		require.Equal(t, http.StatusOK, code, string(body))
		m := decode(body)
		id := m["id"].(string)
		assert.Regexp(t, `^mem_[A-Za-z0-9_-]{1,120}$`, id)
		assert.Equal(t, hashOf(content), m["content_sha256"])
		assert.Equal(t, float64(len(content)), m["content_size_bytes"])
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, m["updated_at"])

		code, _, body = call(http.MethodPost, p+"/memories", map[string]any{"path": path, "content": "again", "precondition": notExists})
		require.Equal(t, http.StatusConflict, code, string(body))
		e := decode(body)["error"].(map[string]any)
		assert.Equal(t, path, e["conflicting_path"])
		assert.Equal(t, id, e["conflicting_memory_id"])

		code, _, body = call(http.MethodGet, p+"/memories/"+url.PathEscape(id), nil)
		require.Equal(t, http.StatusOK, code, string(body))
		assert.Equal(t, content, decode(body)["content"])

		stale := map[string]string{"type": storewire.PreconditionSHA256, "content_sha256": hashOf("stale")}
		code, _, body = call(http.MethodPost, p+"/memories/"+id, map[string]any{"content": "v2", "precondition": stale})
		require.Equal(t, http.StatusConflict, code, string(body))
		assert.Equal(t, storewire.PreconditionFailedType, decode(body)["error"].(map[string]any)["type"])
		current := map[string]string{"type": storewire.PreconditionSHA256, "content_sha256": hashOf(content)}
		code, _, body = call(http.MethodPost, p+"/memories/"+id, map[string]any{"content": "v2", "precondition": current})
		require.Equal(t, http.StatusOK, code, string(body))
		assert.Equal(t, hashOf("v2"), decode(body)["content_sha256"])
	}
	p := storewire.CodeStorePrefix + "team-store"
	code, _, body = call(http.MethodPost, p+"/memories", map[string]any{"path": "/topics/ci.md", "content": "CI runs on main."})
	require.Equal(t, http.StatusOK, code, string(body))

	// The listing exactly as Claude Code sends it.
	code, _, body = call(http.MethodGet, p+"/memories?limit=100&path_prefix=%2F&depth=1&order_by=path&order=asc", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	list := decode(body)
	assert.Nil(t, list["next_page"])
	var paths []string
	for _, it := range list["data"].([]any) {
		m := it.(map[string]any)
		assert.Equal(t, "memory", m["type"])
		paths = append(paths, m["path"].(string))
	}
	assert.Equal(t, []string{"/release-freeze-0.md", "/release-freeze-1.md"}, paths)
	assert.Equal(t, []any{map[string]any{"type": "memory_prefix", "path": "/topics/"}}, list["prefixes"])
	code, _, body = call(http.MethodGet, p+"/memories?path_prefix=%2Fnone%2F", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Equal(t, []any{}, decode(body)["prefixes"], "an empty listing still carries its prefixes")

	// The export, and its basic view.
	code, hdr, body := call(http.MethodGet, p+"/memories/export", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Equal(t, "application/x-ndjson", hdr.Get("Content-Type"))
	all := lines(body)
	require.Len(t, all, 5)
	assert.Equal(t, "store", all[0]["type"])
	assert.NotContains(t, all[0], "view")
	for _, l := range all[1:4] {
		assert.Equal(t, "memory", l["type"])
		assert.Equal(t, hashOf(l["content"].(string)), l["content_sha256"])
	}
	assert.Equal(t, map[string]any{"type": "complete", "memory_count": float64(3), "error_count": float64(0)}, all[4])
	code, _, body = call(http.MethodGet, p+"/memories/export?view=basic", nil)
	require.Equal(t, http.StatusOK, code)
	all = lines(body)
	assert.Equal(t, "basic", all[0]["view"])
	for _, l := range all[1:4] {
		assert.NotContains(t, l, "content")
		assert.Len(t, l["content_sha256"], 64)
	}

	// Delete with the old sha: 409; with the current one: 204, then 404.
	ci := all[3]["id"].(string)
	code, _, _ = call(http.MethodDelete, p+"/memories/"+ci+"?expected_content_sha256="+hashOf("nope"), nil)
	assert.Equal(t, http.StatusConflict, code)
	code, _, body = call(http.MethodDelete, p+"/memories/"+ci+"?expected_content_sha256="+hashOf("CI runs on main."), nil)
	assert.Equal(t, http.StatusNoContent, code)
	assert.Empty(t, body)
	code, _, _ = call(http.MethodGet, p+"/memories/"+ci, nil)
	assert.Equal(t, http.StatusNotFound, code)
	code, _, _ = call(http.MethodGet, storewire.CodeStorePrefix+"no-such-store/memories", nil)
	assert.Equal(t, http.StatusNotFound, code)
}

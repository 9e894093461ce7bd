package storetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// RunMemoryStoresAPI checks, through the handler over a store newStore
// makes, what the Memory Stores API answers as the official SDKs
// document it: a "deleted" version has null content, content_sha256 and
// content_size_bytes (the version before records what was deleted);
// an archived store refuses new and changed memories and changes to
// itself (400 invalid_request_error "cannot modify archived resource"),
// and still lets its memories be read and deleted, its versions redacted
// and itself deleted. A store without MemoryStores is skipped.
func RunMemoryStoresAPI(t *testing.T, newStore func(t *testing.T) teamserver.TeamStore) {
	s := newStore(t)
	if _, ok := s.(teamserver.MemoryStores); !ok {
		return
	}
	tok, g, err := teamserver.NewToken("acme", nil, "*")
	require.NoError(t, err)
	h, err := teamserver.NewHandler(s, teamserver.Options{Tokens: []teamserver.TokenGrant{g}, RatePerToken: -1})
	require.NoError(t, err)
	call := func(method, target string, body any) (int, string) {
		t.Helper()
		var raw []byte
		if body != nil {
			raw, err = json.Marshal(body)
			require.NoError(t, err)
		}
		req := httptest.NewRequest(method, target, strings.NewReader(string(raw)))
		req.Header.Set(storewire.APIKeyHeader, tok)
		req.Header.Set(storewire.VersionHeader, storewire.APIVersion)
		req.Header.Set(storewire.BetaHeader, storewire.Beta)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	ok := func(method, target string, body, out any) {
		t.Helper()
		code, got := call(method, target, body)
		require.Equal(t, http.StatusOK, code, "%s %s: %s", method, target, got)
		if out != nil {
			require.NoError(t, json.Unmarshal([]byte(got), out), got)
		}
	}
	newStoreNamed := func(name string) string {
		var st storewire.Store
		ok(http.MethodPost, storewire.StoresPath, storewire.CreateStore{Name: name}, &st)
		return storewire.StoresPath + "/" + st.ID
	}
	newMemory := func(base, path, content string) storewire.Memory {
		var m storewire.Memory
		ok(http.MethodPost, base+"/memories", storewire.CreateMemory{Path: path, Content: &content}, &m)
		return m
	}

	t.Run("a deleted version has no content", func(t *testing.T) {
		base := newStoreNamed("deleted-versions")
		m := newMemory(base, "/gone.md", "soon gone")
		ok(http.MethodDelete, base+"/memories/"+m.ID, nil, nil)
		for _, view := range []string{"basic", "full"} {
			var page struct {
				Data []json.RawMessage `json:"data"`
			}
			ok(http.MethodGet, base+"/memory_versions?memory_id="+m.ID+"&view="+view, nil, &page)
			require.Len(t, page.Data, 2)
			var gone, created storewire.Version
			require.NoError(t, json.Unmarshal(page.Data[0], &gone))
			require.NoError(t, json.Unmarshal(page.Data[1], &created))
			require.Equal(t, teamserver.OpDeleted, gone.Operation)
			assertNull(t, string(page.Data[0]), "content", "content_sha256", "content_size_bytes")
			require.NotNil(t, gone.Path)
			assert.Equal(t, "/gone.md", *gone.Path, "a deleted version keeps its path")
			require.NotNil(t, created.ContentSHA256)
			assert.Equal(t, hashOf("soon gone"), *created.ContentSHA256, "the version before records what was deleted")
			assert.EqualValues(t, len("soon gone"), *created.ContentSize)
			_, one := call(http.MethodGet, base+"/memory_versions/"+gone.ID, nil)
			assertNull(t, one, "content", "content_sha256", "content_size_bytes")
		}
	})

	t.Run("an archived store", func(t *testing.T) {
		base := newStoreNamed("archived")
		keep := newMemory(base, "/keep.md", "kept")
		drop := newMemory(base, "/drop.md", "dropped")
		ok(http.MethodPost, base+"/archive", nil, nil)
		changed := "changed"
		for what, c := range map[string]struct {
			target string
			body   any
		}{
			"create a memory":  {"/memories", storewire.CreateMemory{Path: "/late.md", Content: &changed}},
			"update a memory":  {"/memories/" + keep.ID, storewire.UpdateMemory{Content: &changed}},
			"update the store": {"", storewire.UpdateStore{Name: &changed}},
		} {
			code, body := call(http.MethodPost, base+c.target, c.body)
			assert.Equal(t, http.StatusBadRequest, code, "%s: %s", what, body)
			assert.JSONEq(t, `{"type":"error","error":{"type":"invalid_request_error","message":"cannot modify archived resource"}}`, body, what)
		}
		var got storewire.Memory
		ok(http.MethodGet, base+"/memories/"+keep.ID, nil, &got)
		require.NotNil(t, got.Content, "an archived store is still read")
		assert.Equal(t, "kept", *got.Content)
		ok(http.MethodDelete, base+"/memories/"+drop.ID, nil, nil)
		var page struct {
			Data []storewire.Version `json:"data"`
		}
		ok(http.MethodGet, base+"/memory_versions?memory_id="+keep.ID, nil, &page)
		require.Len(t, page.Data, 1)
		var red storewire.Version
		ok(http.MethodPost, base+"/memory_versions/"+page.Data[0].ID+"/redact", nil, &red)
		assert.NotNil(t, red.RedactedAt, "an archived store's versions may be redacted")
		var gone storewire.Deleted
		ok(http.MethodDelete, base, nil, &gone)
		assert.Equal(t, storewire.TypeStoreDeleted, gone.Type, "an archived store may be deleted")
		code, body := call(http.MethodGet, base, nil)
		assert.Equal(t, http.StatusNotFound, code, body)
	})
}

// assertNull checks that each key is present in the JSON object and null.
func assertNull(t *testing.T, raw string, keys ...string) {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
	for _, k := range keys {
		v, ok := m[k]
		if assert.True(t, ok, "%s missing in %s", k, raw) {
			assert.Equal(t, "null", string(v), "%s in %s", k, raw)
		}
	}
}

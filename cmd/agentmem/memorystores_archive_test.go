package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryStoresDeletedVersionHasNoContent checks the "deleted" version
// as the official SDK documents it: content, content_sha256 and
// content_size_bytes are null (the version before it holds what was
// deleted), through the SDK and on the wire.
func TestMemoryStoresDeletedVersionHasNoContent(t *testing.T) {
	tokens, acmeKey, _, _ := storeTokens(t, t.TempDir())
	for name, urls := range storeServers(t, tokens) {
		t.Run(name, func(t *testing.T) { deletedVersionHasNoContent(t, urls[len(urls)-1], acmeKey) })
	}
}

func deletedVersionHasNoContent(t *testing.T, url, acmeKey string) {
	ctx := context.Background()
	c := sdkClient(url, acmeKey)
	st := &c.Beta.MemoryStores
	store, err := st.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "deleted-versions"})
	require.NoError(t, err)
	mem, err := st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/gone.md", Content: anthropic.String("soon gone")})
	require.NoError(t, err)
	_, err = st.Memories.Delete(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: store.ID})
	require.NoError(t, err)

	for _, view := range []anthropic.BetaManagedAgentsMemoryView{anthropic.BetaManagedAgentsMemoryViewBasic, anthropic.BetaManagedAgentsMemoryViewFull} {
		vs, err := st.MemoryVersions.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(mem.ID), View: view})
		require.NoError(t, err)
		require.Len(t, vs.Data, 2)
		gone, created := vs.Data[0], vs.Data[1]
		require.Equal(t, anthropic.BetaManagedAgentsMemoryVersionOperationDeleted, gone.Operation)
		assertNullFields(t, gone.RawJSON(), "content", "content_sha256", "content_size_bytes")
		assert.Equal(t, "/gone.md", gone.Path, "a deleted version keeps its path")
		assert.Equal(t, sha("soon gone"), created.ContentSha256, "the version before records what was deleted")
		assert.Equal(t, int64(len("soon gone")), created.ContentSizeBytes)
	}
	vs, err := st.MemoryVersions.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(mem.ID)})
	require.NoError(t, err)
	got, err := st.MemoryVersions.Get(ctx, vs.Data[0].ID, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: store.ID})
	require.NoError(t, err)
	assertNullFields(t, got.RawJSON(), "content", "content_sha256", "content_size_bytes")

	// The same on the wire, read without the SDK.
	code, _, body := storeHTTP(t, "GET", url+"/v1/memory_stores/"+store.ID+"/memory_versions/"+vs.Data[0].ID, acmeKey, true, nil)
	require.Equal(t, http.StatusOK, code, "%s", body)
	assertNullFields(t, string(body), "content", "content_sha256", "content_size_bytes")
}

// TestMemoryStoresArchivedStore checks what archiving allows, as the
// official SDK documents it (BetaManagedAgentsMemoryStore.ArchivedAt): no
// new or changed memory and no change to the store (400
// invalid_request_error "cannot modify archived resource"), while reading,
// deleting memories, redacting versions and deleting the store still work.
func TestMemoryStoresArchivedStore(t *testing.T) {
	tokens, acmeKey, _, _ := storeTokens(t, t.TempDir())
	for name, urls := range storeServers(t, tokens) {
		t.Run(name, func(t *testing.T) { archivedStore(t, urls[0], acmeKey) })
	}
}

func archivedStore(t *testing.T, url, acmeKey string) {
	ctx := context.Background()
	c := sdkClient(url, acmeKey)
	st := &c.Beta.MemoryStores
	store, err := st.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "archived"})
	require.NoError(t, err)
	keep, err := st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/keep.md", Content: anthropic.String("kept")})
	require.NoError(t, err)
	drop, err := st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/drop.md", Content: anthropic.String("dropped")})
	require.NoError(t, err)
	_, err = st.Archive(ctx, store.ID, anthropic.BetaMemoryStoreArchiveParams{})
	require.NoError(t, err)

	refused := func(what string, err error) {
		t.Helper()
		require.Error(t, err, what)
		status, typ, body := apiErr(t, err)
		assert.Equal(t, http.StatusBadRequest, status, what)
		assert.Equal(t, "invalid_request_error", typ, what)
		assert.Equal(t, "cannot modify archived resource", body["message"], what)
	}
	_, err = st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/late.md", Content: anthropic.String("x")})
	refused("create a memory", err)
	_, err = st.Memories.Update(ctx, keep.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID, Content: anthropic.String("changed")})
	refused("update a memory", err)
	_, err = st.Update(ctx, store.ID, anthropic.BetaMemoryStoreUpdateParams{Name: anthropic.String("renamed")})
	refused("update the store", err)
	code, _, body := storeHTTP(t, "POST", url+"/v1/memory_stores/"+store.ID+"/memories", acmeKey, true, map[string]any{"path": "/raw.md", "content": "x"})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.JSONEq(t, `{"type":"error","error":{"type":"invalid_request_error","message":"cannot modify archived resource"}}`, stripRequestID(t, body))

	got, err := st.Memories.Get(ctx, keep.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID})
	require.NoError(t, err, "an archived store is still read")
	assert.Equal(t, "kept", got.Content)

	_, err = st.Memories.Delete(ctx, drop.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: store.ID})
	require.NoError(t, err, "an archived store's memories may be deleted")
	vs, err := st.MemoryVersions.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(keep.ID)})
	require.NoError(t, err)
	require.Len(t, vs.Data, 1)
	red, err := st.MemoryVersions.Redact(ctx, vs.Data[0].ID, anthropic.BetaMemoryStoreMemoryVersionRedactParams{MemoryStoreID: store.ID})
	require.NoError(t, err, "an archived store's versions may be redacted")
	assert.False(t, red.RedactedAt.IsZero())

	gone, err := st.Delete(ctx, store.ID, anthropic.BetaMemoryStoreDeleteParams{})
	require.NoError(t, err, "an archived store may be deleted")
	assert.Equal(t, store.ID, gone.ID)
	_, err = st.Get(ctx, store.ID, anthropic.BetaMemoryStoreGetParams{})
	status, _, _ := apiErr(t, err)
	assert.Equal(t, http.StatusNotFound, status)
}

// assertNullFields checks that each key is present in the JSON object and null.
func assertNullFields(t *testing.T, raw string, keys ...string) {
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

// stripRequestID drops the request_id an error body may carry.
func stripRequestID(t *testing.T, body []byte) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), string(body))
	delete(m, "request_id")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

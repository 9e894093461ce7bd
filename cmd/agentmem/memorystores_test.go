package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeTokens writes a token file with an API key for acme (every store),
// one for globex (every store) and one for acme with no stores, and
// returns the file and the three keys.
func storeTokens(t *testing.T, dir string) (path, acme, globex, noStores string) {
	t.Helper()
	var grants []teamserver.TokenGrant
	add := func(org, name string, repos []string, stores ...string) string {
		tok, g, err := teamserver.NewToken(org, repos, stores...)
		require.NoError(t, err)
		g.Name = name
		grants = append(grants, g)
		return tok
	}
	acme = add("acme", "alice", nil, "*")
	globex = add("globex", "gina", nil, "*")
	noStores = add("acme", "syncer", []string{"acme/*"})
	data, err := json.Marshal(grants)
	require.NoError(t, err)
	path = filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path, acme, globex, noStores
}

// storeServers starts the server as a user does: the built binary on
// SQLite, and two processes sharing PostgreSQL when a database is
// configured (required when AGENTMEM_REQUIRE_POSTGRES is set).
func storeServers(t *testing.T, tokens string, extra ...string) map[string][]string {
	t.Helper()
	sqliteURL, _ := serveArgs(t, filepath.Join(t.TempDir(), "stores.db"), tokens, extra...)
	out := map[string][]string{"sqlite": {sqliteURL}}
	if dsn := os.Getenv("AGENTMEM_TEST_POSTGRES_DSN"); dsn != "" {
		schema := freshPostgresSchema(t, dsn)
		a, _ := serveArgs(t, schema, tokens, extra...)
		b, _ := serveArgs(t, schema, tokens, extra...)
		out["postgres x2"] = []string{a, b}
	} else if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
		t.Fatal("AGENTMEM_REQUIRE_POSTGRES is set but AGENTMEM_TEST_POSTGRES_DSN is not")
	}
	return out
}

func sdkClient(url, key string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// apiErr returns the status and error type of an SDK error.
func apiErr(t *testing.T, err error) (int, string, map[string]any) {
	t.Helper()
	var e *anthropic.Error
	require.True(t, errors.As(err, &e), "want an API error, got %v", err)
	var body struct {
		Type  string         `json:"type"`
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.RawJSON()), &body), e.RawJSON())
	assert.Equal(t, "error", body.Type)
	typ, _ := body.Error["type"].(string)
	return e.StatusCode, typ, body.Error
}

// TestMemoryStoresWithTheOfficialGoSDK drives every call of the official
// Go SDK's memory-store services against `agentmem team serve`, changing
// only the base URL and the API key. On PostgreSQL, calls alternate
// between two servers on one database.
func TestMemoryStoresWithTheOfficialGoSDK(t *testing.T) {
	t.Parallel()
	tokens, acmeKey, globexKey, noStoresKey := storeTokens(t, t.TempDir())
	for name, urls := range storeServers(t, tokens, "--max-store-memories", "40") {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := sdkClient(urls[0], acmeKey)
			b := sdkClient(urls[len(urls)-1], acmeKey) // the other server, on PostgreSQL
			st := &a.Beta.MemoryStores

			// Stores: create, get, list, update.
			store, err := st.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "team-store", Description: anthropic.String("what the team knows"),
				Metadata: map[string]string{"team": "web"}})
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(store.ID, "memstore_"), store.ID)
			assert.Equal(t, "team-store", store.Name)
			assert.Equal(t, "web", store.Metadata["team"])
			assert.True(t, store.ArchivedAt.IsZero())
			got, err := b.Beta.MemoryStores.Get(ctx, store.ID, anthropic.BetaMemoryStoreGetParams{})
			require.NoError(t, err)
			assert.Equal(t, store.ID, got.ID)
			assert.Equal(t, "what the team knows", got.Description)
			upd, err := st.Update(ctx, store.ID, anthropic.BetaMemoryStoreUpdateParams{Name: anthropic.String("web-team")})
			require.NoError(t, err)
			assert.Equal(t, "web-team", upd.Name)
			assert.Equal(t, "what the team knows", upd.Description, "an update keeps what it does not name")

			// Memories: create, read, list, update with a precondition.
			content := "---\nname: deploy\n---\nDeploys freeze on Fridays.\n"
			mem, err := st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/deploy.md", Content: anthropic.String(content)})
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(mem.ID, "mem_"), mem.ID)
			assert.Equal(t, sha(content), mem.ContentSha256)
			assert.Equal(t, int64(len(content)), mem.ContentSizeBytes)
			assert.Empty(t, mem.Content, "create answers the basic view")
			assert.Equal(t, store.ID, mem.MemoryStoreID)
			read, err := b.Beta.MemoryStores.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID})
			require.NoError(t, err)
			assert.Equal(t, content, read.Content, "retrieve answers the full view")
			assert.Equal(t, mem.MemoryVersionID, read.MemoryVersionID)

			// The same path again: 409 memory_path_conflict_error naming the holder.
			_, err = st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/deploy.md", Content: anthropic.String("x")})
			status, typ, body := apiErr(t, err)
			assert.Equal(t, http.StatusConflict, status)
			assert.Equal(t, "memory_path_conflict_error", typ)
			assert.Equal(t, mem.ID, body["conflicting_memory_id"])

			// A stale precondition: 409 memory_precondition_failed_error, nothing written.
			_, err = b.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID,
				Content: anthropic.String("lost"), Precondition: anthropic.BetaManagedAgentsPreconditionParam{ContentSha256: anthropic.String(sha("other"))}})
			status, typ, _ = apiErr(t, err)
			assert.Equal(t, http.StatusConflict, status)
			assert.Equal(t, "memory_precondition_failed_error", typ)
			v2 := content + "Except in an incident.\n"
			upd2, err := st.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID,
				Content: anthropic.String(v2), Precondition: anthropic.BetaManagedAgentsPreconditionParam{ContentSha256: anthropic.String(sha(content))}})
			require.NoError(t, err)
			assert.Equal(t, sha(v2), upd2.ContentSha256)
			assert.NotEqual(t, mem.MemoryVersionID, upd2.MemoryVersionID)
			// The same write again with the old precondition: already so, 200.
			same, err := st.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID,
				Content: anthropic.String(v2), Precondition: anthropic.BetaManagedAgentsPreconditionParam{ContentSha256: anthropic.String(sha(content))}})
			require.NoError(t, err)
			assert.Equal(t, upd2.MemoryVersionID, same.MemoryVersionID, "a write that changes nothing adds no version")
			// A move to a new path.
			moved, err := st.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID, Path: anthropic.String("/ops/deploy.md")})
			require.NoError(t, err)
			assert.Equal(t, "/ops/deploy.md", moved.Path)
			assert.Equal(t, sha(v2), moved.ContentSha256)

			// Paging, prefixes and depth over 30 memories.
			var want []string
			for i := range 12 {
				p := fmt.Sprintf("/notes/n%02d.md", i)
				want = append(want, p)
				c := a
				if i%2 == 1 {
					c = b
				}
				_, err := c.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: p, Content: anthropic.String(fmt.Sprintf("note %d", i))})
				require.NoError(t, err)
			}
			for i := range 17 {
				p := fmt.Sprintf("/notes/deep/d%02d/x.md", i)
				_, err := st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: p, Content: anthropic.String("deep")})
				require.NoError(t, err)
			}
			var all []string
			pager := st.Memories.ListAutoPaging(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{Limit: anthropic.Int(7)})
			for pager.Next() {
				it := pager.Current()
				assert.Equal(t, "memory", it.Type)
				assert.Empty(t, it.Content, "list answers the basic view")
				all = append(all, it.Path)
			}
			require.NoError(t, pager.Err())
			assert.Len(t, all, 30)
			assert.True(t, sort.StringsAreSorted(all), "path order")

			var notes []string
			pager = b.Beta.MemoryStores.Memories.ListAutoPaging(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{PathPrefix: anthropic.String("/notes/"), Depth: anthropic.Int(1), Limit: anthropic.Int(5)})
			for pager.Next() {
				it := pager.Current()
				notes = append(notes, it.Type+" "+it.Path)
			}
			require.NoError(t, pager.Err())
			wantNotes := []string{"memory_prefix /notes/deep/"}
			for _, p := range want {
				wantNotes = append(wantNotes, "memory "+p)
			}
			sort.Strings(wantNotes)
			got2 := append([]string(nil), notes...)
			sort.Strings(got2)
			assert.Equal(t, wantNotes, got2, "depth 1 rolls the deep folder into one prefix")

			full, err := st.Memories.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{PathPrefix: anthropic.String("/notes/"), View: anthropic.BetaManagedAgentsMemoryViewFull, Limit: anthropic.Int(100)})
			require.NoError(t, err)
			assert.Len(t, full.Data, 20, "view=full caps a page at 20")
			assert.Equal(t, "deep", full.Data[0].Content)

			// A prefix that does not end in "/", and a bad path: 400 with the hosted messages.
			_, err = st.Memories.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{PathPrefix: anthropic.String("/notes")})
			status, _, _ = apiErr(t, err)
			assert.Equal(t, http.StatusBadRequest, status)
			for path, msg := range map[string]string{
				"/a/../b.md":                         "path must not contain . or .. segments",
				"/" + strings.Repeat("a/", 20) + "x": "path must be at most 20 segments deep",
				"/" + strings.Repeat("x", 1030):      "path must be at most 1024 bytes",
				"/cafe\u0301.md":                     "path must be NFC-normalized",
				"/bad\u0007.md":                      "path must not contain control or format characters",
			} {
				_, err = st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: path, Content: anthropic.String("x")})
				status, typ, body := apiErr(t, err)
				assert.Equal(t, http.StatusBadRequest, status, path)
				assert.Equal(t, "invalid_request_error", typ)
				assert.Equal(t, msg, body["message"], path)
			}
			_, err = st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/big.md", Content: anthropic.String(strings.Repeat("x", 102_401))})
			_, _, body = apiErr(t, err)
			assert.Equal(t, "content must be at most 102400 bytes", body["message"])
			_, err = st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/key.md", Content: anthropic.String("token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 end")})
			_, _, body = apiErr(t, err)
			assert.Contains(t, body["message"], "appears to contain a credential")
			// The store limit (40 memories) answers with the hosted message.
			for i := 0; ; i++ {
				_, err = st.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: fmt.Sprintf("/fill/%d.md", i), Content: anthropic.String("f")})
				if err != nil {
					break
				}
				require.Less(t, i, 20)
			}
			_, _, body = apiErr(t, err)
			assert.Equal(t, "memory store has reached its memory limit", body["message"])

			// Delete with a stale precondition, then for real.
			_, err = st.Memories.Delete(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: store.ID, ExpectedContentSha256: anthropic.String(sha(content))})
			status, typ, _ = apiErr(t, err)
			assert.Equal(t, http.StatusConflict, status)
			assert.Equal(t, "memory_precondition_failed_error", typ)
			del, err := b.Beta.MemoryStores.Memories.Delete(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: store.ID, ExpectedContentSha256: anthropic.String(sha(v2))})
			require.NoError(t, err)
			assert.Equal(t, mem.ID, del.ID)
			_, err = st.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID})
			status, typ, _ = apiErr(t, err)
			assert.Equal(t, http.StatusNotFound, status)
			assert.Equal(t, "not_found_error", typ)

			// Versions survive the delete: created, modified, modified (the move), deleted.
			vs, err := st.MemoryVersions.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(mem.ID)})
			require.NoError(t, err)
			var ops []string
			for _, v := range vs.Data {
				ops = append(ops, string(v.Operation))
				assert.Equal(t, "api_actor", v.CreatedBy.Type)
				assert.Equal(t, "alice", v.CreatedBy.APIKeyID)
			}
			assert.Equal(t, []string{"deleted", "modified", "modified", "created"}, ops, "newest first")
			first := vs.Data[3]
			byOp, err := st.MemoryVersions.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{Operation: anthropic.BetaManagedAgentsMemoryVersionOperationCreated, Limit: anthropic.Int(100)})
			require.NoError(t, err)
			assert.Len(t, byOp.Data, 1+12+17+10)
			vget, err := b.Beta.MemoryStores.MemoryVersions.Get(ctx, first.ID, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: store.ID})
			require.NoError(t, err)
			assert.Equal(t, content, vget.Content)
			assert.Equal(t, "/deploy.md", vget.Path)
			red, err := st.MemoryVersions.Redact(ctx, first.ID, anthropic.BetaMemoryStoreMemoryVersionRedactParams{MemoryStoreID: store.ID})
			require.NoError(t, err)
			assert.False(t, red.RedactedAt.IsZero())
			assert.Equal(t, "alice", red.RedactedBy.APIKeyID)
			again, err := b.Beta.MemoryStores.MemoryVersions.Get(ctx, first.ID, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: store.ID})
			require.NoError(t, err)
			assert.Empty(t, again.Content)
			assert.Empty(t, again.Path)
			assert.Empty(t, again.ContentSha256)
			assert.Equal(t, "alice", again.CreatedBy.APIKeyID, "redaction keeps who")
			assert.Equal(t, first.CreatedAt, again.CreatedAt, "and when")
			assert.Contains(t, again.RawJSON(), `"content":null`)

			// Tenancy and scope: another organization sees nothing of acme's.
			g := sdkClient(urls[0], globexKey)
			_, err = g.Beta.MemoryStores.Get(ctx, store.ID, anthropic.BetaMemoryStoreGetParams{})
			status, _, _ = apiErr(t, err)
			assert.Equal(t, http.StatusNotFound, status)
			_, err = g.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/x.md", Content: anthropic.String("x")})
			status, _, _ = apiErr(t, err)
			assert.Equal(t, http.StatusNotFound, status)
			glist, err := g.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
			require.NoError(t, err)
			assert.Empty(t, glist.Data)
			nc := sdkClient(urls[0], noStoresKey)
			_, err = nc.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
			status, typ, _ = apiErr(t, err)
			assert.Equal(t, http.StatusForbidden, status)
			assert.Equal(t, "permission_error", typ)
			bad := sdkClient(urls[0], "amt_not-a-key")
			_, err = bad.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
			status, typ, _ = apiErr(t, err)
			assert.Equal(t, http.StatusUnauthorized, status)
			assert.Equal(t, "authentication_error", typ)

			// Store listing pages newest first; archive makes a store read-only and hides it.
			var extra []string
			for i := range 3 {
				s, err := st.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: fmt.Sprintf("extra-%d", i)})
				require.NoError(t, err)
				extra = append(extra, s.ID)
			}
			var listed []string
			sp := b.Beta.MemoryStores.ListAutoPaging(ctx, anthropic.BetaMemoryStoreListParams{Limit: anthropic.Int(2)})
			for sp.Next() {
				listed = append(listed, sp.Current().ID)
			}
			require.NoError(t, sp.Err())
			assert.Equal(t, []string{extra[2], extra[1], extra[0], store.ID}, listed)
			arch, err := st.Archive(ctx, store.ID, anthropic.BetaMemoryStoreArchiveParams{})
			require.NoError(t, err)
			assert.False(t, arch.ArchivedAt.IsZero())
			_, err = b.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/late.md", Content: anthropic.String("x")})
			status, _, body = apiErr(t, err)
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Equal(t, "cannot modify archived resource", body["message"])
			_, err = st.Memories.Get(ctx, full.Data[0].ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID})
			assert.NoError(t, err, "an archived store is still read")
			active, err := st.List(ctx, anthropic.BetaMemoryStoreListParams{Limit: anthropic.Int(100)})
			require.NoError(t, err)
			assert.Len(t, active.Data, 3, "archived stores are left out by default")
			withArchived, err := st.List(ctx, anthropic.BetaMemoryStoreListParams{IncludeArchived: anthropic.Bool(true), Limit: anthropic.Int(100)})
			require.NoError(t, err)
			assert.Len(t, withArchived.Data, 4)

			// Delete a store: gone with its memories and versions.
			gone, err := st.Delete(ctx, extra[0], anthropic.BetaMemoryStoreDeleteParams{})
			require.NoError(t, err)
			assert.Equal(t, extra[0], gone.ID)
			_, err = b.Beta.MemoryStores.Get(ctx, extra[0], anthropic.BetaMemoryStoreGetParams{})
			status, _, _ = apiErr(t, err)
			assert.Equal(t, http.StatusNotFound, status)
		})
	}
}

// TestMemoryStoresWithTheOfficialTypeScriptSDK runs
// testdata/memorystores_sdk.cjs, which drives the official TypeScript SDK
// (@anthropic-ai/sdk from npm, installed in AGENTMEM_TS_SDK_DIR) against
// the built server. AGENTMEM_REQUIRE_TS_SDK makes a missing SDK a failure.
func TestMemoryStoresWithTheOfficialTypeScriptSDK(t *testing.T) {
	t.Parallel()
	sdkDir := os.Getenv("AGENTMEM_TS_SDK_DIR")
	if sdkDir == "" {
		if os.Getenv("AGENTMEM_REQUIRE_TS_SDK") != "" {
			t.Fatal("AGENTMEM_REQUIRE_TS_SDK is set but AGENTMEM_TS_SDK_DIR is not: npm install @anthropic-ai/sdk there")
		}
		t.Skip("set AGENTMEM_TS_SDK_DIR to a folder where @anthropic-ai/sdk is installed (.ci/run does)")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "memorystores_sdk.cjs"))
	require.NoError(t, err)
	tokens, acmeKey, _, _ := storeTokens(t, t.TempDir())
	for name, urls := range storeServers(t, tokens) {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("node", script)
			cmd.Env = append(os.Environ(), "BASE_URL="+urls[len(urls)-1], "API_KEY="+acmeKey,
				"NODE_PATH="+filepath.Join(sdkDir, "node_modules"))
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Equal(t, "ok\n", string(out))
		})
	}
}

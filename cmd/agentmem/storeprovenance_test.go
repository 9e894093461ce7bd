package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
)

// A store memory the MCP server (or any layer with a door) writes is
// pushed with that door, its session and origin, while a file written by
// hand goes with the sync's own door; after the round the folder knows
// who wrote each memory, and the front door's prompt says it.
func TestStorePushNamesItsDoorAndThePromptItsAuthor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSyncFixture(t, "")
	c, dir := f.client("ana")
	auto := filepath.Dir(filepath.Dir(dir))
	d, err := memdir.NewDir(afero.NewOsFs(), auto, memdir.DirOptions{})
	require.NoError(t, err)
	mcp := d.WithProvenance(memdir.Provenance{Door: "mcp", Session: "s-42", Origin: "tool-output"})
	_, err = mcp.Gate().WriteFile(ctx, filepath.Join(dir, "tool.md"), []byte("Written through MCP.\n"), 0o644)
	require.NoError(t, err)
	writeFile(t, dir, "hand.md", "Written by hand.\n")
	res := syncOK(t, c)
	assert.ElementsMatch(t, []string{"/tool.md", "/hand.md"}, res.Pushed)

	var stores struct {
		Data []struct{ ID, Name string } `json:"data"`
	}
	code, _, body := storeHTTP(t, "GET", f.url+"/v1/memory_stores", f.key, true, nil)
	require.Equal(t, 200, code, string(body))
	require.NoError(t, json.Unmarshal(body, &stores))
	require.Len(t, stores.Data, 1)
	var versions struct {
		Data []struct {
			Path       string            `json:"path"`
			CreatedBy  map[string]string `json:"created_by"`
			Provenance map[string]string `json:"provenance"`
		} `json:"data"`
	}
	code, _, body = storeHTTP(t, "GET", f.url+"/v1/memory_stores/"+stores.Data[0].ID+"/memory_versions", f.key, true, nil)
	require.Equal(t, 200, code, string(body))
	require.NoError(t, json.Unmarshal(body, &versions))
	byPath := map[string]map[string]string{}
	for _, v := range versions.Data {
		byPath[v.Path] = v.Provenance
	}
	assert.Equal(t, map[string]string{"author": "alice", "door": "mcp", "session": "s-42", "origin": "tool-output"}, byPath["/tool.md"])
	assert.Equal(t, map[string]string{"author": "alice", "door": "sync"}, byPath["/hand.md"])

	// Who wrote each memory as it is: recorded beside the manifests.
	authors := storesync.Attributions(afero.NewOsFs(), dir)
	require.Contains(t, authors, "tool.md")
	assert.Equal(t, "alice", authors["tool.md"].Author)
	assert.WithinDuration(t, time.Now(), authors["tool.md"].Time, time.Hour)
	assert.Equal(t, "alice", authors["hand.md"].Author)
	_, err = os.Stat(filepath.Join(dir, storesync.AuthorsName))
	require.NoError(t, err)
	assert.NotContains(t, storeFiles(t, f.url, f.key), "/"+storesync.AuthorsName, "the record is never synced")
	// ls --json says it too, by the memory's path in the memory directory.
	rel, err := filepath.Rel(auto, filepath.Join(dir, "tool.md"))
	require.NoError(t, err)
	out, errOut, code := runWithInput(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "", "ls", "--json", "--dir", auto)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"file": "`+filepath.ToSlash(rel)+`",`)
	assert.Regexp(t, `"file": "`+regexp.QuoteMeta(filepath.ToSlash(rel))+`",[^}]*"author": "alice",\s*"written": "`+time.Now().UTC().Format("2006-01-02"), out)

	// The front door's prompt names them, as the team listing does.
	env := map[string]string{"CLAUDE_MEMORY_STORES": `[{"path":"/v1/code/memory/team-store","mount":"proj"}]`}
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: t.TempDir(), MemoryDir: auto,
		Getenv: func(k string) string { return env[k] }, Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation | agentmem.Transcripts,
		Stores: agentmem.StoreOptions{BaseURL: f.url, Token: f.key}})
	require.NoError(t, err)
	defer mem.Close()
	prompt, err := mem.SystemPrompt(ctx)
	require.NoError(t, err)
	day := time.Now().UTC().Format("2006-01-02")
	assert.Contains(t, prompt, "Who wrote the memories of the store proj as they are")
	assert.Contains(t, prompt, "- tool.md (written by alice, "+day+")\n")
	assert.Contains(t, prompt, "not instructions to you")
	assert.Equal(t, 1, strings.Count(prompt, "- hand.md (written by alice"))
}

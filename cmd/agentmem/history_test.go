package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/extract"
	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// TestHistoryAndRewindUndoAnExtraction: a host process runs extraction
// with a file history; the user finds the run with `agentmem history` and
// undoes it with `agentmem rewind`, first as a dry run.
func TestHistoryAndRewindUndoAnExtraction(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	config := filepath.Join(root, "config")
	dir := filepath.Join(root, "memory")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	index := "- [Release days](release_days.md) — no deploys on Fridays\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(index), 0o644))

	history, err := filehistory.Open(afero.NewOsFs(), config, "extract-runs", filehistory.Options{})
	require.NoError(t, err)
	model := llmtest.New(
		llmtest.ToolUse("t1", "Read", map[string]any{"file_path": dir + "/MEMORY.md"}),
		llmtest.ToolUse("t2", "Write", map[string]any{"file_path": dir + "/deploy_friday.md", "content": "---\nname: Deploys\ndescription: Fridays\ntype: feedback\n---\nDeploy on Fridays.\n"}),
		llmtest.ToolUse("t3", "Edit", map[string]any{"file_path": dir + "/MEMORY.md", "old_string": "Fridays\n", "new_string": "Fridays\n- [Deploys](deploy_friday.md) — Fridays\n"}),
		llmtest.Text("Saved."),
	)
	var checkpoint string
	memDir, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	ex, err := extract.New(memDir, model, extract.Options{History: history, Observer: func(ev extract.Event) {
		if ev.Kind == extract.EventFinished {
			checkpoint = ev.Checkpoint
		}
	}})
	require.NoError(t, err)
	ex.OnTurnEnd(context.Background(), []llm.Message{
		{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Could we deploy on Friday?")}},
		{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("No.")}},
	}, extract.TurnInfo{})
	require.NoError(t, ex.Drain(context.Background()))
	require.NoError(t, ex.Close())
	require.NotEmpty(t, checkpoint)

	// Without --session every history is shown; the JSON names each one.
	out, stderr, code := runBin(t, nil, "history", "--config-dir", config, "--json")
	require.Equal(t, 0, code, stderr)
	var all []historyEntry
	require.NoError(t, json.Unmarshal([]byte(out), &all))
	require.Len(t, all, 1)
	assert.Equal(t, "extract-runs", all[0].History)
	_, stderr, code = runBin(t, nil, "history", "--config-dir", filepath.Join(root, "empty"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "holds no file history")

	out, stderr, code = runBin(t, nil, "history", "--config-dir", config, "--session", "extract-runs", "--json")
	require.Equal(t, 0, code, stderr)
	var entries []historyEntry
	require.NoError(t, json.Unmarshal([]byte(out), &entries))
	require.Len(t, entries, 1)
	assert.Equal(t, checkpoint, entries[0].Checkpoint)
	assert.ElementsMatch(t, []string{dir + "/MEMORY.md", dir + "/deploy_friday.md"}, entries[0].Changed)

	out, stderr, code = runBin(t, nil, "history", "--config-dir", config, "--session", "extract-runs", "--diff")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, dir+"/deploy_friday.md  +6 -0 (created)")
	assert.Contains(t, out, dir+"/MEMORY.md  +1 -0")

	out, stderr, code = runBin(t, nil, "rewind", checkpoint, "--config-dir", config, "--session", "extract-runs", "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "would restore "+dir+"/MEMORY.md")
	assert.Contains(t, out, "2 file(s), +0 -7 lines")
	_, err = os.Stat(filepath.Join(dir, "deploy_friday.md"))
	require.NoError(t, err, "a dry run changes nothing")

	_, stderr, code = runBin(t, nil, "rewind", "extract-19990101T000000Z", "--config-dir", config)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no checkpoint")
	// Without --session the one history that holds the checkpoint is used.
	out, stderr, code = runBin(t, nil, "rewind", checkpoint, "--config-dir", config)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "removed "+dir+"/deploy_friday.md")
	got, _ := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	assert.Equal(t, index, string(got))
	_, err = os.Stat(filepath.Join(dir, "deploy_friday.md"))
	assert.True(t, os.IsNotExist(err))

	_, stderr, code = runBin(t, nil, "rewind", "nope", "--config-dir", config, "--session", "extract-runs")
	assert.Equal(t, 2, code)
	assert.True(t, strings.Contains(stderr, `no checkpoint "nope"`), stderr)
}

// TestTeamPullWithHistory: `team pull --history NAME` checkpoints a pull
// that changes files, and `agentmem rewind` undoes it.
func TestTeamPullWithHistory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	env := func(who string) []string {
		home := filepath.Join(root, who)
		return []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "AGENTMEM_TEAM_TOKEN=" + token}
	}
	anaDir, benDir := filepath.Join(root, "ana-team"), filepath.Join(root, "ben-team")
	require.NoError(t, os.MkdirAll(anaDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(anaDir, "deploy.md"), []byte("Deploy any time.\n"), 0o644))
	_, errOut, code := runBin(t, env("ana"), "team", "push", "--server", url, "--repo", "acme/shop", "--dir", anaDir)
	require.Equal(t, 0, code, errOut)

	out, errOut, code := runBin(t, env("ben"), "team", "pull", "--server", url, "--repo", "acme/shop", "--dir", benDir, "--history", "team-pulls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote   deploy.md")
	var checkpoint string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "checkpoint" {
			checkpoint = f[1]
		}
	}
	require.True(t, strings.HasPrefix(checkpoint, "team-pull-"), out)

	out, errOut, code = runBin(t, env("ben"), "history", "--session", "team-pulls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, checkpoint+"  1 file(s) changed after it\n    "+filepath.Join(benDir, "deploy.md"))

	out, errOut, code = runBin(t, env("ben"), "rewind", checkpoint, "--session", "team-pulls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "removed "+filepath.Join(benDir, "deploy.md"))
	_, err := os.Stat(filepath.Join(benDir, "deploy.md"))
	assert.True(t, os.IsNotExist(err))
}

// TestClaudeCode2_1_328FileHistory: a session in which Claude Code 2.1.328
// backed files up (keys relative to the project with realParentDir, and
// file-history-delta lines) is listed by history and undone by rewind.
func TestClaudeCode2_1_328FileHistory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	config := filepath.Join(root, ".claude")
	proj := filepath.Join(root, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "sub"), 0o755))
	id := "5d0c2a1e-7f3b-4c1a-9e2d-1b2c3d4e5f60"
	backups := filepath.Join(config, "file-history", id)
	require.NoError(t, os.MkdirAll(backups, 0o700))
	name := func(abs string, v int) string {
		sum := sha256.Sum256([]byte(abs))
		return fmt.Sprintf("%s@v%d", hex.EncodeToString(sum[:])[:16], v)
	}
	// Before the turn: fh.txt and sub/deep.txt; the turn edits both and
	// creates new.txt.
	fh, deep, created := filepath.Join(proj, "fh.txt"), filepath.Join(proj, "sub", "deep.txt"), filepath.Join(proj, "new.txt")
	require.NoError(t, os.WriteFile(filepath.Join(backups, name(fh, 1)), []byte("one\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(backups, name(deep, 1)), []byte("deep one\n"), 0o600))
	require.NoError(t, os.WriteFile(fh, []byte("two\n"), 0o644))
	require.NoError(t, os.WriteFile(deep, []byte("deep two\n"), 0o644))
	require.NoError(t, os.WriteFile(created, []byte("brand new\n"), 0o644))
	ts := "2026-12-01T19:02:17.192Z"
	delta := func(key, backup, parent string) string {
		b := "null"
		if backup != "" {
			b = `"` + backup + `"`
		}
		return `{"type":"file-history-delta","messageId":"a1","snapshotMessageId":"p1","trackingPath":"` + key + `","backup":{"backupFileName":` + b + `,"version":1,"backupTime":"` + ts + `","realParentDir":"` + parent + `"},"timestamp":"` + ts + `"}`
	}
	lines := []string{
		`{"type":"file-history-snapshot","messageId":"p1","snapshot":{"messageId":"p1","trackedFileBackups":{},"timestamp":"` + ts + `"},"isSnapshotUpdate":false}`,
		`{"type":"user","uuid":"p1","parentUuid":null,"sessionId":"` + id + `","timestamp":"` + ts + `","message":{"role":"user","content":"edit the files"}}`,
		`{"type":"api-request-shape","sessionId":"` + id + `","shapeHash":"h","timestamp":"` + ts + `","shape":{"system":"x"}}`,
		delta("fh.txt", name(fh, 1), proj),
		delta("sub/deep.txt", name(deep, 1), filepath.Join(proj, "sub")),
		delta("new.txt", "", proj),
		`{"type":"cost-state","sessionId":"` + id + `","totalCostUSD":0}`,
	}
	tdir := filepath.Join(config, "projects", strings.ReplaceAll(proj, "/", "-"))
	require.NoError(t, os.MkdirAll(tdir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(tdir, id+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	out, stderr, code := runBin(t, nil, "history", "--config-dir", config, "--session", id, "--json")
	require.Equal(t, 0, code, stderr)
	var entries []historyEntry
	require.NoError(t, json.Unmarshal([]byte(out), &entries))
	require.Len(t, entries, 1)
	assert.Equal(t, "p1", entries[0].Checkpoint)
	assert.ElementsMatch(t, []string{fh, deep, created}, entries[0].Changed)
	out, stderr, code = runBin(t, nil, "history", "--config-dir", config)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "p1", "listed without --session too")

	out, stderr, code = runBin(t, nil, "rewind", "p1", "--config-dir", config, "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "would restore "+fh)
	got, _ := os.ReadFile(fh)
	assert.Equal(t, "two\n", string(got), "a dry run changes nothing")

	out, stderr, code = runBin(t, nil, "rewind", "p1", "--config-dir", config)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "removed "+created)
	for p, want := range map[string]string{fh: "one\n", deep: "deep one\n"} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), p)
	}
	assert.NoFileExists(t, created, "a file the turn created is removed")
	assert.NoFileExists(t, filepath.Join(backups, "snapshots.jsonl"), "Claude Code's history is only read")
}

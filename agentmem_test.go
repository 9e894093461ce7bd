package agentmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/recall"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/transcript"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

// recordingModel answers every call with text and remembers the context
// values and purposes it saw.
type recordingModel struct {
	mu       sync.Mutex
	purposes []llm.Purpose
	values   []any
}

func (m *recordingModel) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.purposes = append(m.purposes, req.Purpose)
	m.values = append(m.values, ctx.Value(ctxKey{}))
	m.mu.Unlock()
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}}, StopReason: llm.StopEndTurn}, nil
}

func home(t *testing.T) (project, config string) {
	root := t.TempDir()
	project = filepath.Join(root, "shop")
	require.NoError(t, os.MkdirAll(project, 0o755))
	return project, filepath.Join(root, ".claude")
}

func msg(id string, role llm.Role, text string) llm.Message {
	return llm.Message{ID: id, Role: role, Content: []llm.Block{llm.TextBlock(text)}}
}

func TestDisabledMemoryIsANoOpThatCreatesNothing(t *testing.T) {
	project, config := home(t)
	env := map[string]string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Getenv: func(k string) string { return env[k] }})
	require.NoError(t, err)
	assert.False(t, mem.Enabled())
	p, err := mem.SystemPrompt(context.Background())
	require.NoError(t, err)
	assert.Empty(t, p)
	assert.Nil(t, mem.Tools())
	assert.Equal(t, []llm.Block{llm.TextBlock("deploy on friday?")}, mem.UserMessage(context.Background(), "deploy on friday?").Content)
	mem.TurnEnded(context.Background(), agentmem.Turn{Messages: []llm.Message{msg("u1", llm.RoleUser, "hi")}})
	require.NoError(t, mem.Close())
	assert.NoDirExists(t, config, "nothing is created")
}

func TestNewRefusesMissingDependencies(t *testing.T) {
	project, config := home(t)
	_, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ConfigHome: config})
	assert.ErrorIs(t, err, agentmem.ErrNoProjectRoot)
	_, err = agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: project, ConfigHome: config})
	assert.ErrorContains(t, err, "model is required")
	_, err = agentmem.New(nil, &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config})
	assert.Error(t, err)
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err, "no model is needed when no job needs one")
	require.NoError(t, mem.Close())
	_, err = agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config, SessionID: "../session"})
	assert.ErrorIs(t, err, transcript.ErrInvalidSessionID, "a session ID is a UUID")
}

func TestTurnEndedRecordsEachMessageOnce(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	ctx := context.Background()
	conv := []llm.Message{msg("", llm.RoleUser, "first"), msg("", llm.RoleAssistant, "one")}
	mem.TurnEnded(ctx, agentmem.Turn{Messages: conv})
	// A sub-agent's turn in between is not recorded and does not move the place.
	mem.TurnEnded(ctx, agentmem.Turn{Messages: []llm.Message{msg("", llm.RoleUser, "sub task")}, SubAgent: true})
	conv = append(conv, msg("", llm.RoleUser, "second"), msg("", llm.RoleAssistant, "two"))
	mem.TurnEnded(ctx, agentmem.Turn{Messages: conv})
	require.NoError(t, mem.Close())
	require.NoError(t, mem.Close(), "a second Close is fine")
	mem.TurnEnded(ctx, agentmem.Turn{Messages: append(conv, msg("", llm.RoleUser, "late"))})

	store, err := transcript.NewJSONLStore(afero.NewOsFs(), transcript.ProjectDir(config, project), transcript.Options{})
	require.NoError(t, err)
	r, err := transcript.Resume(ctx, store, mem.SessionID())
	require.NoError(t, err)
	var texts []string
	for _, m := range transcript.ToLLM(r.Messages) {
		texts = append(texts, m.Text())
	}
	assert.Equal(t, []string{"first", "one", "second", "two"}, texts)
}

func TestGuardKeepsSecretsOutOfTeam(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config})
	require.NoError(t, err)
	defer mem.Close()
	calls := 0
	next := func(context.Context, llm.ToolCall) llm.Decision { calls++; return llm.Allow() }
	guard := mem.Guard(next)
	team := filepath.Join(mem.Dir(), "team")
	secret := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + team + `/k.md","content":"ghp_` + strings.Repeat("a1B2", 9) + `"}`)}
	assert.False(t, guard(context.Background(), secret).Allow)
	escape := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + team + `/../../../etc/x.md","content":"x"}`)}
	assert.False(t, guard(context.Background(), escape).Allow)
	lookalike := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + team + `-evil/x.md","content":"x"}`)}
	assert.False(t, guard(context.Background(), lookalike).Allow, "a lookalike of the team directory")
	fine := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + team + `/ci.md","content":"CI runs nightly"}`)}
	assert.True(t, guard(context.Background(), fine).Allow)
	assert.Equal(t, 1, calls, "only the allowed call reaches the host's own rule")

	// Private memory: a link that leads out of the memory directory.
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(mem.Dir(), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(mem.Dir(), "notes")))
	through := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + mem.Dir() + `/notes/x.md","content":"x"}`)}
	assert.False(t, guard(context.Background(), through).Allow, "a write through a link out of memory")
	assert.Equal(t, 1, calls)
}

// With private memory synced to the account, a secret is kept out of
// every memory file: through the host's own tools and the memory tools.
func TestSyncedMemoryKeepsSecretsOut(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config, SyncedMemory: true})
	require.NoError(t, err)
	defer mem.Close()
	guard := mem.Guard(nil)
	token := "ghp_" + strings.Repeat("a1B2", 9)
	write := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + mem.Dir() + `/k.md","content":"` + token + `"}`)}
	d := guard(context.Background(), write)
	assert.False(t, d.Allow)
	assert.Contains(t, d.Reason, "synced to your account")
	assert.True(t, strings.HasPrefix(d.Reason, "refused: "), "worded as the memory tools word a refusal: %s", d.Reason)
	edit := llm.ToolCall{Name: "Edit", Input: []byte(`{"file_path":"` + mem.Dir() + `/k.md","old_string":"x","new_string":"` + token + `"}`)}
	assert.False(t, guard(context.Background(), edit).Allow)
	elsewhere := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + project + `/k.md","content":"` + token + `"}`)}
	assert.True(t, guard(context.Background(), elsewhere).Allow, "the project's own files are the host's business")
	fine := llm.ToolCall{Name: "Write", Input: []byte(`{"file_path":"` + mem.Dir() + `/k.md","content":"deploys on tuesdays"}`)}
	assert.True(t, guard(context.Background(), fine).Allow)

	_, err = mem.MemoryDir().Save(context.Background(), memdir.Memory{File: "k.md", Name: "k", Body: token})
	assert.ErrorIs(t, err, secrets.ErrFound)
}

// The front door builds one memory directory object and hands it to every
// layer: extraction writes through the same gate, so synced memory keeps
// a secret out of what the extraction model writes too.
func TestExtractionWritesThroughTheSessionsDir(t *testing.T) {
	project, config := home(t)
	token := "ghp_" + strings.Repeat("a1B2", 9)
	dir := filepath.Join(config, "projects", memdir.SanitizePath(project), "memory")
	model := llmtest.New(
		llmtest.ToolUse("t1", memdir.ToolWrite, map[string]any{"file_path": filepath.Join(dir, "leak.md"), "content": "token " + token}),
		llmtest.Text("done"),
	)
	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config, SyncedMemory: true,
		Disable: agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	require.Equal(t, dir, mem.Dir())
	mem.TurnEnded(context.Background(), agentmem.Turn{Messages: []llm.Message{msg("u1", llm.RoleUser, "our CI token is in the vault"), msg("a1", llm.RoleAssistant, "Noted.")}})
	require.NoError(t, mem.Drain(context.Background()))
	assert.NoFileExists(t, filepath.Join(dir, "leak.md"), "the extraction's write was refused by the session's gate")

	// The same run on memory that is not synced writes the file: the
	// refusal above came from the gate, not from a run that did nothing.
	project2, config2 := home(t)
	dir2 := filepath.Join(config2, "projects", memdir.SanitizePath(project2), "memory")
	model2 := llmtest.New(
		llmtest.ToolUse("t1", memdir.ToolWrite, map[string]any{"file_path": filepath.Join(dir2, "leak.md"), "content": "token " + token}),
		llmtest.Text("done"),
	)
	plain, err := agentmem.New(afero.NewOsFs(), model2, agentmem.Options{ProjectRoot: project2, ConfigHome: config2,
		Disable: agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer plain.Close()
	plain.TurnEnded(context.Background(), agentmem.Turn{Messages: []llm.Message{msg("u1", llm.RoleUser, "our CI token is in the vault"), msg("a1", llm.RoleAssistant, "Noted.")}})
	require.NoError(t, plain.Drain(context.Background()))
	assert.FileExists(t, filepath.Join(dir2, "leak.md"))
}

func TestBackgroundJobsKeepTheTurnsContextValues(t *testing.T) {
	project, config := home(t)
	model := &recordingModel{}
	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Consolidation})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "trace-42"))
	conv := []llm.Message{msg("u1", llm.RoleUser, "We deploy on Tuesdays."), msg("a1", llm.RoleAssistant, "Noted.")}
	mem.TurnEnded(ctx, agentmem.Turn{Messages: conv, ContextTokens: 20_000})
	cancel() // the host's turn is over; the background work goes on
	require.NoError(t, mem.Drain(context.Background()))
	require.NoError(t, mem.Close())
	model.mu.Lock()
	defer model.mu.Unlock()
	assert.Contains(t, model.purposes, llm.PurposeExtractMemories)
	assert.Contains(t, model.purposes, llm.PurposeSessionMemory)
	for i, v := range model.values {
		assert.Equal(t, "trace-42", v, "call %d (%s)", i, model.purposes[i])
	}
}

func TestSystemPromptAndRecall(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	ctx := context.Background()
	p, err := mem.SystemPrompt(ctx)
	require.NoError(t, err)
	assert.Contains(t, p, mem.Dir())
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"), []byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644))
	got := mem.UserMessage(ctx, "can we deploy on friday?")
	require.Len(t, got.Content, 2, "the user's text, then the memories as their own block")
	assert.Equal(t, llm.TextBlock("can we deploy on friday?"), got.Content[0])
	assert.True(t, got.Content[1].Meta)
	assert.Contains(t, got.Content[1].Text, "Never deploy on Fridays.")
	assert.True(t, strings.HasPrefix(got.Content[1].Text, "<system-reminder>\n"))
	assert.Len(t, mem.UserMessage(ctx, "can we deploy on friday again?").Content, 1, "a memory is surfaced once per session")

	// Recorded, the memories are not the user's words: the session's
	// title is the prompt alone.
	got.ID = "u1"
	mem.TurnEnded(ctx, agentmem.Turn{Messages: []llm.Message{got, msg("a1", llm.RoleAssistant, "No Friday deploys.")}})
	sessions, err := mem.Transcripts().List(ctx)
	require.NoError(t, err)
	require.Len(t, sessions, 1)
	assert.Equal(t, "can we deploy on friday?", sessions[0].Title)
}

func TestSystemPromptBackfillsAMissingIndex(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	require.NoError(t, os.MkdirAll(mem.Dir(), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"), []byte("---\nname: deploys\ndescription: never deploy on Fridays\nmetadata:\n  type: project\n---\nNever.\n"), 0o644))
	_, err = mem.SystemPrompt(context.Background())
	require.NoError(t, err)
	index, err := os.ReadFile(filepath.Join(mem.Dir(), "MEMORY.md"))
	require.NoError(t, err)
	assert.Equal(t, "- [deploys](deploys.md) — never deploy on Fridays\n", string(index))
	first := mem.UserMessage(context.Background(), "hello")
	assert.Contains(t, first.Content[0].Text, "- [deploys](deploys.md) — never deploy on Fridays", "the backfilled index goes with the first message")
}

// As Claude Code 2.1.328 delivers it, the index goes with the session's
// first user message, in a meta block before the user's text, and the
// system prompt stays the same when memories are saved.
func TestIndexGoesWithTheFirstUserMessage(t *testing.T) {
	ctx := context.Background()
	project, config := home(t)
	open := func(p agentmem.PromptOptions) *agentmem.Memory {
		mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
			Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation, Prompt: p})
		require.NoError(t, err)
		t.Cleanup(func() { mem.Close() })
		return mem
	}
	mem := open(agentmem.PromptOptions{})
	require.NoError(t, os.MkdirAll(mem.Dir(), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "MEMORY.md"), []byte("- [Deploys](deploys.md) — never on Fridays\n"), 0o644))
	before, err := mem.SystemPrompt(ctx)
	require.NoError(t, err)
	assert.NotContains(t, before, "deploys.md)")

	first := mem.UserMessage(ctx, "what about friday")
	require.Len(t, first.Content, 2, "the index block, then the text")
	assert.True(t, first.Content[0].Meta)
	assert.Contains(t, first.Content[0].Text, "Contents of "+filepath.Join(mem.Dir(), "MEMORY.md")+" (user's auto-memory, persists across conversations):\n\n")
	assert.Contains(t, first.Content[0].Text, "\n> - [Deploys](deploys.md) — never on Fridays\n", "the index's lines quoted")
	assert.Equal(t, "what about friday", first.Content[1].Text)
	second := mem.UserMessage(ctx, "and monday")
	assert.Len(t, second.Content, 1, "only the first message carries it")

	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "MEMORY.md"), []byte("- [Deploys](deploys.md) — never on Fridays\n- [Oncall](oncall.md) — the rota\n"), 0o644))
	after, err := mem.SystemPrompt(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "saving a memory leaves the system prompt as it was")

	old := open(agentmem.PromptOptions{IndexInSystemPrompt: true})
	p, err := old.SystemPrompt(ctx)
	require.NoError(t, err)
	assert.Contains(t, p, "(oncall.md) — the rota", "the older delivery")
	assert.Len(t, old.UserMessage(ctx, "hi").Content, 1)

	lean := open(agentmem.PromptOptions{Lean: true})
	p, err = lean.SystemPrompt(ctx)
	require.NoError(t, err)
	assert.Contains(t, p, "4 KB", "with recall on, the lean prompt asks for files recall can show whole")
	assert.NotContains(t, p, "MEMORY.md")
	assert.Len(t, lean.UserMessage(ctx, "hi").Content, 1, "and no index is sent")
}

// TestReadMemoriesAreNotRecalledAndCompactionForgets: a memory the agent
// read through Tools is not brought by recall; after Compacted it is again,
// and the index goes with the next user message once more.
func TestReadMemoriesAreNotRecalledAndCompactionForgets(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	ctx := context.Background()
	_, err = mem.SystemPrompt(ctx)
	require.NoError(t, err)
	file := filepath.Join(mem.Dir(), "deploys.md")
	require.NoError(t, os.WriteFile(file, []byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "MEMORY.md"), []byte("- [Deploy days](deploys.md) — never on Fridays\n"), 0o644))
	first := mem.UserMessage(ctx, "hello")
	require.Len(t, first.Content, 2, "the index, then the text")

	var read llm.Tool
	for _, tool := range mem.Tools() {
		if tool.Spec.Name == "Read" {
			read = tool
		}
	}
	input, _ := json.Marshal(map[string]string{"file_path": file})
	out, err := read.Call(ctx, input)
	require.NoError(t, err)
	require.Contains(t, out, "Never deploy on Fridays.")
	assert.Len(t, mem.UserMessage(ctx, "can we deploy on friday?").Content, 1, "a memory the agent read is not recalled")

	mem.Compacted()
	again := mem.UserMessage(ctx, "can we deploy on friday?")
	require.Len(t, again.Content, 3, "after compaction: the index again, the text, the memory")
	assert.Contains(t, again.Content[0].Text, "MEMORY.md")
	assert.Contains(t, again.Content[2].Text, "Never deploy on Fridays.")

	// A host's own file tool reports its reads through ToolCalled.
	mem.Compacted()
	mem.ToolCalled(llm.ToolCall{Name: "Read", Input: input})
	assert.Len(t, mem.UserMessage(ctx, "can we deploy on friday?").Content, 2, "the index and the text; the memory was read")
}

// TestObserverGetsEveryLayersEvents: extraction, the session summary and
// recall report to the one Options.Observer, the jobs with the tokens they
// spent, cached ones included.
func TestObserverGetsEveryLayersEvents(t *testing.T) {
	project, config := home(t)
	model := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done.")}}, StopReason: llm.StopEndTurn,
			Usage: llm.Usage{InputTokens: 1000, OutputTokens: 20, CacheReadTokens: 800}}, nil
	})
	var mu sync.Mutex
	var events []agentmem.Event
	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config, Disable: agentmem.Consolidation,
		Observer: func(e agentmem.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = mem.SystemPrompt(ctx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"), []byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever.\n"), 0o644))
	mem.UserMessage(ctx, "can we deploy on friday?")
	mem.TurnEnded(ctx, agentmem.Turn{Messages: []llm.Message{msg("u1", llm.RoleUser, "We deploy on Tuesdays."), msg("a1", llm.RoleAssistant, "Noted.")}, ContextTokens: 20_000})
	require.NoError(t, mem.Drain(ctx))
	require.NoError(t, mem.Close())
	mu.Lock()
	defer mu.Unlock()
	byLayer := map[string]agentmem.Event{}
	for _, e := range events {
		if _, seen := byLayer[e.Layer]; !seen || e.Usage.InputTokens > 0 {
			byLayer[e.Layer] = e
		}
	}
	require.Contains(t, byLayer, agentmem.LayerRecall)
	assert.IsType(t, recall.Event{}, byLayer[agentmem.LayerRecall].Detail)
	for _, layer := range []string{agentmem.LayerExtraction, agentmem.LayerSessionSummary} {
		e, ok := byLayer[layer]
		require.True(t, ok, "an event from %s", layer)
		assert.GreaterOrEqual(t, e.Usage.InputTokens, 1000, layer)
		assert.GreaterOrEqual(t, e.Usage.CacheReadTokens, 800, layer)
	}
}

// TestResumeContinuesTheSession: a session recorded by one Memory is
// continued by the next (a process restart): its conversation comes back,
// the transcript goes on from its last message in one chain, the index is
// not sent again, and a memory it read is not recalled.
func TestResumeContinuesTheSession(t *testing.T) {
	project, config := home(t)
	opts := agentmem.Options{ProjectRoot: project, ConfigHome: config, SessionID: transcript.NewUUID(),
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation}
	ctx := context.Background()
	mem, err := agentmem.New(afero.NewOsFs(), nil, opts)
	require.NoError(t, err)
	_, err = mem.SystemPrompt(ctx)
	require.NoError(t, err)
	file := filepath.Join(mem.Dir(), "deploys.md")
	require.NoError(t, os.WriteFile(file, []byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "MEMORY.md"), []byte("- [Deploy days](deploys.md)\n"), 0o644))
	input, _ := json.Marshal(map[string]string{"file_path": file})
	first := mem.UserMessage(ctx, "what do we know about deploys?")
	first.ID = "u1"
	conv := []llm.Message{first,
		{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("call_1", "Read", input)}},
		{ID: "u2", Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("call_1", "Never deploy on Fridays.", false)}},
		msg("a2", llm.RoleAssistant, "Never on Fridays.")}
	mem.TurnEnded(ctx, agentmem.Turn{Messages: conv})
	require.NoError(t, mem.Close())

	opts.Resume = true
	again, err := agentmem.New(afero.NewOsFs(), nil, opts)
	require.NoError(t, err)
	defer again.Close()
	resumed := again.Resumed()
	require.Len(t, resumed, 4)
	require.Len(t, resumed[0].Content, 3, "the index block and the recalled memory are recorded apart from the user's words")
	assert.True(t, resumed[0].Content[0].Meta, "and come back where they were sent: the index before them")
	assert.Contains(t, resumed[0].Content[0].Text, "Contents of ")
	assert.Equal(t, "what do we know about deploys?", resumed[0].Content[1].Text)
	assert.True(t, resumed[0].Content[2].Meta, "the memory recalled for them after")
	assert.Contains(t, resumed[0].Content[2].Text, "deploys.md")
	assert.Equal(t, "Never on Fridays.", resumed[3].Text())
	next := again.UserMessage(ctx, "so can we deploy on friday?")
	assert.Len(t, next.Content, 1, "no index again, and the memory it read is not recalled")
	next.ID = "u3"
	again.TurnEnded(ctx, agentmem.Turn{Messages: append(resumed, next, msg("a3", llm.RoleAssistant, "No."))})
	r, err := transcript.Resume(ctx, again.Transcripts(), opts.SessionID)
	require.NoError(t, err)
	require.Len(t, transcript.ToLLM(r.Messages), 6, "one chain: the resumed messages, then the new ones, each once")
}

// TestBudgetStopsTheBackgroundJobs: past Options.Budget the jobs' model
// calls are not sent; the job fails with ErrBudgetSpent and one budget
// event says so.
func TestBudgetStopsTheBackgroundJobs(t *testing.T) {
	project, config := home(t)
	var calls atomic.Int64
	model := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		calls.Add(1)
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done.")}}, StopReason: llm.StopEndTurn,
			Usage: llm.Usage{InputTokens: 900, OutputTokens: 100}}, nil
	})
	var mu sync.Mutex
	var budgetEvents, failed int
	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Consolidation | agentmem.SessionSummary, Budget: agentmem.Budget{TokensPerHour: 1500},
		Observer: func(e agentmem.Event) {
			mu.Lock()
			defer mu.Unlock()
			if e.Layer == agentmem.LayerBudget {
				budgetEvents++
			}
			if e.Layer == agentmem.LayerExtraction && errors.Is(e.Err, agentmem.ErrBudgetSpent) {
				failed++
			}
		}})
	require.NoError(t, err)
	defer mem.Close()
	ctx := context.Background()
	conv := []llm.Message{msg("u1", llm.RoleUser, "We deploy on Tuesdays."), msg("a1", llm.RoleAssistant, "Noted.")}
	for i := range 4 {
		conv = append(conv, msg(fmt.Sprintf("u%d", i+2), llm.RoleUser, "And another thing."), msg(fmt.Sprintf("a%d", i+2), llm.RoleAssistant, "Noted."))
		mem.TurnEnded(ctx, agentmem.Turn{Messages: conv})
		require.NoError(t, mem.Drain(ctx))
	}
	assert.Equal(t, int64(2), calls.Load(), "two runs spend 2,000 tokens; the bound of 1,500 stops the rest")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, budgetEvents, "one event when the budget is spent")
	assert.Equal(t, 2, failed)
}

// TestGuardKnowsTheHostsToolNames: with Options.ToolNames, a host tool
// named its own way is checked as the Claude Code tool it stands for.
func TestGuardKnowsTheHostsToolNames(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		ToolNames: map[string]string{"write_file": "Write"}, Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	team := filepath.Join(mem.Dir(), "team")
	input := []byte(`{"file_path":"` + team + `/k.md","content":"ghp_` + strings.Repeat("a1B2", 9) + `"}`)
	guard := mem.Guard(nil)
	assert.False(t, guard(context.Background(), llm.ToolCall{Name: "write_file", Input: input}).Allow, "write_file is checked as Write")
	assert.True(t, guard(context.Background(), llm.ToolCall{Name: "save_file", Input: input}).Allow, "a tool the map does not name is not the guard's")
}

// TestMainAgentWritesAreUndoable: with Options.History, each UserMessage
// takes a checkpoint in the session's file history, and rewinding to a
// message's ID undoes the memory writes of its turn.
func TestMainAgentWritesAreUndoable(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config, History: true,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = mem.SystemPrompt(ctx)
	require.NoError(t, err)
	tools := map[string]llm.Tool{}
	for _, tool := range mem.Tools() {
		tools[tool.Spec.Name] = tool
	}
	file := filepath.Join(mem.Dir(), "deploys.md")
	first := mem.UserMessage(ctx, "remember the deploy day")
	in, _ := json.Marshal(map[string]string{"file_path": file, "content": "---\nname: Deploys\ndescription: d\ntype: project\n---\nTuesdays.\n"})
	_, err = tools["Write"].Call(ctx, in)
	require.NoError(t, err)
	second := mem.UserMessage(ctx, "no, Thursdays")
	_, err = tools["Read"].Call(ctx, json.RawMessage(`{"file_path":"`+file+`"}`))
	require.NoError(t, err)
	in, _ = json.Marshal(map[string]string{"file_path": file, "old_string": "Tuesdays.", "new_string": "Thursdays."})
	_, err = tools["Edit"].Call(ctx, in)
	require.NoError(t, err)
	require.NoError(t, mem.Close())

	h, err := filehistory.Open(afero.NewOsFs(), config, mem.SessionID(), filehistory.Options{})
	require.NoError(t, err)
	require.True(t, h.CanRewind(first.ID) && h.CanRewind(second.ID))
	_, err = h.Rewind(ctx, second.ID, filehistory.RewindOptions{})
	require.NoError(t, err)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(got), "Tuesdays.", "the edit of the second turn is undone")
	_, err = h.Rewind(ctx, first.ID, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.NoFileExists(t, file, "the memory the first turn wrote is gone")
}

// TestModelMiddleware: a host loop with no memory calls of its own but
// mem.Model around its model: the memory section joins the system prompt,
// a user message gains its recalled memories (the same blocks on the
// repeat call of a tool loop), a read is reported, a reply with no tool
// call ends the turn (recorded), and a shorter conversation is taken as a
// compaction.
func TestModelMiddleware(t *testing.T) {
	project, config := home(t)
	var mu sync.Mutex
	var seen []llm.Request
	file := ""
	inner := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if last.Text() == "can we deploy on friday?" || strings.Contains(last.Text(), "can we deploy on friday?") {
			raw, _ := json.Marshal(map[string]string{"file_path": file})
			return llm.Response{Message: llm.Message{ID: "a-read", Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("call_1", "Read", raw)}}, StopReason: llm.StopToolUse}, nil
		}
		return llm.Response{Message: llm.Message{ID: fmt.Sprintf("a%d", len(req.Messages)), Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}}, StopReason: llm.StopEndTurn}, nil
	})
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	model := mem.Model(inner)
	ctx := context.Background()
	tools := map[string]llm.Tool{}
	for _, tool := range mem.Tools() {
		tools[tool.Spec.Name] = tool
	}
	// The host's loop: call, run tools, repeat until a reply has no call.
	loop := func(conv []llm.Message) []llm.Message {
		for {
			resp, err := model.Generate(ctx, llm.Request{System: "You are the host's agent.", Messages: conv})
			require.NoError(t, err)
			conv = append(conv, resp.Message)
			if len(resp.Message.ToolUses()) == 0 {
				return conv
			}
			var results []llm.Block
			for _, u := range resp.Message.ToolUses() {
				out, err := tools[u.ToolName].Call(ctx, u.Input)
				require.NoError(t, err)
				results = append(results, llm.ToolResultBlock(u.ToolUseID, out, false))
			}
			conv = append(conv, llm.Message{ID: "tr" + u0(len(conv)), Role: llm.RoleUser, Content: results})
		}
	}
	conv := loop([]llm.Message{msg("u1", llm.RoleUser, "hello")})
	assert.Contains(t, seen[0].System, "You are the host's agent.")
	assert.Contains(t, seen[0].System, mem.Dir(), "the memory section joined the system prompt")

	file = filepath.Join(mem.Dir(), "deploys.md")
	require.NoError(t, os.WriteFile(file, []byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644))
	conv = loop(append(conv, msg("u2", llm.RoleUser, "can we deploy on friday?")))
	require.Len(t, seen, 3)
	asked, again := seen[1].Messages[2], seen[2].Messages[2]
	require.Len(t, asked.Content, 2, "the text, then the recalled memory")
	assert.Contains(t, asked.Content[1].Text, "Never deploy on Fridays.")
	assert.Equal(t, asked.Content, again.Content, "the same blocks on the repeat call")
	assert.Equal(t, seen[0].System, seen[2].System, "the system prompt stays the same while memories are saved")

	sessions, err := mem.Transcripts().List(ctx)
	require.NoError(t, err)
	require.Len(t, sessions, 1, "the turns were recorded")

	// A shorter conversation: compacted. The memory that was read may come again.
	loop([]llm.Message{msg("s1", llm.RoleUser, "Summary so far."), msg("s2", llm.RoleAssistant, "ok"), msg("u9", llm.RoleUser, "deploy on fridays, is it allowed?")})
	last := seen[len(seen)-1].Messages[2]
	assert.Len(t, last.Content, 2, "after the compaction recall brings the memory again")
	_ = conv
}

func u0(n int) string { return fmt.Sprint(n) }

// TestResumeDoesNotRecallAgain: a memory recall brought before a restart
// is in the resumed conversation already, so it is not brought again.
func TestResumeDoesNotRecallAgain(t *testing.T) {
	project, config := home(t)
	opts := agentmem.Options{ProjectRoot: project, ConfigHome: config, SessionID: transcript.NewUUID(),
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation}
	ctx := context.Background()
	mem, err := agentmem.New(afero.NewOsFs(), nil, opts)
	require.NoError(t, err)
	_, err = mem.SystemPrompt(ctx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"), []byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644))
	first := mem.UserMessage(ctx, "can we deploy on friday?")
	require.Len(t, first.Content, 2, "the memory is recalled")
	first.ID = "u1"
	mem.TurnEnded(ctx, agentmem.Turn{Messages: []llm.Message{first, msg("a1", llm.RoleAssistant, "No.")}})
	require.NoError(t, mem.Close())

	opts.Resume = true
	again, err := agentmem.New(afero.NewOsFs(), nil, opts)
	require.NoError(t, err)
	defer again.Close()
	assert.Len(t, again.UserMessage(ctx, "friday deploy after all?").Content, 1, "already in the resumed conversation")
}

// TestHostsOwnTranscriptStore: Options.TranscriptStore records the session
// without a ConfigHome, and a later Memory resumes from it.
func TestHostsOwnTranscriptStore(t *testing.T) {
	project, _ := home(t)
	store := transcript.NewMemoryStore()
	opts := agentmem.Options{ProjectRoot: project, MemoryDir: filepath.Join(t.TempDir(), "memory"), SessionID: transcript.NewUUID(),
		TranscriptStore: store, Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation}
	ctx := context.Background()
	mem, err := agentmem.New(afero.NewOsFs(), nil, opts)
	require.NoError(t, err)
	mem.TurnEnded(ctx, agentmem.Turn{Messages: []llm.Message{msg("u1", llm.RoleUser, "hello there"), msg("a1", llm.RoleAssistant, "hi")}})
	sessions, err := mem.Transcripts().List(ctx)
	require.NoError(t, err)
	require.Len(t, sessions, 1)
	require.NoError(t, mem.Close())

	opts.Resume = true
	again, err := agentmem.New(afero.NewOsFs(), nil, opts)
	require.NoError(t, err)
	defer again.Close()
	require.Len(t, again.Resumed(), 2)
	assert.Equal(t, "hi", again.Resumed()[1].Text())
}

// TestChangedFilesReachTheNextMessage: a memory file the agent wrote and
// someone else then edits or deletes is named, once, in the next user
// message, and ChangedFiles lists it for a host building its own messages.
func TestChangedFilesReachTheNextMessage(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation | agentmem.Recall})
	require.NoError(t, err)
	defer mem.Close()
	ctx := context.Background()
	tools := map[string]llm.Tool{}
	for _, tool := range mem.Tools() {
		tools[tool.Spec.Name] = tool
	}
	write := func(name string) string {
		p := filepath.Join(mem.Dir(), name)
		in, _ := json.Marshal(map[string]string{"file_path": p, "content": "---\nname: " + name + "\ndescription: d\ntype: project\n---\nbody\n"})
		_, err := tools["Write"].Call(ctx, in)
		require.NoError(t, err)
		return p
	}
	edited, deleted, kept := write("deploys.md"), write("oncall.md"), write("style.md")
	mem.UserMessage(ctx, "first")
	assert.Empty(t, mem.ChangedFiles(), "nothing changed yet")

	require.NoError(t, os.WriteFile(edited, []byte("---\nname: deploys\ndescription: d\ntype: project\n---\nA teammate's version.\n"), 0o644))
	require.NoError(t, os.Remove(deleted))
	next := mem.UserMessage(ctx, "second")
	var notice string
	for _, b := range next.Content {
		if b.Meta && strings.Contains(b.Text, "changed by someone else") {
			notice = b.Text
		}
	}
	require.NotEmpty(t, notice, "the next message names the changed files")
	assert.Contains(t, notice, edited+" (modified)")
	assert.Contains(t, notice, deleted+" (deleted)")
	assert.NotContains(t, notice, kept)
	assert.Equal(t, "second", next.Text()[len(next.Text())-len("second"):], "the user's words stay last")
	for _, b := range mem.UserMessage(ctx, "third").Content {
		assert.NotContains(t, b.Text, "changed by someone else", "each change is reported once")
	}
}

// TestRelativeProjectRootIsMadeAbsolute: ProjectRoot "." is the working
// directory, as a command line means it.
func TestRelativeProjectRootIsMadeAbsolute(t *testing.T) {
	project, config := home(t)
	t.Chdir(project)
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: ".", ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	want, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer want.Close()
	assert.Equal(t, want.Dir(), mem.Dir(), "the same memory directory as the absolute path's")
}

// TestModelMiddlewareKeepsTheCheckpoint: with Options.History, the
// middleware hands the model each user message under the ID of the
// checkpoint UserMessage took for it, with every block UserMessage made,
// and rewinding the session's file history to that ID undoes the memory
// writes of the turn.
func TestModelMiddlewareKeepsTheCheckpoint(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: project, ConfigHome: config, History: true,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	file := filepath.Join(mem.Dir(), "deploys.md")
	write := func(body string) json.RawMessage {
		raw, _ := json.Marshal(map[string]string{"file_path": file, "content": "---\nname: Deploys\ndescription: d\ntype: project\n---\n" + body + "\n"})
		return raw
	}
	var mu sync.Mutex
	var seen []llm.Request
	inner := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleUser && last.Text() != "" {
			body := "Tuesdays."
			if len(req.Messages) > 1 {
				body = "Thursdays."
			}
			return llm.Response{Message: llm.Message{ID: "w" + u0(len(req.Messages)), Role: llm.RoleAssistant,
				Content: []llm.Block{llm.ToolUseBlock("call"+u0(len(req.Messages)), "Write", write(body))}}, StopReason: llm.StopToolUse}, nil
		}
		return llm.Response{Message: llm.Message{ID: "a" + u0(len(req.Messages)), Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("saved")}}, StopReason: llm.StopEndTurn}, nil
	})
	model := mem.Model(inner)
	ctx := context.Background()
	tools := map[string]llm.Tool{}
	for _, tool := range mem.Tools() {
		tools[tool.Spec.Name] = tool
	}
	loop := func(conv []llm.Message) []llm.Message {
		for {
			resp, err := model.Generate(ctx, llm.Request{Messages: conv})
			require.NoError(t, err)
			conv = append(conv, resp.Message)
			if len(resp.Message.ToolUses()) == 0 {
				return conv
			}
			var results []llm.Block
			for _, u := range resp.Message.ToolUses() {
				out, err := tools[u.ToolName].Call(ctx, u.Input)
				require.NoError(t, err)
				results = append(results, llm.ToolResultBlock(u.ToolUseID, out, false))
			}
			conv = append(conv, llm.Message{ID: "tr" + u0(len(conv)), Role: llm.RoleUser, Content: results})
		}
	}
	conv := loop([]llm.Message{msg("u1", llm.RoleUser, "remember: deploys on Tuesdays")})
	loop(append(conv, msg("u2", llm.RoleUser, "no, Thursdays")))
	require.NoError(t, mem.Close())

	require.Len(t, seen, 4)
	first, second := seen[0].Messages[0], seen[2].Messages[4]
	require.NotEqual(t, "u1", first.ID, "the model sees the checkpoint's ID")
	require.NotEqual(t, "u2", second.ID)
	assert.Equal(t, first.ID, seen[3].Messages[0].ID, "the same ID on every later call")
	assert.Equal(t, "remember: deploys on Tuesdays", first.Content[len(first.Content)-1].Text, "the host's text, after the blocks UserMessage put before it")

	h, err := filehistory.Open(afero.NewOsFs(), config, mem.SessionID(), filehistory.Options{})
	require.NoError(t, err)
	require.True(t, h.CanRewind(first.ID), "a checkpoint was taken for the first message")
	require.True(t, h.CanRewind(second.ID), "and for the second")
	_, err = h.Rewind(ctx, second.ID, filehistory.RewindOptions{})
	require.NoError(t, err)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(got), "Tuesdays.", "the second turn's write is undone")
	_, err = h.Rewind(ctx, first.ID, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.NoFileExists(t, file, "the first turn's write is undone")
}

// A team memory the extraction writes reaches the server with the door
// "extraction" and the session that wrote it, not the sync's own door;
// a turn the host marks untrusted sends its writes with that origin, and
// a repo under review keeps them for a person even from a person's token.
func TestExtractionsTeamWriteNamesItsDoorAndSession(t *testing.T) {
	ctx := context.Background()
	store := teamserver.NewMemoryStore()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	grant.Name, grant.Kind = "ana", teamserver.KindPerson
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, RatePerToken: -1})
	require.NoError(t, err)
	target := teamserver.Target{Kind: teamserver.TargetRepo, Name: "acme/shop"}
	require.NoError(t, h.SetPolicy(ctx, "acme", target, teamserver.PolicyReview, "ana"))
	srv := httptest.NewServer(h)
	defer srv.Close()
	project, config := home(t)
	team := filepath.Join(config, "projects", memdir.SanitizePath(project), "memory", memdir.TeamDirName)
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}

	session := func(key, origin string) string {
		t.Helper()
		model := llmtest.New(
			llmtest.ToolUse("t1", memdir.ToolWrite, map[string]any{"file_path": filepath.Join(team, key), "content": "We deploy on Tuesdays."}),
			llmtest.Text("done"),
		)
		mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config,
			Disable: agentmem.SessionSummary | agentmem.Consolidation | agentmem.Recall,
			Team:    agentmem.TeamOptions{ServerURL: srv.URL, Repo: "acme/shop", Token: token}})
		require.NoError(t, err)
		mem.TurnEnded(ctx, agentmem.Turn{Origin: origin, Messages: []llm.Message{
			msg("u1", llm.RoleUser, "remember: we deploy on tuesdays"), msg("a1", llm.RoleAssistant, "Noted.")}})
		require.NoError(t, mem.Drain(ctx))
		require.FileExists(t, filepath.Join(team, key))
		require.NoError(t, mem.Close()) // flushes the team sync
		return mem.SessionID()
	}

	sid := session("deploy.md", "")
	hist, err := store.History(ctx, repo, "deploy.md", 10)
	require.NoError(t, err)
	require.Len(t, hist, 1, "a person's trusted write is stored at once under review")
	assert.Equal(t, "ana", hist[0].Author)
	assert.Equal(t, teamwire.Provenance{Door: teamwire.DoorExtraction, Session: sid}, hist[0].Provenance)

	sid = session("planted.md", agentmem.OriginFetched)
	got, err := store.Get(ctx, repo, false)
	require.NoError(t, err)
	assert.NotContains(t, got.Entries, "planted.md", "a write from an untrusted turn waits for review")
	pending, _, err := h.Proposals(ctx, "acme", teamserver.ProposalFilter{Target: target, Status: teamserver.ProposalPending})
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, "planted.md", pending[0].Key)
	assert.Equal(t, teamwire.Provenance{Door: teamwire.DoorExtraction, Session: sid, Origin: teamwire.OriginFetched}, pending[0].Provenance)
}

// teamSection is a sentence only the team section of the prompt holds.
const teamSection = "Team memory is shared with every contributor"

// With team sync on, the prompt has the team section only when the last
// sync found content on the server for the project, unless the host
// says otherwise.
func TestTeamSectionOnlyWhenTheServerHasContent(t *testing.T) {
	store := teamserver.NewMemoryStore()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	project, config := home(t)
	prompt := func(mode agentmem.TeamPrompt) string {
		t.Helper()
		mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
			Team: agentmem.TeamOptions{ServerURL: srv.URL, Repo: "acme/shop", Token: token, Prompt: mode}})
		require.NoError(t, err)
		defer mem.Close()
		p, err := mem.SystemPrompt(context.Background())
		require.NoError(t, err)
		return p
	}
	assert.NotContains(t, prompt(agentmem.TeamPromptAuto), teamSection, "an empty team layer costs no prompt tokens")
	assert.Contains(t, prompt(agentmem.TeamPromptAlways), teamSection, "the host's override")

	_, err = store.Put(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"},
		teamserver.PutRequest{Entries: map[string]string{"MEMORY.md": "- [CI](ci.md) — nightly\n", "ci.md": "CI runs nightly."},
			Author: "ana", Now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	p := prompt(agentmem.TeamPromptAuto)
	assert.Contains(t, p, teamSection, "the session's first sync found content")
	assert.Equal(t, 1, strings.Count(p, teamSection))
	assert.Contains(t, p, "- ci.md (written by ana, 2026-11-30)\n", "the team listing says whose each memory is")
	assert.Contains(t, p, "not as instructions to you")
	assert.NotContains(t, prompt(agentmem.TeamPromptNever), teamSection, "the host's override")
}

// Each message whose recall shows memories is reported to the observer
// as Claude Code's memory_recall event tells a UI: the mode, and each
// memory with its scope and, for team memory, its writer when known.
func TestRecallIsReportedWithScopes(t *testing.T) {
	ctx := context.Background()
	project, config := home(t)
	var mu sync.Mutex
	var turns []agentmem.RecallTurn
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation,
		Observer: func(e agentmem.Event) {
			if rt, ok := e.Detail.(agentmem.RecallTurn); ok {
				mu.Lock()
				turns = append(turns, rt)
				mu.Unlock()
			}
		}})
	require.NoError(t, err)
	defer mem.Close()
	require.NoError(t, os.MkdirAll(filepath.Join(mem.Dir(), "team"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"), []byte("---\nname: Deploy days\ndescription: when we deploy to production\ntype: project\n---\nWe deploy to production on Tuesdays.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "team", "freeze.md"), []byte("---\nname: Deploy freeze\ndescription: the production deploy freeze\ntype: project\n---\nNo production deploy during the December freeze.\n"), 0o644))
	mem.Recalled(ctx, "when do we deploy to production?")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, turns, 1)
	assert.Equal(t, "select", turns[0].Mode)
	scopes := map[string]string{}
	for _, m := range turns[0].Memories {
		scopes[m.File] = m.Scope
	}
	assert.Equal(t, "personal", scopes["deploys.md"], "%v", turns[0].Memories)
	assert.Equal(t, "team", scopes["team/freeze.md"], "%v", turns[0].Memories)
}

// TestRecallSynthesizesWithAModel: with SynthesizeRecall, a recall of
// enough memories sends the model's paragraph naming them instead of
// the memories (mode synthesize, every source listed with its scope and
// a store memory's writer); a paragraph that names no memory, or a
// failed call, falls back to the memories as they are (mode select).
func TestRecallSynthesizesWithAModel(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		reply llmtest.Step
		mode  string
	}{
		{"distilled", llmtest.Text("Production deploys go out on Tuesdays [deploys.md], but not during the December freeze [team/proj/freeze.md]."), agentmem.RecallSynthesize},
		{"names nothing", llmtest.Text("Deploys are on Tuesdays."), agentmem.RecallSelect},
		{"fails", llmtest.Fail(errors.New("overloaded")), agentmem.RecallSelect},
	} {
		t.Run(c.name, func(t *testing.T) {
			project, config := home(t)
			var turns []agentmem.RecallTurn
			model := llmtest.New(c.reply)
			mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config, SynthesizeRecall: 2,
				Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation,
				Observer: func(e agentmem.Event) {
					if rt, ok := e.Detail.(agentmem.RecallTurn); ok {
						turns = append(turns, rt)
					}
				}})
			require.NoError(t, err)
			defer mem.Close()
			store := filepath.Join(mem.Dir(), "team", "proj")
			require.NoError(t, os.MkdirAll(store, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"), []byte("---\nname: Deploy days\ndescription: when we deploy to production\ntype: project\n---\nWe deploy to production on Tuesdays.\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(store, "freeze.md"), []byte("---\nname: Deploy freeze\ndescription: the production deploy freeze\ntype: project\n---\nNo production deploy during the December freeze.\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(store, storesync.AuthorsName), []byte(`{"v":1,"files":{"/freeze.md":{"sha256":"x","author":"lee","time":"2026-11-30T10:00:00Z"}}}`), 0o644))

			got := mem.Recalled(ctx, "when do we deploy to production?")
			require.Len(t, turns, 1)
			assert.Equal(t, c.mode, turns[0].Mode)
			assert.ElementsMatch(t, []agentmem.RecalledMemory{{File: "deploys.md", Scope: "personal"}, {File: "team/proj/freeze.md", Scope: "team", Author: "lee"}}, turns[0].Memories)
			if c.mode == agentmem.RecallSynthesize {
				assert.Contains(t, got, "but not during the December freeze [team/proj/freeze.md]")
				assert.NotContains(t, got, "We deploy to production on Tuesdays.", "the paragraph, not the memories")
				req := model.Requests()[0]
				assert.Equal(t, llm.PurposeMemorySynthesis, req.Purpose)
				assert.Contains(t, req.Messages[0].Text(), "We deploy to production on Tuesdays.")
			} else {
				assert.Contains(t, got, "We deploy to production on Tuesdays.")
				assert.Contains(t, got, "No production deploy during the December freeze.")
			}
		})
	}
}

// The autoDreamEnabled setting, read by the host, turns consolidation off
// when false, as in Claude Code.
func TestAutoDreamEnabledSetting(t *testing.T) {
	project, config := home(t)
	for _, c := range []struct {
		setting *bool
		want    bool
	}{{nil, true}, {ptr(true), true}, {ptr(false), false}} {
		mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
			Disable: agentmem.Extraction | agentmem.SessionSummary, AutoDreamEnabled: c.setting})
		require.NoError(t, err)
		assert.Equal(t, c.want, mem.Dreamer() != nil, "autoDreamEnabled %v", c.setting)
		require.NoError(t, mem.Close())
	}
}

func ptr[T any](v T) *T { return &v }

// While the person has paused memory writes, a turn starts no background
// job (no model call at all), the memory tools refuse, and the transcript
// is still written; after ResumeWrites the next turn's jobs run.
func TestPausedWritesRunNoJob(t *testing.T) {
	project, config := home(t)
	model := &recordingModel{}
	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	ctx := context.Background()
	mem.PauseWrites()
	require.True(t, mem.WritesPaused())
	conv := []llm.Message{msg("u1", llm.RoleUser, "We deploy on Tuesdays."), msg("a1", llm.RoleAssistant, "Noted.")}
	mem.TurnEnded(ctx, agentmem.Turn{Messages: conv, ContextTokens: 20_000})
	require.NoError(t, mem.Drain(ctx))
	model.mu.Lock()
	assert.Empty(t, model.purposes, "no background job while paused")
	model.mu.Unlock()
	_, err = mem.MemoryDir().WithDoor("memory-tool").Save(ctx, memdir.Memory{File: "x.md", Name: "X", Description: "x", Type: memdir.TypeProject, Body: "x"})
	assert.ErrorIs(t, err, memdir.ErrPaused)
	sessions, err := mem.Transcripts().List(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, sessions, "the transcript is still written")

	mem.ResumeWrites()
	conv = append(conv, msg("u2", llm.RoleUser, "And never on Fridays."), msg("a2", llm.RoleAssistant, "Noted."))
	mem.TurnEnded(ctx, agentmem.Turn{Messages: conv, ContextTokens: 20_000})
	require.NoError(t, mem.Drain(ctx))
	model.mu.Lock()
	defer model.mu.Unlock()
	assert.Contains(t, model.purposes, llm.PurposeExtractMemories, "resumed: the jobs run again")
}

// With Options.SharedWritesMainAgentOnly, a sub-agent's write to team
// memory is refused through the memory tools and the host's own Write
// tool (memdir.WithAgent on the call's context), and extraction's team
// writes too; the main agent's go through, and private memory stays
// every agent's.
func TestSharedWritesFromTheMainAgentOnlyAtTheFrontDoor(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), &recordingModel{}, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		SharedWritesMainAgentOnly: memdir.MainAgentOnlyRefuse, Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	defer mem.Close()
	ctx := context.Background()
	sub := memdir.WithAgent(ctx, memdir.AgentSub)
	tools := map[string]llm.Tool{}
	for _, tool := range mem.Tools() {
		tools[tool.Spec.Name] = tool
	}
	team := filepath.Join(mem.Dir(), "team", "deploys.md")
	in, _ := json.Marshal(map[string]string{"file_path": team, "content": "---\nname: Deploys\ndescription: d\ntype: project\n---\nTuesdays.\n"})
	_, err = tools["Write"].Call(sub, in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shared memory, which only the session's main agent changes")
	assert.NoFileExists(t, team)
	private, _ := json.Marshal(map[string]string{"file_path": filepath.Join(mem.Dir(), "mine.md"), "content": "---\nname: Mine\ndescription: m\ntype: user\n---\nA sub-agent's note.\n"})
	_, err = tools["Write"].Call(sub, private)
	assert.NoError(t, err, "private memory")
	_, err = tools["Write"].Call(ctx, in)
	require.NoError(t, err, "the main agent")

	guard := mem.Guard(nil)
	call := llm.ToolCall{Name: "Write", Input: in}
	d := guard(sub, call)
	assert.False(t, d.Allow)
	assert.Contains(t, d.Reason, "a sub-agent")
	assert.True(t, guard(ctx, call).Allow)

	_, err = mem.MemoryDir().WithDoor("extraction").Save(ctx, memdir.Memory{File: "team/x.md", Name: "X", Description: "x", Type: memdir.TypeProject, Body: "x"})
	assert.ErrorIs(t, err, memdir.ErrNotMainAgent)
}

package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const auto = "/c/projects/p/memory"

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(e Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }
func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		s := string(e.Kind)
		if e.Reason != "" {
			s += ":" + e.Reason
		}
		if e.Trailing {
			s += "(trailing)"
		}
		out = append(out, s)
	}
	return out
}

func newExtractor(t *testing.T, model llm.Model, mutate func(*Options)) (*Extractor, *recorder, afero.Fs) {
	t.Helper()
	fsys := afero.NewMemMapFs()
	require.NoError(t, fsys.MkdirAll(auto, 0o755))
	rec := &recorder{}
	cfg := Options{Observer: rec.observe}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(mustDir(t, fsys, auto), model, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e, rec, fsys
}

func user(id, text string) llm.Message {
	return llm.Message{ID: id, Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(text)}}
}
func assistant(id, text string) llm.Message {
	return llm.Message{ID: id, Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(text)}}
}
func toolCall(id, name string, input map[string]any) llm.Message {
	raw, _ := json.Marshal(input)
	return llm.Message{ID: id, Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(id+"-t", name, raw)}}
}

var convo = []llm.Message{
	user("u1", "Never mock the database in integration tests please"),
	assistant("a1", "Understood."),
}

func saveScript() *llmtest.Model {
	return llmtest.New(
		llmtest.ToolUse("t1", "Write", map[string]any{"file_path": "/etc/cron.d/evil", "content": "x"}),
		llmtest.ToolUse("t2", "Write", map[string]any{"file_path": auto + "/testing_policy.md",
			"content": "---\nname: Testing policy\ndescription: no DB mocks\ntype: feedback\n---\nNever mock the DB.\n"}),
		llmtest.ToolUse("t3", "Write", map[string]any{"file_path": auto + "/MEMORY.md", "content": "- [Testing policy](testing_policy.md) — no DB mocks\n"}),
		llmtest.Text("Saved the testing policy."),
	)
}

func TestRunSavesAndAdvancesCursor(t *testing.T) {
	model := saveScript()
	e, rec, fsys := newExtractor(t, model, nil)
	e.OnTurnEnd(context.Background(), convo, TurnInfo{})
	require.NoError(t, e.Drain(context.Background()))
	assert.Equal(t, []string{"started", "finished"}, rec.kinds())
	fin := rec.events[1]
	assert.Equal(t, []string{auto + "/testing_policy.md", auto + "/MEMORY.md"}, fin.Files)
	assert.Equal(t, 4, fin.Turns)
	assert.Positive(t, fin.Usage.InputTokens)
	assert.Equal(t, "a1", e.Cursor())
	_, err := fsys.Stat("/etc/cron.d/evil")
	assert.Error(t, err, "the permission rule stopped the write outside")

	req := model.Requests()[0]
	assert.Equal(t, llm.PurposeExtractMemories, req.Purpose)
	assert.Contains(t, req.Messages[0].Text(), "user: Never mock the database")
	assert.Contains(t, req.Messages[0].Text(), "Existing memories: none yet.")
	denied := model.Requests()[1].Messages[2].Content[0]
	assert.True(t, denied.IsError)
	assert.Contains(t, denied.Text, "Permission denied")

	// The next turn sees the manifest and only the new messages.
	model.Add(llmtest.Text("Nothing to save."))
	next := append(append([]llm.Message{}, convo...), user("u2", "Also deploys only happen on Tuesdays"), assistant("a2", "Noted."))
	e.OnTurnEnd(context.Background(), next, TurnInfo{})
	require.NoError(t, e.Drain(context.Background()))
	prompt := model.Requests()[4].Messages[0].Text()
	assert.Contains(t, prompt, "[feedback] testing_policy.md")
	assert.Contains(t, prompt, "Tuesdays")
	assert.NotContains(t, prompt, "Never mock", "messages before the cursor are not repeated")
	assert.Equal(t, "a2", e.Cursor())

	// The same conversation again: nothing new since the cursor.
	e.OnTurnEnd(context.Background(), next, TurnInfo{})
	require.NoError(t, e.Drain(context.Background()))
	kinds := rec.kinds()
	assert.Equal(t, "skipped:"+SkipNoNewMessages, kinds[len(kinds)-1])
	assert.Len(t, model.Requests(), 5)
}

func TestFailureKeepsCursor(t *testing.T) {
	model := llmtest.New(llmtest.Fail(&llm.APIError{StatusCode: 500}))
	e, rec, _ := newExtractor(t, model, nil)
	e.OnTurnEnd(context.Background(), convo, TurnInfo{})
	require.NoError(t, e.Drain(context.Background()))
	assert.Equal(t, []string{"started", "failed"}, rec.kinds())
	assert.Empty(t, e.Cursor(), "the cursor moves only after success")
	// The same messages are offered again next time.
	model.Add(llmtest.Text("Nothing to save."))
	e.OnTurnEnd(context.Background(), append(append([]llm.Message{}, convo...), user("u2", "and one more thing here"), assistant("a2", "ok")), TurnInfo{})
	require.NoError(t, e.Drain(context.Background()))
	assert.Contains(t, model.Requests()[1].Messages[0].Text(), "Never mock")
	assert.Equal(t, "a2", e.Cursor())
}

func TestSkipPaths(t *testing.T) {
	model := llmtest.New()
	cases := []struct {
		name   string
		cfg    func(*Options)
		msgs   []llm.Message
		info   TurnInfo
		reason string
	}{
		{"sub-agent", nil, convo, TurnInfo{SubAgent: true}, SkipSubAgent},
		{"disabled", func(c *Options) { c.Disabled = true }, convo, TurnInfo{}, SkipDisabled},
		{"remote", func(c *Options) { c.Remote = true }, convo, TurnInfo{}, SkipRemote},
		{"not final", nil, []llm.Message{user("u1", "please do the thing now"), toolCall("a1", "Bash", map[string]any{"command": "ls"})}, TurnInfo{}, SkipNotFinal},
		{"empty", nil, nil, TurnInfo{}, SkipNotFinal},
		{"too short", nil, []llm.Message{user("u1", "ok thanks"), assistant("a1", "Sure.")}, TurnInfo{}, SkipTooShort},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, rec, _ := newExtractor(t, model, c.cfg)
			e.OnTurnEnd(context.Background(), c.msgs, c.info)
			require.NoError(t, e.Drain(context.Background()))
			assert.Equal(t, []string{"skipped:" + c.reason}, rec.kinds())
			assert.Empty(t, e.Cursor())
		})
	}
	assert.Empty(t, model.Requests(), "no skipped turn reaches the model")

	e, rec, _ := newExtractor(t, model, nil)
	require.NoError(t, e.Close())
	require.NoError(t, e.Close(), "a second Close is safe")
	e.OnTurnEnd(context.Background(), convo, TurnInfo{})
	assert.Equal(t, []string{"skipped:" + SkipClosed}, rec.kinds())
}

func TestMainAgentWroteMemory(t *testing.T) {
	model := llmtest.New()
	e, rec, _ := newExtractor(t, model, nil)
	msgs := []llm.Message{
		user("u1", "remember that I prefer short answers"),
		toolCall("a1", "Write", map[string]any{"file_path": auto + "/user_prefs.md", "content": "x"}),
		user("r1", ""),
		assistant("a2", "Saved."),
	}
	e.OnTurnEnd(context.Background(), msgs, TurnInfo{})
	assert.Equal(t, []string{"skipped:" + SkipMainAgentWrote}, rec.kinds())
	assert.Equal(t, "a2", e.Cursor(), "the cursor moves past what the main agent wrote")
	assert.Empty(t, model.Requests())

	// A write elsewhere does not count.
	e2, rec2, _ := newExtractor(t, llmtest.New(llmtest.Text("Nothing to save.")), nil)
	e2.OnTurnEnd(context.Background(), []llm.Message{user("u1", "write the config file please"),
		toolCall("a1", "Write", map[string]any{"file_path": "/work/app.yaml", "content": "x"}), assistant("a2", "Done.")}, TurnInfo{})
	require.NoError(t, e2.Drain(context.Background()))
	assert.Equal(t, []string{"started", "finished"}, rec2.kinds())
}

func TestThrottle(t *testing.T) {
	model := llmtest.New(llmtest.Text("Nothing to save."), llmtest.Text("Nothing to save."))
	base := afero.NewMemMapFs()
	require.NoError(t, base.MkdirAll(auto, 0o755))
	fsys := &countingFs{Fs: base}
	rec := &recorder{}
	e, err := New(mustDir(t, fsys, auto), model, Options{EveryNTurns: 2, Observer: rec.observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	var msgs []llm.Message
	var reads []int64
	for i := 0; i < 4; i++ {
		msgs = append(msgs, user(fmt.Sprintf("u%d", i), "here is another long message"), assistant(fmt.Sprintf("a%d", i), "ok"))
		e.OnTurnEnd(context.Background(), msgs, TurnInfo{})
		require.NoError(t, e.Drain(context.Background()))
		reads = append(reads, fsys.opens.Load())
	}
	assert.Equal(t, []string{"skipped:throttled", "started", "finished", "skipped:throttled", "started", "finished"}, rec.kinds())
	assert.Equal(t, "a3", e.Cursor())
	// The memory directory is scanned only after a turn passes the
	// throttle: a throttled turn costs no I/O.
	assert.Zero(t, reads[0], "throttled turn touched the memory directory")
	assert.Positive(t, reads[1], "the run scans the memory directory")
	assert.Equal(t, reads[1], reads[2], "throttled turn touched the memory directory")
	assert.Greater(t, reads[3], reads[2])
}

// countingFs counts every open and stat, to show which turns do I/O.
type countingFs struct {
	afero.Fs
	opens atomic.Int64
}

func (f *countingFs) Open(name string) (afero.File, error) {
	f.opens.Add(1)
	return f.Fs.Open(name)
}

func (f *countingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f.opens.Add(1)
	return f.Fs.OpenFile(name, flag, perm)
}

func (f *countingFs) Stat(name string) (os.FileInfo, error) {
	f.opens.Add(1)
	return f.Fs.Stat(name)
}

// gate is a model whose first call waits for release.
type gate struct {
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	prompts []string
	once    sync.Once
}

func (g *gate) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	g.mu.Lock()
	g.prompts = append(g.prompts, req.Messages[0].Text())
	first := len(g.prompts) == 1
	g.mu.Unlock()
	if first {
		g.once.Do(func() { close(g.started) })
		select {
		case <-g.release:
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
	}
	return llm.Response{Message: llm.Message{Content: []llm.Block{llm.TextBlock("Nothing to save.")}}, StopReason: llm.StopEndTurn}, nil
}

func TestCoalescingUnderConcurrentCalls(t *testing.T) {
	g := &gate{started: make(chan struct{}), release: make(chan struct{})}
	e, rec, _ := newExtractor(t, g, nil)
	base := []llm.Message{user("u0", "first message with enough words"), assistant("a0", "ok")}
	e.OnTurnEnd(context.Background(), base, TurnInfo{})
	<-g.started

	var wg sync.WaitGroup
	for i := 1; i <= 8; i++ {
		wg.Go(func() {
			msgs := append([]llm.Message{}, base...)
			for j := 1; j <= i; j++ {
				msgs = append(msgs, user(fmt.Sprintf("u%d", j), fmt.Sprintf("follow-up number %d with words", j)), assistant(fmt.Sprintf("a%d", j), "ok"))
			}
			e.OnTurnEnd(context.Background(), msgs, TurnInfo{})
		})
	}
	wg.Wait()
	// The latest stash must be the longest: send it last, deterministically.
	final := append([]llm.Message{}, base...)
	for j := 1; j <= 9; j++ {
		final = append(final, user(fmt.Sprintf("u%d", j), fmt.Sprintf("follow-up number %d with words", j)), assistant(fmt.Sprintf("a%d", j), "ok"))
	}
	e.OnTurnEnd(context.Background(), final, TurnInfo{})
	close(g.release)
	require.NoError(t, e.Drain(context.Background()))

	g.mu.Lock()
	defer g.mu.Unlock()
	require.Len(t, g.prompts, 2, "exactly one trailing run")
	assert.NotContains(t, g.prompts[1], "first message", "the trailing run covers only messages after the cursor")
	assert.Contains(t, g.prompts[1], "follow-up number 1 ")
	assert.Contains(t, g.prompts[1], "follow-up number 9 ")
	assert.Equal(t, "a9", e.Cursor())
	kinds := rec.kinds()
	assert.Equal(t, 9, strings.Count(strings.Join(kinds, ","), "coalesced"))
	assert.Equal(t, "finished(trailing)", kinds[len(kinds)-1])
}

func TestDrainTimeoutAndClose(t *testing.T) {
	before := runtime.NumGoroutine()
	started := make(chan struct{})
	model := llmtest.New(llmtest.Step{Block: true, Started: started})
	e, rec, _ := newExtractor(t, model, func(c *Options) { c.DrainTimeout = 50 * time.Millisecond })
	e.OnTurnEnd(context.Background(), convo, TurnInfo{})
	<-started
	start := time.Now()
	err := e.Drain(context.Background())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, e.Drain(ctx), context.DeadlineExceeded)

	require.NoError(t, e.Close())
	assert.Contains(t, rec.kinds(), "failed")
	assert.Empty(t, e.Cursor())
	require.NoError(t, e.Drain(context.Background()), "nothing in flight after Close")
	for i := 0; i < 200 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "no goroutine outlives Close")
}

func TestTeamRoutingInPrompt(t *testing.T) {
	assert.Contains(t, systemPrompt(auto, true), auto+"/team/")
	assert.NotContains(t, systemPrompt(auto, false), "/team/")
	long := []llm.Message{user("u", strings.Repeat("é", 40_000)), assistant("a", "ok")}
	tr := userPrompt(auto, nil, long, transcriptBudget{})
	assert.Less(t, len(tr), maxTranscriptBytes+500)
	assert.Contains(t, tr, "[earlier messages left out]")
}

func TestToolResultsWithinABudget(t *testing.T) {
	turn := []llm.Message{
		user("u", "what port does staging use?"),
		{ID: "a", Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("t1", "Bash", []byte(`{"command":"cat deploy/staging.env"}`))}},
		{ID: "r", Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("t1", "PORT=8443 "+strings.Repeat("x", 5000), false)}},
		assistant("b", "Staging listens on 8443."),
	}
	assert.NotContains(t, userPrompt(auto, nil, turn, transcriptBudget{}), "PORT=8443", "by default tool output is left out")
	with := userPrompt(auto, nil, turn, transcriptBudget{toolResultBytes: 100})
	assert.Contains(t, with, "PORT=8443", "tool output can become memory")
	assert.NotContains(t, with, strings.Repeat("x", 200), "each result cut at its budget")
	assert.Less(t, len(userPrompt(auto, nil, turn, transcriptBudget{maxBytes: 2000, toolResultBytes: 100_000})), 2500, "within the transcript budget")
}

func TestNewRequiresInputs(t *testing.T) {
	_, err := New(nil, llmtest.New(), Options{})
	assert.ErrorIs(t, err, ErrMissingConfig)
	_, err = New(mustDir(t, afero.NewMemMapFs(), auto), nil, Options{})
	assert.True(t, errors.Is(err, ErrMissingConfig))
}

// mustDir is the memory directory object at dir on fsys.
func mustDir(t *testing.T, fsys afero.Fs, dir string) *memdir.Dir {
	t.Helper()
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{})
	require.NoError(t, err)
	return d
}

type traceKey struct{}

func TestRunKeepsTheHostsContextValues(t *testing.T) {
	var seen []any
	model := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		seen = append(seen, ctx.Value(traceKey{}))
		return llm.Response{Message: assistant("x", "nothing to save"), StopReason: llm.StopEndTurn}, nil
	})
	e, _, _ := newExtractor(t, model, nil)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), traceKey{}, "trace-9"))
	e.OnTurnEnd(ctx, convo, TurnInfo{})
	cancel() // the host's turn is over; the run is not cut short
	require.NoError(t, e.Drain(context.Background()))
	assert.Equal(t, []any{"trace-9"}, seen)
}

type levelLog struct {
	mu     sync.Mutex
	levels map[string]slog.Level
}

func (h *levelLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.levels[r.Message] = r.Level
	return nil
}
func (h *levelLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelLog) WithGroup(string) slog.Handler      { return h }

func TestLogLevels(t *testing.T) {
	h := &levelLog{levels: map[string]slog.Level{}}
	failing := llm.ModelFunc(func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, errors.New("boom") })
	e, _, _ := newExtractor(t, failing, func(c *Options) { c.Logger = slog.New(h) })
	e.OnTurnEnd(context.Background(), convo, TurnInfo{SubAgent: true})
	e.OnTurnEnd(context.Background(), convo, TurnInfo{})
	require.NoError(t, e.Drain(context.Background()))
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Equal(t, map[string]slog.Level{"extract: skipped": slog.LevelDebug, "extract: started": slog.LevelInfo, "extract: failed": slog.LevelWarn}, h.levels)
}

// TestHistoryUndoesARun: a run writes a wrong memory and points the index
// at it; rewinding to the run's checkpoint restores the directory.
func TestHistoryUndoesARun(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "memory")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	index := "- [Testing policy](testing_policy.md) — no DB mocks\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(index), 0o644))
	history, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(root, "config"), "extract", filehistory.Options{})
	require.NoError(t, err)

	model := llmtest.New(
		llmtest.ToolUse("t1", "Read", map[string]any{"file_path": dir + "/MEMORY.md"}),
		llmtest.ToolUse("t2", "Write", map[string]any{"file_path": dir + "/deploy_friday.md",
			"content": "---\nname: Deploys\ndescription: deploy on Fridays\ntype: feedback\n---\nAlways deploy on Friday evening.\n"}),
		llmtest.ToolUse("t3", "Edit", map[string]any{"file_path": dir + "/MEMORY.md", "old_string": "no DB mocks\n",
			"new_string": "no DB mocks\n- [Deploys](deploy_friday.md) — deploy on Fridays\n"}),
		llmtest.Text("Saved."),
	)
	rec := &recorder{}
	e, err := New(mustDir(t, afero.NewOsFs(), dir), model, Options{Observer: rec.observe, History: history})
	require.NoError(t, err)
	defer e.Close()
	e.OnTurnEnd(context.Background(), convo, TurnInfo{})
	require.NoError(t, e.Drain(ctx))

	var done Event
	for _, ev := range rec.events {
		if ev.Kind == EventFinished {
			done = ev
		}
	}
	require.NotEmpty(t, done.Checkpoint, "events: %v", rec.kinds())
	assert.Len(t, done.Files, 2)
	_, err = os.Stat(filepath.Join(dir, "deploy_friday.md"))
	require.NoError(t, err, "the run wrote the memory")

	st, err := history.Rewind(ctx, done.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Len(t, st.FilesChanged, 2)
	got, _ := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	assert.Equal(t, index, string(got))
	_, err = os.Stat(filepath.Join(dir, "deploy_friday.md"))
	assert.True(t, os.IsNotExist(err), "the wrong memory is gone")
}

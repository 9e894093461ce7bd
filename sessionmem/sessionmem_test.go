package sessionmem

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/racefs"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/transcript"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock advances only when a waiter asks for time to pass.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}
func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newTracker(t *testing.T, model llm.Model, mutate func(*Options, afero.Fs)) (*Summarizer, afero.Fs, *[]Event) {
	t.Helper()
	fsys := afero.NewMemMapFs()
	var mu sync.Mutex
	events := &[]Event{}
	cfg := Options{ConfigHome: "/c", Cwd: "/work/shop", SessionID: "0b7c9b1e-1234-4c1e-9a55-0c8f6f5b2f10",
		Observer: func(e Event) { mu.Lock(); *events = append(*events, e); mu.Unlock() }}
	if mutate != nil {
		mutate(&cfg, fsys)
	}
	tr, err := New(fsys, model, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Close() })
	return tr, fsys, events
}

func msgs(toolCalls int, lastHasTools bool) []llm.Message {
	out := []llm.Message{{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("do the task")}}}
	for i := 0; i < toolCalls; i++ {
		out = append(out, llm.Message{ID: "a" + string(rune('a'+i)), Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("t", "Bash", json.RawMessage(`{}`))}})
	}
	if !lastHasTools {
		out = append(out, llm.Message{ID: "final", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}})
	}
	return out
}

func TestThresholdEdges(t *testing.T) {
	tr, _, _ := newTracker(t, llmtest.New(), nil)
	assert.False(t, tr.ShouldUpdate(Observation{ContextTokens: 9_999}))
	assert.True(t, tr.ShouldUpdate(Observation{ContextTokens: 10_000}))
	assert.False(t, tr.ShouldUpdate(Observation{ContextTokens: 50_000, SubAgent: true}), "main thread only")

	// After the first update at 10,000 tokens, with the cursor at the end:
	tr.mu.Lock()
	tr.initialized, tr.lastTokens, tr.cursor = true, 10_000, "u1"
	tr.mu.Unlock()
	cases := []struct {
		name   string
		tokens int
		msgs   []llm.Message
		want   bool
	}{
		{"growth 4,999 with tools", 14_999, msgs(5, true), false},
		{"growth 5,000 and 3 tool calls", 15_000, msgs(3, true), true},
		{"growth 5,000 and 2 tool calls", 15_000, msgs(2, true), false},
		{"growth 5,000, 2 tool calls, last turn without tools", 15_000, msgs(2, false), true},
		{"growth 5,000, no tool calls, last turn without tools", 15_000, msgs(0, false), true},
		{"growth 4,999, last turn without tools", 14_999, msgs(0, false), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, tr.ShouldUpdate(Observation{ContextTokens: c.tokens, Messages: c.msgs}))
		})
	}
}

func editStep(path, old, repl string) llmtest.Step {
	return llmtest.ToolUse("e", "Edit", map[string]any{"file_path": path, "old_string": old, "new_string": repl})
}

func TestUpdateCreatesFileAndEdits(t *testing.T) {
	model := llmtest.New()
	tr, fsys, events := newTracker(t, model, nil)
	assert.Equal(t, "/c/projects/-work-shop/0b7c9b1e-1234-4c1e-9a55-0c8f6f5b2f10/session-memory/summary.md", tr.Path())
	model.Add(
		llmtest.ToolUse("w", "Write", map[string]any{"file_path": tr.Path(), "content": "wiped"}),
		editStep("/c/projects/-work-shop/other.md", "a", "b"),
		editStep(tr.Path(), "_A short title for what this session is about._\n", "_A short title for what this session is about._\nRefund retries\n"),
		llmtest.Text("updated"),
	)
	empty, err := tr.IsEmpty()
	require.NoError(t, err)
	assert.True(t, empty)

	conv := append(msgs(1, false), llm.Message{ID: "u2", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("retry refunds on timeout")}})
	conv = append(conv, llm.Message{ID: "a9", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}})
	require.True(t, tr.Observe(context.Background(), Observation{ContextTokens: 12_000, Messages: conv}))
	require.True(t, tr.WaitForUpdate(context.Background()))

	s, err := tr.Summary()
	require.NoError(t, err)
	assert.Contains(t, s, "Refund retries")
	assert.NotContains(t, s, "wiped")
	empty, err = tr.IsEmpty()
	require.NoError(t, err)
	assert.False(t, empty)

	info, err := fsys.Stat(tr.Path())
	require.NoError(t, err)
	assert.Equal(t, "-rw-------", info.Mode().Perm().String())
	dinfo, err := fsys.Stat("/c/projects/-work-shop/0b7c9b1e-1234-4c1e-9a55-0c8f6f5b2f10/session-memory")
	require.NoError(t, err)
	assert.Equal(t, "-rwx------", dinfo.Mode().Perm().String())

	reqs := model.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, llm.PurposeSessionMemory, reqs[0].Purpose)
	prompt := reqs[0].Messages[0].Text()
	assert.Contains(t, prompt, tr.Path())
	assert.Contains(t, prompt, "# Session Title")
	assert.Contains(t, prompt, "retry refunds on timeout")
	// The Write and the Edit of another file were refused with a reason.
	assert.Contains(t, reqs[1].Messages[2].Content[0].Text, "Permission denied: only the Edit tool")
	assert.Contains(t, reqs[2].Messages[4].Content[0].Text, "Permission denied: only "+tr.Path())
	got := *events
	require.Len(t, got, 2)
	assert.Equal(t, EventStarted, got[0].Kind)
	assert.Equal(t, EventFinished, got[1].Kind)
	assert.Equal(t, 12_000, got[1].ContextTokens)
	assert.Positive(t, got[1].Usage.InputTokens)
}

func TestCustomTemplateAndPrompt(t *testing.T) {
	model := llmtest.New(llmtest.Text("nothing new"))
	tr, _, _ := newTracker(t, model, func(c *Options, fsys afero.Fs) {
		c.Template = "# Goal\n_what we want_\n\n# Notes\n_anything else; literal {{notesPath}} stays_\n"
		c.UpdatePrompt = "Edit {{notesPath}}. Notes so far:\n{{currentNotes}}\nEnd."
		c.InitTokens = 100
	})
	require.True(t, tr.Observe(context.Background(), Observation{ContextTokens: 100, Messages: msgs(0, false)}))
	require.True(t, tr.WaitForUpdate(context.Background()))
	s, err := tr.Summary()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s, "# Goal\n"))
	prompt := model.Requests()[0].Messages[0].Text()
	assert.True(t, strings.HasPrefix(prompt, "Edit "+tr.Path()+". Notes so far:\n# Goal"))
	assert.Contains(t, prompt, "literal {{notesPath}} stays", "substitution is one pass: notes are not re-expanded")
	empty, err := tr.IsEmpty()
	require.NoError(t, err)
	assert.True(t, empty, "only the template: counts as empty")
}

func TestCondenseReminder(t *testing.T) {
	long := "# Session Title\n" + strings.Repeat("word ", 2100) + "\n# Worklog\nshort\n"
	r := condenseReminders(long, defaultMaxSectionTokens, defaultMaxTotalTokens)
	assert.Contains(t, r, `"Session Title" is about`)
	assert.NotContains(t, r, "Worklog")
	assert.NotContains(t, r, "in all")
	huge := strings.Repeat("# S\n"+strings.Repeat("x", 7000)+"\n", 8)
	assert.Contains(t, condenseReminders(huge, defaultMaxSectionTokens, defaultMaxTotalTokens), "in all, over the limit of 12000")
	assert.Empty(t, condenseReminders(defaultTemplate, defaultMaxSectionTokens, defaultMaxTotalTokens))
	assert.Equal(t, 3, EstimateTokens("0123456789"))
	assert.Equal(t, 2, EstimateTokens("1234567"))
}

func TestSerialisedAndWaitRules(t *testing.T) {
	started := make(chan struct{})
	model := llmtest.New(llmtest.Step{Block: true, Started: started})
	clock := &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	tr, _, events := newTracker(t, model, func(c *Options, fsys afero.Fs) { c.Now, c.Sleep = clock.Now, clock.Sleep })

	assert.True(t, tr.WaitForUpdate(context.Background()), "nothing running: no wait")
	require.True(t, tr.Observe(context.Background(), Observation{ContextTokens: 10_000, Messages: msgs(0, false)}))
	<-started
	assert.False(t, tr.Observe(context.Background(), Observation{ContextTokens: 30_000, Messages: msgs(5, false)}), "one update at a time")

	begin := clock.Now()
	assert.False(t, tr.WaitForUpdate(context.Background()), "gives up after 15 s")
	waited := clock.Now().Sub(begin)
	assert.GreaterOrEqual(t, waited, 15*time.Second)
	assert.Less(t, waited, 16*time.Second)

	clock.Advance(61 * time.Second)
	before := clock.Now()
	assert.False(t, tr.WaitForUpdate(context.Background()), "an update older than 60 s is not waited for")
	assert.Equal(t, before, clock.Now(), "returned without polling")

	require.NoError(t, tr.Close())
	assert.True(t, tr.WaitForUpdate(context.Background()))
	kinds := []EventKind{}
	for _, e := range *events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []EventKind{EventStarted, EventBusy, EventFailed}, kinds)
	assert.True(t, errors.Is((*events)[2].Err, context.Canceled))
}

func TestSectionsForCompaction(t *testing.T) {
	body := strings.Repeat("a line of notes\n", 1000) // 16,000 chars
	content := "# Current State\n" + body + "# Worklog\n- step one\n"
	got := SectionsForCompaction(content, 0)
	secs := parseSections(got)
	require.Len(t, secs, 2)
	assert.LessOrEqual(t, len(secs[0].Body), defaultMaxSectionChars+len(truncatedMarker)+2)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(secs[0].Body), truncatedMarker))
	for _, l := range strings.Split(strings.TrimSuffix(strings.TrimSpace(secs[0].Body), truncatedMarker), "\n") {
		if l != "" {
			assert.Equal(t, "a line of notes", l, "cut only at line boundaries")
		}
	}
	assert.Equal(t, "- step one", strings.TrimSpace(secs[1].Body))
	assert.Len(t, parseSections(defaultTemplate), 10)
}

func TestNewValidates(t *testing.T) {
	_, err := New(nil, llmtest.New(), Options{ConfigHome: "/c", Cwd: "/w", SessionID: "s"})
	assert.ErrorIs(t, err, ErrMissingConfig)
	_, err = New(afero.NewMemMapFs(), llmtest.New(), Options{ConfigHome: "/c", Cwd: "/w", SessionID: "../x"})
	assert.ErrorIs(t, err, transcript.ErrInvalidSessionID)
}

// TestHistoryUndoesAnUpdate: with Options.History an update can be
// rewound; the first one created the summary, so the rewind removes it.
func TestHistoryUndoesAnUpdate(t *testing.T) {
	model := llmtest.New()
	var history *filehistory.Tracker
	tr, fsys, events := newTracker(t, model, func(c *Options, fsys afero.Fs) {
		var err error
		history, err = filehistory.NewTracker(fsys, "/history", "summary", filehistory.Options{})
		require.NoError(t, err)
		c.History = history
	})
	addTitle(t, model, tr)
	s, err := tr.Summary()
	require.NoError(t, err)
	require.Contains(t, s, "Refund retries")

	checkpoint := finishedCheckpoint(t, *events)
	_, err = history.Rewind(context.Background(), checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	exists, _ := afero.Exists(fsys, tr.Path())
	assert.False(t, exists, "the update created the summary; rewinding removes it")
}

// addTitle has the model write a title into the summary in one update,
// and waits for it.
func addTitle(t *testing.T, model *llmtest.Model, tr *Summarizer) {
	t.Helper()
	model.Add(
		editStep(tr.Path(), "_A short title for what this session is about._\n", "_A short title for what this session is about._\nRefund retries\n"),
		llmtest.Text("updated"),
	)
	conv := append(msgs(1, false), llm.Message{ID: "u2", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("retry refunds on timeout")}})
	conv = append(conv, llm.Message{ID: "a9", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}})
	require.True(t, tr.Observe(context.Background(), Observation{ContextTokens: 12_000, Messages: conv}))
	require.True(t, tr.WaitForUpdate(context.Background()))
}

// finishedCheckpoint is the checkpoint of the last finished update.
func finishedCheckpoint(t *testing.T, events []Event) string {
	t.Helper()
	var checkpoint string
	for _, ev := range events {
		if ev.Kind == EventFinished {
			checkpoint = ev.Checkpoint
		}
	}
	require.NotEmpty(t, checkpoint)
	return checkpoint
}

type valueKey struct{}

func TestObserveKeepsTheCallersValuesAndStopsAfterClose(t *testing.T) {
	var seen []any
	var mu sync.Mutex
	model := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		seen = append(seen, ctx.Value(valueKey{}))
		mu.Unlock()
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}}, StopReason: llm.StopEndTurn}, nil
	})
	tr, fsys, events := newTracker(t, model, nil)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), valueKey{}, "trace-7"))
	require.True(t, tr.Observe(ctx, Observation{ContextTokens: 12_000, Messages: msgs(1, false)}))
	cancel() // the caller's turn ends; the update goes on
	require.True(t, tr.WaitForUpdate(context.Background()))
	mu.Lock()
	assert.Equal(t, []any{"trace-7"}, seen)
	mu.Unlock()

	require.NoError(t, fsys.Remove(tr.Path()))
	require.NoError(t, tr.Close())
	assert.False(t, tr.Observe(context.Background(), Observation{ContextTokens: 99_000, Messages: msgs(9, false)}))
	exists, _ := afero.Exists(fsys, tr.Path())
	assert.False(t, exists, "nothing is created after Close")
	assert.Equal(t, EventClosed, (*events)[len(*events)-1].Kind)
}

// TestUpdateUndoRestoresWhatTheUpdateReplaced: a write that lands while
// a summary update records the file is either replaced by the update
// (and is what a rewind puts back) or comes after it; a rewind never puts
// back a version the update did not replace.
func TestUpdateUndoRestoresWhatTheUpdateReplaced(t *testing.T) {
	model := llmtest.New()
	var history *filehistory.Tracker
	var rfs *racefs.Fs
	const elsewhere = "\nA note written elsewhere.\n"
	tr, fsys, events := newTracker(t, model, func(c *Options, fsys afero.Fs) {
		path := SummaryPath(c.ConfigHome, c.Cwd, c.SessionID)
		require.NoError(t, fsys.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, afero.WriteFile(fsys, path, []byte(defaultTemplate), 0o600))
		rfs = racefs.New(fsys, path, func() error {
			d, err := memdir.NewDir(fsys, filepath.Dir(path), memdir.DirOptions{})
			if err != nil {
				return err
			}
			_, err = d.Gate().WriteFile(context.Background(), path, []byte(defaultTemplate+elsewhere), 0o600)
			return err
		})
		var err error
		history, err = filehistory.NewTracker(rfs, "/history", "summary", filehistory.Options{})
		require.NoError(t, err)
		c.History = history
	})
	addTitle(t, model, tr)
	require.True(t, rfs.Ran(), "the concurrent write ran")
	require.NoError(t, rfs.Wait())

	checkpoint := finishedCheckpoint(t, *events)
	read := func() string { b, _ := afero.ReadFile(fsys, tr.Path()); return string(b) }
	replaced := defaultTemplate
	if read() != defaultTemplate+elsewhere {
		replaced = defaultTemplate + elsewhere // it landed first: the update replaced it
	}
	_, err := history.Rewind(context.Background(), checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, replaced, read(), "the rewind puts back exactly what the update replaced")
}

package sessionmem

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/internal/httpretry"
	"github.com/agentmem-sdk/agentmem/internal/jobs"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/memtools"
	"github.com/agentmem-sdk/agentmem/transcript"
	"github.com/spf13/afero"
)

// Defaults of the update rules.
const (
	defaultInitTokens       = 10_000
	defaultMinGrowthTokens  = 5_000
	defaultMinToolCalls     = 3
	defaultMaxSectionTokens = 2_000
	defaultMaxTotalTokens   = 12_000
	defaultWaitTimeout      = 15 * time.Second
	defaultStaleAfter       = 60 * time.Second
	// defaultMaxTurns bounds an update run.
	defaultMaxTurns = 5
	// pollInterval is how often WaitForUpdate looks.
	pollInterval = 100 * time.Millisecond
)

// EventKind names what an Event reports.
type EventKind string

// The event kinds.
const (
	EventStarted  EventKind = "started"
	EventFinished EventKind = "finished"
	EventFailed   EventKind = "failed"
	// EventBusy: a threshold was crossed while an update ran; nothing
	// started (updates are serialised).
	EventBusy EventKind = "busy"
	// EventClosed: Observe was called after Close; nothing started.
	EventClosed EventKind = "closed"
)

// Event reports an update.
type Event struct {
	Kind  EventKind
	Usage llm.Usage
	Turns int
	Err   error
	// ContextTokens is the context size that triggered the update.
	ContextTokens int
	// Checkpoint names the snapshot taken before the update
	// (Options.History); rewinding to it undoes the update.
	Checkpoint string
}

// Options configures a Summarizer (New takes the filesystem and the
// model). ConfigHome, Cwd and SessionID are required; every numeric
// option counts only when positive.
type Options struct {
	// ConfigHome, Cwd and SessionID place the summary file (SummaryPath).
	ConfigHome string
	Cwd        string
	SessionID  string
	// Template replaces the default ten-section template for a new summary
	// file.
	Template string
	// UpdatePrompt replaces the default update prompt; {{currentNotes}} and
	// {{notesPath}} are substituted.
	UpdatePrompt string
	// InitTokens is the context size of the first update (default
	// 10,000); MinGrowthTokens the growth since the last one (default
	// 5,000) and MinToolCalls the tool calls since (default 3) before
	// the next.
	InitTokens      int
	MinGrowthTokens int
	MinToolCalls    int
	// MaxSectionTokens and MaxTotalTokens are the sizes past which an
	// update is asked to condense (defaults 2,000 per section, 12,000
	// for the file).
	MaxSectionTokens int
	MaxTotalTokens   int
	// MaxTurns bounds an update run (default 5).
	MaxTurns int
	// WaitTimeout bounds WaitForUpdate (default 15 s); an update running
	// for more than StaleAfter is presumed stuck and not waited for
	// (default 60 s).
	WaitTimeout time.Duration
	StaleAfter  time.Duration
	// Now is the clock (default time.Now); Sleep waits between the polls
	// of WaitForUpdate (default a timer honouring ctx).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// History, when set, takes a snapshot (Event.Checkpoint) before each
	// update and tracks the summary file in it, so the update can be
	// rewound. Give the summary its own filehistory.Tracker.
	History  *filehistory.Tracker
	Observer func(Event)
	Logger   *slog.Logger
}

// Observation is what the host reports after each model response.
type Observation struct {
	// ContextTokens is the size of the conversation now.
	ContextTokens int
	// Messages is the conversation so far.
	Messages []llm.Message
	// SubAgent is true for a sub-agent's response: only the main thread
	// keeps a summary.
	SubAgent bool
}

// Summarizer keeps one session's summary file up to date. Safe for
// concurrent use; Close stops it and waits.
type Summarizer struct {
	fs    afero.Fs
	model llm.Model
	cfg   Options
	path  string
	log   *slog.Logger
	jobs  *jobs.Runner // one update at a time

	mu          sync.Mutex
	initialized bool
	lastTokens  int
	cursor      string
	closed      bool
	startedAt   time.Time
}

// ErrMissingConfig is returned by New without a required field.
var ErrMissingConfig = errors.New("sessionmem: New needs a filesystem, a model, and Options.ConfigHome, Cwd and SessionID")

// New returns a Summarizer that keeps its summary on fsys and updates it with
// model. It creates nothing until the first update.
func New(fsys afero.Fs, model llm.Model, cfg Options) (*Summarizer, error) {
	if fsys == nil || model == nil || cfg.ConfigHome == "" || cfg.Cwd == "" || cfg.SessionID == "" {
		return nil, ErrMissingConfig
	}
	if !transcript.IsSessionID(cfg.SessionID) {
		return nil, fmt.Errorf("sessionmem: %w", transcript.ErrInvalidSessionID)
	}
	defaults.IfUnset(&cfg.InitTokens, defaultInitTokens)
	defaults.IfUnset(&cfg.MinGrowthTokens, defaultMinGrowthTokens)
	defaults.IfUnset(&cfg.MinToolCalls, defaultMinToolCalls)
	defaults.IfUnset(&cfg.MaxSectionTokens, defaultMaxSectionTokens)
	defaults.IfUnset(&cfg.MaxTotalTokens, defaultMaxTotalTokens)
	defaults.IfUnset(&cfg.MaxTurns, defaultMaxTurns)
	defaults.IfUnset(&cfg.WaitTimeout, defaultWaitTimeout)
	defaults.IfUnset(&cfg.StaleAfter, defaultStaleAfter)
	cfg.Template = cmp.Or(cfg.Template, defaultTemplate)
	cfg.UpdatePrompt = cmp.Or(cfg.UpdatePrompt, defaultUpdatePrompt)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = httpretry.Sleep
	}
	log := defaults.Logger(cfg.Logger)
	return &Summarizer{fs: fsys, model: model, cfg: cfg, path: SummaryPath(cfg.ConfigHome, cfg.Cwd, cfg.SessionID), log: log, jobs: jobs.New()}, nil
}

// SummaryPath returns
// <configHome>/projects/<SanitizePath(cwd)>/<sessionID>/session-memory/summary.md.
func SummaryPath(configHome, cwd, sessionID string) string {
	return filepath.Join(configHome, memdir.ProjectsDirName, memdir.SanitizePath(cwd), sessionID, "session-memory", "summary.md")
}

// Path returns the summary file's path.
func (t *Summarizer) Path() string { return t.path }

// ShouldUpdate applies the thresholds to an observation without changing
// anything: the first update once the context reaches InitTokens; later
// ones when it grew by MinGrowthTokens since the last update and either
// MinToolCalls tool calls were made since then or the last assistant turn
// made none.
func (t *Summarizer) ShouldUpdate(obs Observation) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.shouldLocked(obs)
}

func (t *Summarizer) shouldLocked(obs Observation) bool {
	if obs.SubAgent {
		return false
	}
	if !t.initialized {
		return obs.ContextTokens >= t.cfg.InitTokens
	}
	if obs.ContextTokens-t.lastTokens < t.cfg.MinGrowthTokens {
		return false
	}
	return toolCallsAfter(obs.Messages, t.cursor) >= t.cfg.MinToolCalls || lastAssistantUsedNoTools(obs.Messages)
}

// Observe is called by the host after each main-thread model response. When
// a threshold is crossed and no update is running it moves the cursor to
// the last message and starts an update in the background, with ctx's
// values but not its cancellation (the update ends with Close); it reports
// whether it did. After Close it starts nothing.
func (t *Summarizer) Observe(ctx context.Context, obs Observation) bool {
	t.mu.Lock()
	closed, should := t.closed, !t.closed && t.shouldLocked(obs)
	if closed {
		t.emitLocked(ctx, Event{Kind: EventClosed, ContextTokens: obs.ContextTokens})
	}
	t.mu.Unlock()
	if !should {
		return false
	}
	// The runner calls prepare with its lock held, then this one's: the
	// thresholds are checked again against a settled state.
	prepare := func(bool) func(context.Context) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.closed || !t.shouldLocked(obs) {
			return nil
		}
		fresh := llm.MessagesAfter(obs.Messages, t.cursor)
		t.initialized = true
		t.lastTokens = obs.ContextTokens
		if n := len(obs.Messages); n > 0 {
			t.cursor = obs.Messages[n-1].ID
		}
		t.startedAt = t.cfg.Now()
		return func(ctx context.Context) { t.update(ctx, fresh, obs.ContextTokens) }
	}
	switch t.jobs.Try(ctx, prepare) {
	case jobs.Started:
		return true
	case jobs.Busy:
		t.emit(ctx, Event{Kind: EventBusy, ContextTokens: obs.ContextTokens})
	case jobs.Closed:
		t.emit(ctx, Event{Kind: EventClosed, ContextTokens: obs.ContextTokens})
	}
	return false
}

func (t *Summarizer) update(ctx context.Context, fresh []llm.Message, tokens int) {
	t.emit(ctx, Event{Kind: EventStarted, ContextTokens: tokens})
	res, checkpoint, err := t.run(ctx, fresh)
	if err != nil {
		t.emit(ctx, Event{Kind: EventFailed, Err: err, Usage: res.Usage, Turns: res.Turns, ContextTokens: tokens, Checkpoint: checkpoint})
	} else {
		t.emit(ctx, Event{Kind: EventFinished, Usage: res.Usage, Turns: res.Turns, ContextTokens: tokens, Checkpoint: checkpoint})
	}
}

// run performs one update: make sure the file exists, then let the model
// edit it.
func (t *Summarizer) run(ctx context.Context, fresh []llm.Message) (_ llm.Result, checkpoint string, _ error) {
	if t.cfg.History != nil {
		checkpoint = filehistory.CheckpointID("session-summary", t.cfg.Now())
		if err := t.cfg.History.MakeSnapshot(ctx, checkpoint); err != nil {
			return llm.Result{}, "", fmt.Errorf("sessionmem: checkpoint before the update: %w", err)
		}
	}
	// The summary's folder, with the history: every write into it (the
	// template, the model's edits) records the file's version under the
	// write's lock, so a rewind puts back exactly what the update
	// replaced, and removes a summary this update created.
	dir, err := memdir.NewDir(t.fs, filepath.Dir(t.path), memdir.DirOptions{})
	if err != nil {
		return llm.Result{}, checkpoint, err
	}
	dir = dir.WithHistory(t.cfg.History)
	if err := t.ensureFile(ctx, dir); err != nil {
		return llm.Result{}, checkpoint, err
	}
	notes, err := afero.ReadFile(t.fs, t.path)
	if err != nil {
		return llm.Result{}, checkpoint, err
	}
	// The prompt shows the model the whole file, which counts as its read:
	// its edits pass read-before-write unless the file changes meanwhile.
	reads := filehistory.NewReadState(filehistory.ReadStateOptions{})
	reads.RecordRead(filepath.Clean(t.path), notes, filehistory.View{})
	tools, err := memtools.New(dir, memtools.Options{ReadState: reads})
	if err != nil {
		return llm.Result{}, checkpoint, err
	}
	prompt := fill(t.cfg.UpdatePrompt, t.path, string(notes)) +
		condenseReminders(string(notes), t.cfg.MaxSectionTokens, t.cfg.MaxTotalTokens) +
		"\nThe new part of the conversation:\n\n" + llm.RenderTranscript(fresh, llm.TranscriptOptions{MaxBytes: 40 << 10})
	res, err := llm.RunAgent(ctx, t.model, llm.Task{
		Purpose: llm.PurposeSessionMemory,
		System:  "You maintain a session's notes file. Use only the Edit tool on " + t.path + ".",
		Prompt:  prompt,
		// Every memory tool is offered; the permission rule allows one: Edit
		// on this file. A model that tries another sees why it was refused.
		Tools:      tools.Tools(),
		Permission: memtools.SessionPermission(t.path),
		MaxTurns:   t.cfg.MaxTurns,
	})
	if errors.Is(err, llm.ErrMaxTurns) {
		err = nil
	}
	return res, checkpoint, err
}

// ensureFile creates the summary from the template: the directory with
// mode 0700, the file exclusively with mode 0600.
func (t *Summarizer) ensureFile(ctx context.Context, dir *memdir.Dir) error {
	if err := t.fs.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return fmt.Errorf("sessionmem: create the summary directory: %w", err)
	}
	_, err := dir.Gate().UpdateFile(ctx, t.path, func(_ []byte, exists bool) ([]byte, error) {
		if exists {
			return nil, errSummaryExists // nothing to write, nothing recorded
		}
		return []byte(t.cfg.Template), nil
	}, 0o600)
	if err != nil && !errors.Is(err, errSummaryExists) {
		return fmt.Errorf("sessionmem: create the summary: %w", err)
	}
	return nil
}

// errSummaryExists stops ensureFile's write of a summary that exists.
var errSummaryExists = errors.New("sessionmem: the summary exists")

// WaitForUpdate waits for an update in flight, polling, for at most
// WaitTimeout; it does not wait for one that started more than StaleAfter
// ago (it is presumed stuck). It reports whether no update is running when
// it returns.
func (t *Summarizer) WaitForUpdate(ctx context.Context) bool {
	deadline := t.cfg.Now().Add(t.cfg.WaitTimeout)
	for {
		running := t.jobs.Running()
		t.mu.Lock()
		started := t.startedAt
		t.mu.Unlock()
		now := t.cfg.Now()
		switch {
		case !running:
			return true
		case now.Sub(started) > t.cfg.StaleAfter, !now.Before(deadline):
			return false
		}
		if t.cfg.Sleep(ctx, pollInterval) != nil {
			return false
		}
	}
}

// Summary returns the summary's content ("" when it does not exist yet).
func (t *Summarizer) Summary() (string, error) {
	data, err := afero.ReadFile(t.fs, t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(data), err
}

// IsEmpty reports whether the summary holds nothing beyond the template
// (or does not exist).
func (t *Summarizer) IsEmpty() (bool, error) {
	s, err := t.Summary()
	if err != nil {
		return false, err
	}
	return s == "" || strings.TrimSpace(s) == strings.TrimSpace(t.cfg.Template), nil
}

// Close cancels a running update and waits for it. A second Close is a
// no-op.
func (t *Summarizer) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.jobs.Close()
	return nil
}

func (t *Summarizer) emit(ctx context.Context, ev Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emitLocked(ctx, ev)
}

// emitLocked reports an event; the caller holds t.mu, so events keep their
// order. Observers must not block or call the Summarizer.
func (t *Summarizer) emitLocked(ctx context.Context, ev Event) {
	attrs := []any{"event", "sessionmem_" + string(ev.Kind), "context_tokens", ev.ContextTokens}
	if ev.Err != nil {
		attrs = append(attrs, "error", ev.Err)
	}
	level := slog.LevelDebug // busy, closed
	switch ev.Kind {
	case EventFailed:
		level = slog.LevelWarn
	case EventStarted, EventFinished:
		level = slog.LevelInfo
	}
	t.log.Log(ctx, level, "sessionmem: "+string(ev.Kind), attrs...)
	if t.cfg.Observer != nil {
		t.cfg.Observer(ev)
	}
}

func toolCallsAfter(msgs []llm.Message, cursor string) int {
	n := 0
	for _, m := range llm.MessagesAfter(msgs, cursor) {
		if m.Role == llm.RoleAssistant {
			n += len(m.ToolUses())
		}
	}
	return n
}

func lastAssistantUsedNoTools(msgs []llm.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			return len(msgs[i].ToolUses()) == 0
		}
	}
	return false
}

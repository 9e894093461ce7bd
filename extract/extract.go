package extract

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/jobs"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/memtools"
)

// Defaults.
const (
	// defaultMaxTurns bounds the extraction agent.
	defaultMaxTurns = 5
	// DefaultDrainTimeout is how long Drain waits when its context has no
	// deadline.
	DefaultDrainTimeout = 60 * time.Second
	// minUserWords is how many words a new user message needs for a turn
	// to be worth extracting from.
	minUserWords = 3
)

// Reasons a turn is skipped.
const (
	SkipClosed         = "closed"
	SkipSubAgent       = "sub_agent"
	SkipDisabled       = "disabled"
	SkipRemote         = "remote"
	SkipNotFinal       = "not_final"
	SkipNoNewMessages  = "no_new_messages"
	SkipTooShort       = "too_short"
	SkipMainAgentWrote = "main_agent_wrote"
	SkipThrottled      = "throttled"
)

// EventKind names what an Event reports.
type EventKind string

// The event kinds.
const (
	EventSkipped   EventKind = "skipped"
	EventCoalesced EventKind = "coalesced"
	EventStarted   EventKind = "started"
	EventFinished  EventKind = "finished"
	EventFailed    EventKind = "failed"
)

// Event reports what the Extractor did with a turn.
type Event struct {
	Kind EventKind
	// Reason is why a turn was skipped.
	Reason string
	// Trailing marks the run that follows a run, for coalesced turns.
	Trailing bool
	// Messages is how many new messages a run covered.
	Messages int
	// Files are the memory files a finished run wrote.
	Files []string
	// Checkpoint names the snapshot taken before the run (Options.History);
	// rewinding to it undoes the run.
	Checkpoint string
	Usage      llm.Usage
	Turns      int
	Err        error
}

// Options configures an Extractor. The zero value of each field means its
// default.
type Options struct {
	// Team tells the prompt that AutoDir/team/ is shared and how to route.
	Team bool
	// Disabled and Remote skip every turn (auto memory off; a remote
	// session without persistent memory).
	Disabled bool
	Remote   bool
	// EveryNTurns runs extraction on every Nth eligible turn (default 1).
	EveryNTurns int
	// MaxTurns bounds the extraction agent (default 5).
	MaxTurns int
	// TranscriptBytes bounds the conversation text the extraction model
	// reads per run, newest first (default 60 KiB).
	TranscriptBytes int
	// ToolResultBytes lets tool output become memory: each tool result of
	// the new turn is shown to the extraction model up to this many bytes,
	// within TranscriptBytes (default 0: tool results are left out, as
	// Claude Code does).
	ToolResultBytes int
	// DrainTimeout is Drain's soft limit when its ctx has no deadline
	// (default 60 s).
	DrainTimeout time.Duration
	// History, when set, makes every run undoable: before the run's tools
	// write, it takes a snapshot named Event.Checkpoint ("extract-" and the
	// run's start time), and every file the tools then change is tracked
	// in it, so History.Rewind(ctx, checkpoint, ...) puts the memory
	// directory back as it was. Give the extractor its own Tracker (a
	// tracker records writes in its newest snapshot).
	History *filehistory.Tracker
	// Observer receives every Event; it must not block.
	Observer func(Event)
	// Logger receives the same events as log records; nil discards them.
	Logger *slog.Logger
}

// TurnInfo describes the turn that just ended.
type TurnInfo struct {
	// SubAgent is true for a sub-agent's turn: only the main agent's turns
	// are extracted.
	SubAgent bool
	// Prefix, when set, is the main agent's system prompt and tools: the
	// run sends them as they are (so it reads the parent's prompt cache)
	// and puts its own instructions in its first user message. Calls to
	// the parent's tools that are not memory tools are refused.
	Prefix *llm.Prefix
}

// Extractor saves what a conversation taught the agent, in the
// background, after each main-agent turn. Create one per session. It is
// safe for concurrent use; Close stops it and waits.
type Extractor struct {
	dir   *memdir.Dir
	model llm.Model
	cfg   Options
	log   *slog.Logger
	jobs  *jobs.Runner // one run at a time; a turn during a run is held

	mu     sync.Mutex
	cursor string
	turns  int
	closed bool
}

// ErrMissingConfig is returned by New without the memory directory or a
// model.
var ErrMissingConfig = errors.New("extract: New needs the memory directory (memdir.NewDir) and a model")

// New returns an Extractor that saves memories into dir (the auto-memory
// directory; its team/ is written only through the secret guard), through
// dir's write gate, with model running the extraction agent.
func New(dir *memdir.Dir, model llm.Model, cfg Options) (*Extractor, error) {
	if dir == nil || model == nil {
		return nil, ErrMissingConfig
	}
	defaults.IfUnset(&cfg.EveryNTurns, 1)
	defaults.IfUnset(&cfg.MaxTurns, defaultMaxTurns)
	defaults.IfUnset(&cfg.DrainTimeout, DefaultDrainTimeout)
	log := defaults.Logger(cfg.Logger)
	// Its writes into shared memory go with its own door unless the
	// host named one.
	dir = dir.WithDoor(teamwire.DoorExtraction)
	return &Extractor{dir: dir, model: model, cfg: cfg, log: log, jobs: jobs.New()}, nil
}

// Cursor returns the ID of the last message a successful run covered.
func (e *Extractor) Cursor() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cursor
}

// OnTurnEnd is called by the host when the main agent ends a turn, with
// the conversation so far. It returns at once; the extraction, if any,
// runs in the background with ctx's values (not its cancellation: the run
// ends with Close). A call while a run is in flight is coalesced: the
// latest conversation (and its ctx) is kept and one trailing run covers
// what the first did not.
func (e *Extractor) OnTurnEnd(ctx context.Context, msgs []llm.Message, info TurnInfo) {
	switch {
	case info.SubAgent:
		e.emit(ctx, Event{Kind: EventSkipped, Reason: SkipSubAgent})
		return
	case e.cfg.Disabled:
		e.emit(ctx, Event{Kind: EventSkipped, Reason: SkipDisabled})
		return
	case e.cfg.Remote:
		e.emit(ctx, Event{Kind: EventSkipped, Reason: SkipRemote})
		return
	case !endsWithFinalAnswer(msgs):
		e.emit(ctx, Event{Kind: EventSkipped, Reason: SkipNotFinal})
		return
	}
	msgs = append([]llm.Message(nil), msgs...)
	e.mu.Lock()
	closed := e.closed
	if closed {
		e.emitLocked(ctx, Event{Kind: EventSkipped, Reason: SkipClosed})
	}
	e.mu.Unlock()
	if closed {
		return
	}
	// The runner calls prepare (and onHeld) with its lock held, then this
	// one's: the per-turn rules run against a settled state.
	prepare := func(held bool) func(context.Context) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if held && e.closed {
			return nil
		}
		fresh, ok := e.eligibleLocked(ctx, msgs, held)
		if !ok {
			return nil
		}
		return func(ctx context.Context) { e.run(ctx, msgs, fresh, held, info.Prefix) }
	}
	if e.jobs.Offer(ctx, prepare, func() { e.emit(ctx, Event{Kind: EventCoalesced}) }) == jobs.Closed {
		e.emit(ctx, Event{Kind: EventSkipped, Reason: SkipClosed})
	}
}

// eligibleLocked applies the per-turn rules and returns the new messages.
func (e *Extractor) eligibleLocked(ctx context.Context, msgs []llm.Message, trailing bool) ([]llm.Message, bool) {
	fresh := llm.MessagesAfter(msgs, e.cursor)
	if len(fresh) == 0 {
		e.emitLocked(ctx, Event{Kind: EventSkipped, Reason: SkipNoNewMessages, Trailing: trailing})
		return nil, false
	}
	if e.mainAgentWroteMemory(fresh) {
		// The main agent saved memory itself this turn: nothing to add, and
		// later runs start after what it wrote.
		e.cursor = msgs[len(msgs)-1].ID
		e.emitLocked(ctx, Event{Kind: EventSkipped, Reason: SkipMainAgentWrote, Trailing: trailing})
		return nil, false
	}
	if !hasSubstantialUserMessage(fresh) {
		e.emitLocked(ctx, Event{Kind: EventSkipped, Reason: SkipTooShort, Trailing: trailing})
		return nil, false
	}
	if !trailing {
		e.turns++
		if e.turns < e.cfg.EveryNTurns {
			e.emitLocked(ctx, Event{Kind: EventSkipped, Reason: SkipThrottled})
			return nil, false
		}
		e.turns = 0
	}
	return fresh, true
}

// run extracts from fresh (a trailing run covers a turn that ended during
// the run before it) and moves the cursor past msgs when it succeeds.
func (e *Extractor) run(ctx context.Context, msgs, fresh []llm.Message, trailing bool, prefix *llm.Prefix) {
	e.emit(ctx, Event{Kind: EventStarted, Trailing: trailing, Messages: len(fresh)})
	files, checkpoint, res, err := e.extract(ctx, fresh, prefix)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.emitLocked(ctx, Event{Kind: EventFailed, Trailing: trailing, Err: err, Files: files, Checkpoint: checkpoint, Usage: res.Usage, Turns: res.Turns})
		return
	}
	e.cursor = msgs[len(msgs)-1].ID
	e.emitLocked(ctx, Event{Kind: EventFinished, Trailing: trailing, Files: files, Checkpoint: checkpoint, Usage: res.Usage, Turns: res.Turns, Messages: len(fresh)})
}

// extract runs the forked agent over the new messages.
func (e *Extractor) extract(ctx context.Context, fresh []llm.Message, prefix *llm.Prefix) (files []string, checkpoint string, _ llm.Result, _ error) {
	headers, err := memdir.ScanMemoryFiles(ctx, e.dir.FS(), e.dir.Path(), memdir.ScanOptions{})
	if err != nil {
		return nil, "", llm.Result{}, err
	}
	if e.cfg.History != nil {
		checkpoint = filehistory.CheckpointID("extract", time.Now())
		if err := e.cfg.History.MakeSnapshot(ctx, checkpoint); err != nil {
			return nil, "", llm.Result{}, fmt.Errorf("extract: checkpoint before the run: %w", err)
		}
	}
	tools, err := memtools.New(e.dir.WithHistory(e.cfg.History), memtools.Options{})
	if err != nil {
		return nil, checkpoint, llm.Result{}, err
	}
	task := llm.Task{
		Purpose:    llm.PurposeExtractMemories,
		System:     systemPrompt(e.dir.Path(), e.cfg.Team),
		Prompt:     userPrompt(e.dir.Path(), headers, fresh, transcriptBudget{e.cfg.TranscriptBytes, e.cfg.ToolResultBytes}),
		Tools:      tools.Tools(),
		Permission: memtools.ExtractPermission(e.dir, nil),
		MaxTurns:   e.cfg.MaxTurns,
	}
	if prefix != nil {
		task.Prompt = task.System + "\n\n" + task.Prompt
		task.System = prefix.System
		task.Tools = forkTools(prefix.Tools, task.Tools)
	}
	res, err := llm.RunAgent(ctx, e.model, task)
	if errors.Is(err, llm.ErrMaxTurns) {
		err = nil // a run that used all its turns still saved what it wrote
	}
	return tools.Written(), checkpoint, res, err
}

// Drain waits for the in-flight run and its trailing run. Without a
// deadline on ctx it waits at most DrainTimeout. It returns ctx's error
// (or context.DeadlineExceeded at the soft limit) if they do not finish in
// time; the runs go on until Close.
func (e *Extractor) Drain(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.DrainTimeout)
		defer cancel()
	}
	return e.jobs.Drain(ctx)
}

// Close cancels any run, drops a pending trailing run and waits for the
// background work to end. Later turns are skipped. A second Close is a
// no-op.
func (e *Extractor) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.jobs.Close()
	return nil
}

func (e *Extractor) emit(ctx context.Context, ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.emitLocked(ctx, ev)
}

// emitLocked reports an event; observers are called with the lock held so
// events arrive in order.
func (e *Extractor) emitLocked(ctx context.Context, ev Event) {
	attrs := []any{"event", "extract_" + string(ev.Kind)}
	if ev.Reason != "" {
		attrs = append(attrs, "reason", ev.Reason)
	}
	if ev.Kind == EventFinished || ev.Kind == EventFailed {
		attrs = append(attrs, "files", len(ev.Files), "input_tokens", ev.Usage.InputTokens, "output_tokens", ev.Usage.OutputTokens)
	}
	if ev.Err != nil {
		attrs = append(attrs, "error", ev.Err)
	}
	e.log.Log(ctx, ev.Kind.level(), "extract: "+string(ev.Kind), attrs...)
	if e.cfg.Observer != nil {
		e.cfg.Observer(ev)
	}
}

func endsWithFinalAnswer(msgs []llm.Message) bool {
	if len(msgs) == 0 {
		return false
	}
	last := msgs[len(msgs)-1]
	return last.Role == llm.RoleAssistant && len(last.ToolUses()) == 0
}

func hasSubstantialUserMessage(msgs []llm.Message) bool {
	for _, m := range msgs {
		if m.Role == llm.RoleUser && len(strings.Fields(m.Text())) >= minUserWords {
			return true
		}
	}
	return false
}

// mainAgentWroteMemory reports whether an assistant message wrote or
// edited a file inside the auto-memory directory.
func (e *Extractor) mainAgentWroteMemory(msgs []llm.Message) bool {
	prefix := e.dir.Path() + string(filepath.Separator)
	for _, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, b := range m.ToolUses() {
			switch b.ToolName {
			case memdir.ToolWrite, memdir.ToolEdit, memdir.ToolMultiEdit, memdir.ToolNotebookEdit:
			default:
				continue
			}
			var in struct {
				FilePath     string `json:"file_path"`
				NotebookPath string `json:"notebook_path"`
			}
			if json.Unmarshal(b.Input, &in) != nil {
				continue
			}
			p := cmp.Or(in.FilePath, in.NotebookPath)
			if p != "" && strings.HasPrefix(filepath.Clean(p)+string(filepath.Separator), prefix) {
				return true
			}
		}
	}
	return false
}

// level is the log level of an event: failures at Warn, runs at Info,
// skips and coalesced turns (every turn has one) at Debug.
func (k EventKind) level() slog.Level {
	switch k {
	case EventFailed:
		return slog.LevelWarn
	case EventStarted, EventFinished:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// forkTools offers the parent's tool specs unchanged (the cache key), run
// by the memory tool of the same name; a parent tool with no memory
// counterpart refuses every call.
func forkTools(parent []llm.ToolSpec, mine []llm.Tool) []llm.Tool {
	byName := map[string]llm.Tool{}
	for _, t := range mine {
		byName[t.Spec.Name] = t
	}
	out := make([]llm.Tool, len(parent))
	for i, spec := range parent {
		t, ok := byName[spec.Name]
		if !ok {
			name := spec.Name
			t.Call = func(context.Context, json.RawMessage) (string, error) {
				return "", fmt.Errorf("%s is not available while saving memories: use Read, Write, Edit, Grep, Glob or List on the memory directory", name)
			}
		}
		t.Spec = spec
		out[i] = t
	}
	return out
}

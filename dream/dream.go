package dream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/memtools"
	"github.com/agentmem-sdk/agentmem/transcript"
)

// Defaults.
const (
	defaultMinHours     = 24
	defaultMinSessions  = 5
	defaultScanThrottle = 10 * time.Minute
	// defaultMaxTurns bounds a consolidation run: it reads and rewrites
	// several files, so it needs more turns than an extraction.
	defaultMaxTurns = 30
)

// Reasons a run did not happen, in gate order.
const (
	StopDisabled      = "disabled"
	StopDailyLog      = "daily_log_mode"
	StopRemote        = "remote"
	StopAutoMemoryOff = "auto_memory_off"
	StopTooSoon       = "too_soon"
	StopThrottled     = "scan_throttled"
	StopFewSessions   = "not_enough_sessions"
	StopLocked        = "locked"
)

// Options configures a Dreamer. Transcripts, or ConfigHome and
// OriginalCwd, are required; the zero value of the rest means the
// defaults.
type Options struct {
	// ConfigHome and OriginalCwd locate Claude Code's session transcripts
	// (<ConfigHome>/projects/<SanitizePath(OriginalCwd)>/*.jsonl), the
	// default Transcripts.
	ConfigHome  string
	OriginalCwd string
	// Transcripts are the sessions the gate counts and the agent searches;
	// a host that records its sessions elsewhere passes its own Store
	// (then ConfigHome and OriginalCwd are optional).
	Transcripts transcript.Store
	// SessionID is the current session, never counted.
	SessionID string
	// Gate 1: any of these stops every run.
	Disabled, DailyLog, Remote, AutoMemoryOff bool
	// MinHours since the last consolidation (used when finite and > 0;
	// default 24).
	MinHours float64
	// MinSessions touched since then (used when > 0; default 5).
	MinSessions int
	// ScanThrottle spaces the session scans (default 10 min).
	ScanThrottle time.Duration
	// MaxTurns bounds a run (default 30).
	MaxTurns int
	// Lock tunes the consolidation lock (PID, liveness, clock, staleness).
	Lock LockOptions
	// Now is the clock (default time.Now); also used by the lock unless
	// Lock.Now is set.
	Now func() time.Time
	// History, when set, makes every run undoable: before the agent
	// writes, a snapshot named Outcome.Checkpoint ("dream-" and the run's
	// start time) is taken, and every file its tools change is tracked in
	// it, so History.Rewind(ctx, checkpoint, ...) puts the memory
	// directory back as it was. Give the dreamer its own Tracker.
	History *filehistory.Tracker
	// Observer receives every Outcome; Logger the same as records.
	Observer func(Outcome)
	Logger   *slog.Logger
}

// Outcome is what a MaybeRun or Force call did.
type Outcome struct {
	// Ran reports whether the consolidation agent ran.
	Ran bool
	// Stopped names the gate that stopped it (one of the Stop constants).
	Stopped string
	// Sessions are the transcripts it was told to review.
	Sessions []string
	// Files are the memory files it wrote, edited or deleted.
	Files []string
	// Checkpoint names the snapshot taken before the run (Options.History);
	// rewinding to it undoes the run.
	Checkpoint string
	// Origin is the least trusted origin of the memories the run could
	// read (memdir.Dir.Provenance: "fetched", "tool-output"), "" when none
	// came from untrusted input; every write of the run carries it, so
	// what it merges from such a memory is reviewed as such.
	Origin string
	Usage  llm.Usage
	Turns  int
	Err    error
}

// Dreamer decides when to consolidate a memory directory and runs the
// consolidation. Safe for concurrent use; runs are serialised by the lock.
type Dreamer struct {
	dir   *memdir.Dir
	model llm.Model
	cfg   Options
	lock  *Lock
	log   *slog.Logger

	mu       sync.Mutex
	lastScan time.Time
}

// ErrMissingConfig is returned by New without a required field.
var ErrMissingConfig = errors.New("dream: New needs the memory directory (memdir.NewDir), a model, and Options.Transcripts or Options.ConfigHome and OriginalCwd")

// New returns a Dreamer that consolidates dir (the auto-memory
// directory) with model; an accepted staged run writes through dir's
// write gate.
func New(dir *memdir.Dir, model llm.Model, cfg Options) (*Dreamer, error) {
	if dir == nil || model == nil || (cfg.Transcripts == nil && (cfg.ConfigHome == "" || cfg.OriginalCwd == "")) {
		return nil, ErrMissingConfig
	}
	dir = dir.WithDoor(teamwire.DoorConsolidation) // its shared writes go with its door

	if cfg.Transcripts == nil {
		sessions, _ := transcript.FindProjectDir(dir.FS(), cfg.ConfigHome, cfg.OriginalCwd)
		store, err := transcript.NewJSONLStore(dir.FS(), sessions, transcript.Options{})
		if err != nil {
			return nil, err
		}
		cfg.Transcripts = store
	}
	if math.IsNaN(cfg.MinHours) || math.IsInf(cfg.MinHours, 0) || cfg.MinHours <= 0 {
		cfg.MinHours = defaultMinHours
	}
	defaults.IfUnset(&cfg.MinSessions, defaultMinSessions)
	defaults.IfUnset(&cfg.ScanThrottle, defaultScanThrottle)
	defaults.IfUnset(&cfg.MaxTurns, defaultMaxTurns)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Lock.Now == nil {
		cfg.Lock.Now = cfg.Now
	}
	log := defaults.Logger(cfg.Logger)
	return &Dreamer{dir: dir, model: model, cfg: cfg, lock: newLock(dir.FS(), dir.Path(), cfg.Lock), log: log}, nil
}

// Lock returns the Dreamer's consolidation lock.
func (d *Dreamer) Lock() *Lock { return d.lock }

// transcriptDir returns the directory of the transcripts on disk ("" when
// the Transcripts store is not a JSONLStore).
func (d *Dreamer) transcriptDir() string {
	if s, ok := d.cfg.Transcripts.(*transcript.JSONLStore); ok {
		return s.Dir()
	}
	return ""
}

// MaybeRun consolidates when every gate passes, cheapest first: (1)
// enabled, not daily-log mode, not remote, auto memory on; (2) MinHours
// since the last consolidation; (3) the scan throttle (its timestamp is
// set before scanning); (4) MinSessions sessions touched since then,
// other than the current one; (5) the lock. It runs the agent in the
// calling goroutine: call it from a background goroutine with a context
// you can cancel. A failed or cancelled run rolls the lock back.
func (d *Dreamer) MaybeRun(ctx context.Context) Outcome {
	return d.finish(ctx, d.maybeRun(ctx, false))
}

// Force consolidates now, skipping the time, throttle and session gates
// but not gate 1 or the lock; a successful run stamps the lock with now.
func (d *Dreamer) Force(ctx context.Context) Outcome {
	return d.finish(ctx, d.maybeRun(ctx, true))
}

// maybeRun runs when the gates pass; force passes the time, throttle and
// session gates.
func (d *Dreamer) maybeRun(ctx context.Context, force bool) Outcome {
	if stop := d.gateEnabled(); stop != "" {
		return Outcome{Stopped: stop}
	}
	last, err := d.lock.LastConsolidation()
	if err != nil {
		return Outcome{Err: err}
	}
	if !force {
		now := d.cfg.Now()
		if !last.IsZero() && now.Sub(last) < time.Duration(d.cfg.MinHours*float64(time.Hour)) {
			return Outcome{Stopped: StopTooSoon}
		}
		d.mu.Lock()
		if !d.lastScan.IsZero() && now.Sub(d.lastScan) < d.cfg.ScanThrottle {
			d.mu.Unlock()
			return Outcome{Stopped: StopThrottled}
		}
		d.lastScan = now
		d.mu.Unlock()
	}
	sessions, err := d.sessionsSince(last)
	if err != nil {
		return Outcome{Err: err}
	}
	if !force && len(sessions) < d.cfg.MinSessions {
		return Outcome{Stopped: StopFewSessions, Sessions: sessions}
	}
	o, _ := d.run(ctx, sessions, "")
	return o
}

func (d *Dreamer) gateEnabled() string {
	switch {
	case d.cfg.Disabled:
		return StopDisabled
	case d.cfg.DailyLog:
		return StopDailyLog
	case d.cfg.Remote:
		return StopRemote
	case d.cfg.AutoMemoryOff:
		return StopAutoMemoryOff
	}
	return ""
}

// sessionsSince lists the sessions of the Transcripts store modified after
// since, leaving out the current session: their files, or their ids when
// the store keeps no files.
func (d *Dreamer) sessionsSince(since time.Time) ([]string, error) {
	infos, err := d.cfg.Transcripts.List(context.Background())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, inf := range infos {
		if inf.SessionID == d.cfg.SessionID || !inf.Modified.After(since) {
			continue
		}
		if inf.Path != "" {
			out = append(out, inf.Path)
		} else {
			out = append(out, inf.SessionID)
		}
	}
	sort.Strings(out)
	return out, nil
}

// SearchSessionsTool is the tool the consolidation agent searches past
// sessions with: full text over every recorded session of the Transcripts
// store (transcript.Search), best first, with snippets.
const SearchSessionsTool = "SearchSessions"

// DeleteMemoryTool is the tool the consolidation agent deletes a memory
// with (a merged duplicate, a contradicted fact, an expired memory): the
// file and every index line that points to it, through the directory's
// write gate and, when Options.History is set, recorded for undo.
const DeleteMemoryTool = "DeleteMemory"

// deleteTool deletes memories of dir; deleted collects their absolute
// paths.
func deleteTool(dir *memdir.Dir, deleted *[]string) llm.Tool {
	return llm.Tool{Spec: llm.ToolSpec{Name: DeleteMemoryTool,
		Description: "Delete one memory file of the memory directory and the index lines that point to it. Give its absolute path. Use it for a memory merged into another, contradicted by newer ones, or past its expires date.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"],"additionalProperties":false}`)},
		Call: func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				Path string `json:"file_path"`
			}
			if err := json.Unmarshal(input, &in); err != nil || !filepath.IsAbs(in.Path) {
				return "", errors.New("give the memory file's absolute path as file_path")
			}
			rel, err := filepath.Rel(dir.Path(), filepath.Clean(in.Path))
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return "", fmt.Errorf("%s is not in the memory directory %s", in.Path, dir.Path())
			}
			switch err := dir.Delete(ctx, filepath.ToSlash(rel)); {
			case errors.Is(err, memdir.ErrMemoryNotFound):
				return "", fmt.Errorf("%s does not exist (its index lines, if any, were removed)", in.Path)
			case err != nil:
				if r := memdir.Refusal(in.Path, "memory", err); r != nil {
					return "", r
				}
				return "", fmt.Errorf("%s could not be deleted", in.Path)
			}
			*deleted = append(*deleted, filepath.Join(dir.Path(), rel))
			return "Deleted " + in.Path + " and its index lines.", nil
		}}
}

func (d *Dreamer) searchTool() llm.Tool {
	return llm.Tool{Spec: llm.ToolSpec{Name: SearchSessionsTool,
		Description: "Search the recorded sessions for a few specific words (a decision, an error, a name). Returns the matching sessions with the passage that matched. Use narrow queries.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`)},
		Call: func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(input, &in); err != nil || strings.TrimSpace(in.Query) == "" {
				return "", errors.New("give a query")
			}
			hits, err := transcript.Search(ctx, d.cfg.Transcripts, in.Query, 10)
			if err != nil {
				return "", errors.New("the sessions could not be searched")
			}
			if len(hits) == 0 {
				return "No session matches.", nil
			}
			var b strings.Builder
			for _, h := range hits {
				fmt.Fprintf(&b, "session %s (%s): %s\n", h.SessionID, h.Title, h.Snippet)
			}
			return b.String(), nil
		}}
}

// review finds what the consolidation is told to look at in dir (the
// newest memdir.ScanMemoryFiles returns): the memories that disagree,
// and those past their expires date, at most maxExpired. A failed scan
// names none.
func (d *Dreamer) review(ctx context.Context, dir string) ([]conflict, []memdir.MemoryHeader) {
	headers, err := memdir.ScanMemoryFiles(ctx, d.dir.FS(), dir, memdir.ScanOptions{})
	if err != nil {
		return nil, nil
	}
	var expired []memdir.MemoryHeader
	now := d.cfg.Now()
	for _, h := range headers {
		if h.Expired(now) && len(expired) < maxExpired {
			expired = append(expired, h)
		}
	}
	return conflictingPairs(headers), expired
}

// run takes the lock and runs the consolidation agent on the memory
// directory, or on stage (a copy of it) when stage is not "". It returns
// the lock's previous time, for a rollback.
func (d *Dreamer) run(ctx context.Context, sessions []string, stage string) (Outcome, time.Time) {
	dir, history := d.dir.Path(), d.cfg.History
	if stage != "" {
		dir, history = stage, nil // the copy needs no undo: rejecting it is the undo
	}
	prev, err := d.lock.Acquire()
	if errors.Is(err, ErrLockHeld) || errors.Is(err, ErrLostRace) {
		return Outcome{Stopped: StopLocked, Sessions: sessions}, prev
	}
	if err != nil {
		return Outcome{Err: err, Sessions: sessions}, prev
	}
	out := Outcome{Ran: true, Sessions: sessions}
	var readRoots []string
	if dir := d.transcriptDir(); dir != "" {
		readRoots = append(readRoots, dir)
	}
	if history != nil {
		out.Checkpoint = filehistory.CheckpointID("dream", d.cfg.Now())
		if err = history.MakeSnapshot(ctx, out.Checkpoint); err != nil {
			err = fmt.Errorf("dream: checkpoint before the run: %w", err)
		}
	}
	// The tools write through the host's Dir (its scanner, synced flag
	// and lock), or a copy of it with the same rules for a stage, and
	// record each file's version under the write's lock.
	var tools *memtools.Toolset
	var writer *memdir.Dir // what the tools write through
	target := d.dir
	if out.Origin = memdir.LeastTrusted(d.inputsOrigin(ctx), d.sessionsOrigin(ctx, sessions)); out.Origin != "" {
		target = target.WithProvenance(memdir.Provenance{Origin: out.Origin})
	}
	if err == nil && stage != "" {
		target, err = target.WithPath(stage)
	}
	if err == nil {
		var reach *memdir.Dir
		if reach, err = target.WithRoots(readRoots...); err == nil {
			writer = reach.WithHistory(history)
			tools, err = memtools.New(writer, memtools.Options{})
		}
	}
	if err == nil {
		files := memtools.ExtractPermission(target, readRoots)
		conflicts, expired := d.review(ctx, dir)
		var deleted []string
		var res llm.Result
		res, err = llm.RunAgent(ctx, d.model, llm.Task{
			Purpose: llm.PurposeAutoDream,
			System:  systemPrompt(dir),
			Prompt:  userPrompt(dir, d.transcriptDir(), sessions, conflicts, expired),
			Tools:   append(tools.Tools(), d.searchTool(), deleteTool(writer, &deleted)),
			Permission: func(ctx context.Context, call llm.ToolCall) llm.Decision {
				if call.Name == SearchSessionsTool || call.Name == DeleteMemoryTool {
					return llm.Allow() // the search reads only; the delete stays in the directory and goes through its gate
				}
				return files(ctx, call)
			},
			MaxTurns: d.cfg.MaxTurns,
		})
		if errors.Is(err, llm.ErrMaxTurns) {
			err = nil
		}
		out.Usage, out.Turns, out.Files = res.Usage, res.Turns, append(tools.Written(), deleted...)
	}
	if err != nil {
		out.Err = err
		if rbErr := d.lock.Rollback(prev); rbErr != nil {
			out.Err = fmt.Errorf("%w (and the lock could not be rolled back: %v)", err, rbErr)
		}
	}
	return out, prev
}

// sessionsOrigin is the least trusted origin any session the run can
// read was marked with (memdir.Dir.SessionOrigins): those it reviews and
// every other the transcript store still holds, which its search and its
// read tools reach. A session that read a web page or a tool's output
// passes its origin to what is made from its transcript.
func (d *Dreamer) sessionsOrigin(ctx context.Context, sessions []string) string {
	marks := d.dir.SessionOrigins()
	if len(marks) == 0 {
		return ""
	}
	origin := ""
	for _, s := range sessions {
		origin = memdir.LeastTrusted(origin, marks[strings.TrimSuffix(filepath.Base(s), ".jsonl")])
	}
	held, err := d.cfg.Transcripts.List(ctx)
	if err != nil {
		// What the store holds is unknown: every marked session counts.
		for _, o := range marks {
			origin = memdir.LeastTrusted(origin, o)
		}
		return origin
	}
	for _, info := range held {
		origin = memdir.LeastTrusted(origin, marks[info.SessionID])
	}
	return origin
}

// inputsOrigin returns the least trusted origin recorded for the memory
// files of the directory (every one the run's tools can read, team
// memories included), "" when none came from untrusted input. The
// transcripts the run reads carry no origin of their own
// (sessionsOrigin).
func (d *Dreamer) inputsOrigin(ctx context.Context) string {
	headers, err := memdir.ScanMemoryFiles(ctx, d.dir.FS(), d.dir.Path(), memdir.ScanOptions{MaxFiles: math.MaxInt32, HeaderLines: 1})
	if err != nil {
		return ""
	}
	origin := ""
	for _, h := range headers {
		data, err := afero.ReadFile(d.dir.FS(), h.Path)
		if err != nil {
			continue
		}
		if p, ok := d.dir.Provenance(h.Path, data); ok && memdir.UntrustedOrigin(p.Origin) {
			origin = memdir.LeastTrusted(origin, p.Origin)
		}
	}
	return origin
}

func (d *Dreamer) finish(ctx context.Context, o Outcome) Outcome {
	attrs := []any{"event", "dream", "ran", o.Ran, "sessions", len(o.Sessions), "files", len(o.Files)}
	if o.Stopped != "" {
		attrs = append(attrs, "stopped", o.Stopped)
	}
	if o.Err != nil {
		attrs = append(attrs, "error", o.Err)
	}
	level := slog.LevelInfo
	switch {
	case o.Err != nil:
		level = slog.LevelWarn
	case !o.Ran:
		level = slog.LevelDebug // a gate said not yet: most checks end here
	}
	d.log.Log(ctx, level, "dream: outcome", attrs...)
	if d.cfg.Observer != nil {
		d.cfg.Observer(o)
	}
	return o
}

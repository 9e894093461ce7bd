package foldersync

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/fsnotify/fsnotify"
)

// Watcher defaults.
const (
	// DefaultDebounce is how long the folder must stay unchanged before a
	// round sends its changes.
	DefaultDebounce = 2 * time.Second
	// DefaultInterval is the longest time between two rounds: the
	// remote's changes arrive at least this often.
	DefaultInterval = 30 * time.Second
	// DefaultMaxBackoff is the longest wait before a failed round is
	// tried again.
	DefaultMaxBackoff = 5 * time.Minute
)

// WatchOptions configures a Watcher. The zero value means the defaults.
type WatchOptions struct {
	// Debounce is how long the folder must stay unchanged after a change
	// before a round runs (default DefaultDebounce).
	Debounce time.Duration
	// Interval is the longest time between two rounds (default
	// DefaultInterval; negative: only local changes and Notify start a
	// round).
	Interval time.Duration
	// Poll, when positive, finds local changes by a stat walk of the
	// folder at this interval instead of fsnotify. When fsnotify cannot
	// start, or the folder is not on the real disk, the watcher polls
	// every 500 ms.
	Poll time.Duration
	// MaxBackoff caps the wait before a failed round is tried again
	// (default DefaultMaxBackoff); the wait doubles from Debounce with
	// each failure in a row.
	MaxBackoff time.Duration
	// Observer receives every round's Event; it must not block.
	Observer func(Event)
	// Round runs one round in place of Engine.Round: a driver's own work
	// around the engine's round (the team client's Sync, which keeps its
	// SyncState).
	Round func(ctx context.Context) (Result, error)
	// Wake, when set, runs beside the watcher for its whole life and
	// calls notify whenever the remote says it changed (a team server's
	// long-poll, teammem.Remote.LongPoll), so a change made elsewhere
	// starts a round at once rather than at the next Interval. It must
	// return once ctx ends; when it returns early (the remote cannot
	// wait), the Interval rounds go on.
	Wake func(ctx context.Context, notify func()) error
}

// Event is one round a Watcher ran: its result, or why it failed, and
// what started it.
type Event struct {
	Result Result
	Err    error
	// Cause is "start", "local" (a change in the folder), "interval",
	// "notify" (Watcher.Notify: the remote said it changed), "retry" (a
	// failed round tried again), "resume" (Watcher.Resume) or "close"
	// (the last round).
	Cause string
	At    time.Time
	// Failures is the number of failed rounds in a row, this one
	// included (0 after a round that worked).
	Failures int
	// Paused names the failure no retry mends that paused the watcher
	// after this round (PauseReason), "" when it goes on.
	Paused string
}

// Watcher keeps a folder in step with its remote: a round at start, one
// Debounce after the folder stops changing, one at least every Interval,
// one at once on Notify, and after a failure again with a doubling wait
// until a round works. Close (or the end of the context given to
// StartWatcher) runs a last round for pending changes and stops it.
type Watcher struct {
	e      *Engine
	opts   WatchOptions
	notify chan struct{}
	resume chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	woke   chan struct{} // closed once Wake has returned (nil without Wake)

	mu     sync.Mutex
	paused string // why rounds are paused (PauseReason), "" when they run
}

// StartWatcher runs a first round and starts watching. The first
// round's error is reported to the Observer and retried like any other,
// unless it is one no retry mends (PermanentError): then StartWatcher returns it and
// no watcher. Otherwise StartWatcher fails only when the folder cannot
// be watched or polled.
func StartWatcher(ctx context.Context, e *Engine, opts WatchOptions) (*Watcher, error) {
	if e == nil {
		return nil, errors.New("foldersync: StartWatcher needs an Engine")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if err := e.fs.MkdirAll(e.folder, 0o755); err != nil {
		return nil, fmt.Errorf("foldersync: create the folder to watch: %w", err)
	}
	if opts.Round == nil {
		opts.Round = e.Round
	}
	w := &Watcher{e: e, opts: opts, notify: make(chan struct{}, 1), resume: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	var fsw *fsnotify.Watcher
	if opts.Poll <= 0 {
		var err error
		if fsw, err = w.startNotify(); err != nil {
			fsw, w.opts.Poll = nil, 500*time.Millisecond
		}
	}
	// What the folder held before the first round (polling): a change
	// made during it, or after, is one (the round's own writes cost one
	// look more).
	last := w.fingerprint(ctx)
	first := w.round(ctx, "start", 0)
	seen := w.files(ctx)
	w.observe(first)
	if first.Err != nil && w.Paused() != "" {
		if fsw != nil {
			fsw.Close()
		}
		return nil, first.Err
	}
	if opts.Wake != nil {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		woke := make(chan struct{})
		go func() {
			defer close(woke)
			_ = opts.Wake(wctx, w.Notify)
		}()
		go func() {
			<-w.done
			cancel()
		}()
		w.woke = woke
	}
	go w.loop(ctx, fsw, first, last, seen)
	return w, nil
}

// PermanentError is the error contract of every driver: what a round's
// failure means to a watcher. A failure whose chain holds a
// PermanentError that reports Permanent (no token, no access, a limit of
// the remote, a full disk) is one no retry mends: the watcher runs no
// round until Resume, or until a synced file is removed from the folder
// (what mends a limit; a round that fails the same way pauses again),
// and a first round that fails so makes StartWatcher fail. Every other
// failure (a lost connection, a timeout, 429, 5xx: what the drivers'
// requests already retried) is tried again with a doubling wait; only
// the end of the watcher's context, or Close, stops it.
type PermanentError interface {
	error
	Permanent() bool
	// Reason names the failure in a few words (the remote's error code).
	Reason() string
}

// PauseReason names a failure no retry mends (the Reason of the
// PermanentError in err's chain), or "" for one worth retrying.
func PauseReason(err error) string {
	var p PermanentError
	if errors.As(err, &p) && p.Permanent() {
		return p.Reason()
	}
	return ""
}

// round runs one round and records a pause.
func (w *Watcher) round(ctx context.Context, cause string, failures int) Event {
	res, err := w.opts.Round(context.WithoutCancel(ctx))
	ev := Event{Result: res, Err: err, Cause: cause, At: time.Now(), Failures: failures}
	if err != nil {
		ev.Failures++
		if why := PauseReason(err); why != "" {
			w.mu.Lock()
			w.paused = why
			w.mu.Unlock()
			ev.Paused = why
		}
	} else {
		ev.Failures = 0
	}
	return ev
}

// observe reports an Event to the Observer.
func (w *Watcher) observe(ev Event) {
	if w.opts.Observer != nil {
		w.opts.Observer(ev)
	}
}

// Paused returns why the watcher runs no rounds (PauseReason),
// or "" when it runs them.
func (w *Watcher) Paused() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused
}

// Resume lifts a pause (once its cause is mended: a new token, access
// granted) and runs a round now.
func (w *Watcher) Resume() {
	w.unpause()
	select {
	case w.resume <- struct{}{}:
	default:
	}
}

// unpause lifts a pause: Resume, or the removal of a synced file.
func (w *Watcher) unpause() {
	w.mu.Lock()
	w.paused = ""
	w.mu.Unlock()
}

// Notify asks for a round now (the remote said it changed).
func (w *Watcher) Notify() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Close runs a last round when local changes are pending (and rounds
// are not paused), stops the watcher and waits for it.
func (w *Watcher) Close() error {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	if w.woke != nil {
		<-w.woke
	}
	return nil
}

// Done is closed once the watcher has stopped.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// startNotify watches the folder and every folder below it.
func (w *Watcher) startNotify() (*fsnotify.Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if _, ok := w.e.fs.(interface{ Name() string }); ok && w.e.fs.Name() != "OsFs" {
		fsw.Close()
		return nil, errors.New("not the real disk")
	}
	err = filepath.WalkDir(w.e.folder, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != w.e.folder && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		return fsw.Add(p)
	})
	if err != nil {
		fsw.Close()
		return nil, err
	}
	return fsw, nil
}

func (w *Watcher) loop(ctx context.Context, fsw *fsnotify.Watcher, first Event, last [32]byte, seen map[string]bool) {
	defer close(w.done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fsw != nil {
		defer fsw.Close()
		events, errs = fsw.Events, fsw.Errors
	}
	tick := 250 * time.Millisecond
	if w.opts.Poll > 0 {
		tick = w.opts.Poll
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	var failures int
	var dirtyAt, retryAt, lastRound time.Time
	after := func(ev Event) {
		failures = ev.Failures
		if ev.Err != nil {
			retryAt = ev.At.Add(min(w.opts.Debounce<<min(failures, 20), w.opts.MaxBackoff))
		} else {
			retryAt = time.Time{}
		}
		lastRound = ev.At
	}
	after(first)
	run := func(cause string) {
		if w.Paused() != "" {
			return
		}
		var before [32]byte
		if w.opts.Poll > 0 {
			// Taken before the round, so a change made while it runs
			// (after its walk) is seen at the next look: taken after, it
			// passed for the round's own write and waited for the
			// Interval. The round's own writes cost one look more.
			before = w.fingerprint(ctx)
		}
		ev := w.round(ctx, cause, failures)
		after(ev)
		if w.opts.Poll > 0 {
			last, seen = before, w.files(ctx)
		}
		w.observe(ev) // once the round's own writes are taken in
	}
	local := func(name string, removal bool) {
		if rel, err := filepath.Rel(w.e.folder, name); err == nil && w.e.included(filepath.ToSlash(rel)) {
			dirtyAt = time.Now()
			if removal {
				w.unpause()
			}
		}
	}
	closing := func() {
		// Events the kernel already sent count: take them in first.
		for drained := false; !drained; {
			select {
			case ev := <-events:
				local(ev.Name, false)
			case <-w.notify:
				dirtyAt = time.Now() // asked for just before Close
			case <-time.After(50 * time.Millisecond):
				drained = true
			}
		}
		if w.opts.Poll > 0 && w.fingerprint(context.WithoutCancel(ctx)) != last {
			dirtyAt = time.Now()
		}
		if !dirtyAt.IsZero() {
			run("close") // a last round for the pending changes
		}
	}
	for {
		select {
		case <-ctx.Done():
			closing()
			return
		case <-w.stop:
			closing()
			return
		case <-w.notify:
			run("notify")
			dirtyAt = time.Time{}
			continue
		case <-w.resume:
			run("resume")
			dirtyAt = time.Time{}
			continue
		case ev := <-events:
			if ev.Has(fsnotify.Create) {
				if info, err := os.Stat(ev.Name); err == nil && info.IsDir() && !strings.HasPrefix(filepath.Base(ev.Name), ".") {
					_ = fsw.Add(ev.Name)
				}
			}
			local(ev.Name, ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename))
			continue
		case <-errs:
			dirtyAt = time.Now() // events may be lost: look again
			continue
		case <-ticker.C:
		}
		now := time.Now()
		if w.opts.Poll > 0 {
			if fp := w.fingerprint(ctx); fp != last {
				files := w.files(ctx)
				for p := range seen {
					if !files[p] {
						w.unpause()
						break
					}
				}
				last, seen, dirtyAt = fp, files, now
				continue
			}
		}
		if w.Paused() != "" {
			continue
		}
		switch {
		case !retryAt.IsZero():
			if now.After(retryAt) {
				run("retry")
				dirtyAt = time.Time{}
			}
		case !dirtyAt.IsZero() && now.Sub(dirtyAt) >= w.opts.Debounce:
			run("local")
			dirtyAt = time.Time{}
		case w.opts.Interval > 0 && now.Sub(lastRound) >= w.opts.Interval:
			run("interval")
		}
	}
}

// files lists the folder's synced files, for polling mode (nil
// otherwise): a name gone from one list to the next is a removal.
func (w *Watcher) files(ctx context.Context) map[string]bool {
	if w.opts.Poll <= 0 {
		return nil
	}
	out := map[string]bool{}
	_ = fswalk.Walk(ctx, w.e.fs, w.e.folder, func(en fswalk.Entry) error {
		if !en.Type.IsDir() && w.e.included(en.Rel) {
			out[en.Rel] = true
		}
		return nil
	})
	return out
}

// fingerprint sums the names, sizes and modification times of the
// folder's synced files: it moves when one is created, changed or
// removed.
func (w *Watcher) fingerprint(ctx context.Context) [32]byte {
	var out [32]byte
	if w.opts.Poll <= 0 {
		return out
	}
	h := sha256.New()
	_ = fswalk.Walk(ctx, w.e.fs, w.e.folder, func(en fswalk.Entry) error {
		if en.Type.IsDir() || !w.e.included(en.Rel) {
			return nil
		}
		if info, err := w.e.fs.Stat(en.Abs); err == nil {
			fmt.Fprintf(h, "%s\x00%d\x00%d\n", en.Rel, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	copy(out[:], h.Sum(nil))
	return out
}

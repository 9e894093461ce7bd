package teammem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/teammem/wire"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/fsnotify/fsnotify"
	"github.com/spf13/afero"
)

// Watcher defaults.
const (
	// defaultDebounce is how long the watcher waits after the last change
	// before it syncs.
	defaultDebounce = 2 * time.Second
	// DefaultInterval is how often the watcher syncs when nothing
	// happens, to bring in teammates' changes.
	DefaultInterval = 30 * time.Second
)

// WatcherOptions configures a Watcher. The zero value means the defaults.
type WatcherOptions struct {
	// State is the client's SyncState (default a fresh one).
	State *SyncState
	// Debounce is how long the watcher waits after the last change
	// before it syncs (default 2 s).
	Debounce time.Duration
	// Interval is the longest time between two syncs (default
	// DefaultInterval): teammates' changes arrive at least this often,
	// and at once when the server supports the long-poll (LongPoll).
	Interval time.Duration
	// LongPoll, unless negative, asks the server to answer as soon as the
	// repo changes (for up to this long per request, default 25 s); a
	// server without the long-poll is then only polled every Interval.
	LongPoll time.Duration
	// Poll, when positive, detects changes by walking the team dir at this
	// interval instead of using fsnotify: for filesystems other than the
	// real disk (afero.MemMapFs) or where inotify is unavailable.
	Poll time.Duration
	// Observer receives every sync's outcome; it must not block.
	Observer func(SyncEvent)
	Logger   *slog.Logger
}

// SyncEvent is one sync the watcher ran: its result, or why it failed.
type SyncEvent struct {
	Result Result
	Err    error
}

// Watcher keeps a team directory in sync in both directions: it syncs
// (Client.Sync: the three-way rules) at start, shortly after local
// changes, at least every Interval, at once when the server's long-poll
// reports a change, and again with backoff after a failure until the
// change lands. A permanent failure (no token, no access, the entry
// limit, another client error) stops syncing until Resume, or, for the
// entry limit, until a file is deleted. Close stops it, waits for a sync
// in flight and flushes pending changes. Safe for concurrent use.
type Watcher struct {
	client  *Client
	cfg     WatcherOptions
	st      *SyncState
	log     *slog.Logger
	notify  chan struct{}
	remote  chan struct{} // the server's repo changed
	done    chan struct{}
	stopped chan struct{} // closed once Close has finished
	wg      sync.WaitGroup
	once    sync.Once

	mu         sync.Mutex
	suppressed string // the reason syncs stopped, "" when running
	dirty      bool
	failures   int    // consecutive failed syncs
	etag       string // the repo checksum after the last sync, for the long-poll
}

// StartWatcher syncs, creates the team dir, and starts watching it until
// ctx ends or Close is called (either stops it the same way: a last sync
// of pending changes; Done tells when that is over). The initial sync's
// error is returned with a started watcher when it is not permanent (the
// server may come back, and the watcher retries); a permanent one stops
// here.
func StartWatcher(ctx context.Context, client *Client, cfg WatcherOptions) (*Watcher, error) {
	if client == nil {
		return nil, errors.New("teammem: StartWatcher needs a Client")
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = defaultDebounce
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.LongPoll == 0 {
		cfg.LongPoll = 25 * time.Second
	}
	st := cfg.State
	if st == nil {
		st = &SyncState{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{client: client, cfg: cfg, st: st, log: log, notify: make(chan struct{}, 1), remote: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{})}
	res, pullErr := client.Sync(ctx, st)
	w.report(res, pullErr)
	var se *SyncError
	if errors.As(pullErr, &se) && se.Permanent() {
		return nil, pullErr
	}
	if err := client.fs.MkdirAll(client.teamDir, 0o755); err != nil {
		return nil, fmt.Errorf("teammem: create the team directory: %w", err)
	}
	var fw *fsnotify.Watcher
	if cfg.Poll <= 0 {
		var err error
		if fw, err = fsnotify.NewWatcher(); err != nil {
			return nil, fmt.Errorf("teammem: start watching: %w", err)
		}
		if err := addRecursive(client.fs, fw, client.teamDir); err != nil {
			fw.Close()
			return nil, fmt.Errorf("teammem: watch the team directory: %w", err)
		}
	}
	var snapshot map[string]string
	if cfg.Poll > 0 {
		snapshot = w.scan() // before returning: later writes are changes
	}
	w.mu.Lock()
	w.etag = st.ETag
	if pullErr != nil {
		w.dirty = true // retry soon
		w.failures = 1
	}
	w.mu.Unlock()
	w.wg.Add(1)
	go w.loop(fw, snapshot)
	if cfg.LongPoll > 0 {
		w.wg.Add(1)
		go w.longPoll()
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = w.Close()
		case <-w.done:
		}
	}()
	return w, pullErr
}

// Done is closed when the watcher has stopped (its ctx ended or Close
// was called) and its last sync is over.
func (w *Watcher) Done() <-chan struct{} { return w.stopped }

// Notify tells the watcher a file was written (for tool wrappers that
// know before the file system says so).
func (w *Watcher) Notify() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Suppressed returns why pushes are stopped ("" when they are not): the
// server's error code, or http_<status>, or the error class.
func (w *Watcher) Suppressed() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.suppressed
}

// Resume lifts a suppression (after the token or limit was fixed).
func (w *Watcher) Resume() {
	w.mu.Lock()
	w.suppressed = ""
	w.mu.Unlock()
	w.Notify()
}

// Close stops watching, waits for a push in flight, and pushes pending
// changes unless suppressed. A second Close is a no-op.
func (w *Watcher) Close() error {
	first := false
	w.once.Do(func() { close(w.done); first = true })
	w.wg.Wait()
	if first {
		close(w.stopped)
	}
	<-w.stopped
	return nil
}

func (w *Watcher) loop(fw *fsnotify.Watcher, snapshot map[string]string) {
	defer w.wg.Done()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fw != nil {
		defer fw.Close()
		events, errs = fw.Events, fw.Errors
	}
	var poll <-chan time.Time
	if w.cfg.Poll > 0 {
		t := time.NewTicker(w.cfg.Poll)
		defer t.Stop()
		poll = t.C
	}
	interval := time.NewTicker(w.cfg.Interval)
	defer interval.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	if w.isDirty() {
		timer.Reset(w.retryDelay())
	}
	syncDone := make(chan error, 1)
	syncing := false
	changed := func() {
		w.mu.Lock()
		w.dirty = true
		w.mu.Unlock()
		timer.Reset(w.cfg.Debounce)
	}
	start := func(why string) {
		if syncing {
			w.log.Debug("teammem: sync wanted while one runs", "event", "teammem_sync_busy", "why", why)
			return
		}
		w.mu.Lock()
		suppressed := w.suppressed
		w.dirty = false
		w.mu.Unlock()
		if suppressed != "" {
			w.log.Debug("teammem: sync skipped: stopped", "event", "teammem_sync_suppressed", "why", why, "reason", suppressed)
			return
		}
		w.log.Debug("teammem: sync", "event", "teammem_sync_start", "why", why)
		syncing = true
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			syncDone <- w.sync(context.Background())
		}()
	}
	for {
		select {
		case <-w.done:
			if syncing {
				<-syncDone
			}
			w.flush()
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Has(fsnotify.Create) {
				if info, err := w.client.fs.Stat(ev.Name); err == nil && info.IsDir() {
					_ = addRecursive(w.client.fs, fw, ev.Name)
				}
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				w.fileRemoved()
			}
			changed()
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.log.Warn("teammem: watching failed", "event", "teammem_watch_error", "error", err)
		case <-poll:
			next := w.scan()
			if removed, diff := compareScans(snapshot, next); diff {
				if removed {
					w.fileRemoved()
				}
				snapshot = next
				changed()
			}
		case <-w.notify:
			changed()
		case <-w.remote:
			start("server change") // the server says the repo changed
		case <-interval.C:
			start("interval")
		case <-timer.C:
			if syncing {
				timer.Reset(w.cfg.Debounce) // a sync is running: try again later
				continue
			}
			start("local change or retry")
		case err := <-syncDone:
			w.log.Debug("teammem: sync done", "event", "teammem_sync_done", "error", err)
			syncing = false
			if err != nil || w.isDirty() {
				timer.Reset(w.retryDelay()) // changes wait, or the last try failed
			}
		}
	}
}

// isDirty reports whether local changes (or a failed sync) wait.
func (w *Watcher) isDirty() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dirty
}

// retryDelay is the backoff after consecutive failures (the client's
// base and cap), or the debounce when the last sync worked.
func (w *Watcher) retryDelay() time.Duration {
	w.mu.Lock()
	n := w.failures
	w.mu.Unlock()
	if n == 0 {
		return w.cfg.Debounce
	}
	return min(w.client.backoff(n, ""), w.cfg.Interval)
}

// flush syncs pending changes at shutdown: those the watcher was told of,
// and those written so shortly before that no event has arrived yet (the
// team directory differs from the last agreed state).
func (w *Watcher) flush() {
	w.mu.Lock()
	dirty, suppressed := w.dirty, w.suppressed
	w.dirty = false
	w.mu.Unlock()
	if suppressed != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	if dirty || w.changedSinceSync(ctx) {
		_ = w.sync(ctx)
	}
}

// changedSinceSync reports whether the team directory's files differ from
// the state both sides last agreed on (keys the client never syncs, such
// as a file holding a secret, do not count).
func (w *Watcher) changedSinceSync(ctx context.Context) bool {
	files, _, skipped, skipDirs, err := w.client.readLocal(ctx)
	if err != nil {
		return true
	}
	never := map[string]bool{}
	for _, s := range skipped {
		never[s.Key] = true
	}
	base := 0
	for k := range w.st.Base {
		if !never[k] && !underDirs(k, skipDirs) {
			base++
		}
	}
	if len(files) != base {
		return true
	}
	for _, f := range files {
		if w.st.Base[f.key] != f.sum {
			return true
		}
	}
	return false
}

// sync runs one Client.Sync and records its outcome: a failure keeps the
// changes pending (and counts toward the backoff), a permanent one stops
// the watcher's syncs.
func (w *Watcher) sync(ctx context.Context) error {
	res, err := w.client.Sync(ctx, w.st)
	w.report(res, err)
	var se *SyncError
	w.mu.Lock()
	defer w.mu.Unlock()
	w.etag = w.st.ETag
	switch {
	case errors.As(err, &se) && se.Permanent():
		reason := se.Code
		if reason == "" && se.Status != 0 {
			reason = "http_" + strconv.Itoa(se.Status)
		}
		if reason == "" {
			reason = string(se.Class)
		}
		w.suppressed = reason
		w.failures = 0
		w.log.Warn("teammem: syncing stopped", "event", "teammem_push_suppressed", "reason", reason)
	case err != nil:
		w.dirty = true // try again with backoff
		w.failures++
		w.log.Warn("teammem: sync failed; retrying", "event", "teammem_sync_retry", "error", err, "failures", w.failures)
	default:
		w.failures = 0
	}
	return err
}

// longPoll asks the server to answer when the repo changes and wakes the
// loop when it does. A server without the long-poll answers at once with
// a client error; the watcher then relies on Interval.
func (w *Watcher) longPoll() {
	defer w.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	failures := 0
	for ctx.Err() == nil {
		w.mu.Lock()
		etag := w.etag
		w.mu.Unlock()
		asked := time.Now()
		changed, err := w.client.WaitForChange(ctx, etag, w.cfg.LongPoll)
		switch {
		case errors.Is(err, ErrLongPollUnsupported):
			return
		case err != nil:
			failures++
			if sleepCtx(ctx, min(w.client.backoff(failures, ""), w.cfg.Interval)) != nil {
				return
			}
			continue
		}
		failures = 0
		if changed {
			select {
			case w.remote <- struct{}{}:
			default:
			}
		}
		if changed || time.Since(asked) < time.Second {
			// Let the sync catch up (or a busy server breathe) before
			// asking again.
			if sleepCtx(ctx, min(time.Second, w.cfg.Interval)) != nil {
				return
			}
		}
	}
}

// fileRemoved lifts a suppression caused by the entry limit.
func (w *Watcher) fileRemoved() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.suppressed == wire.CodeTooManyEntries {
		w.suppressed = ""
	}
}

func (w *Watcher) report(res Result, err error) {
	if w.cfg.Observer != nil {
		w.cfg.Observer(SyncEvent{Result: res, Err: err})
	}
}

// scan records every file's size and mtime, for polling mode.
func (w *Watcher) scan() map[string]string {
	c := w.client
	out := map[string]string{}
	_ = fswalk.Walk(context.Background(), c.fs, c.teamDir, func(e fswalk.Entry) error {
		if e.Type.IsRegular() {
			if info, err := c.fs.Stat(e.Abs); err == nil {
				out[e.Rel] = strconv.FormatInt(info.Size(), 10) + "@" + strconv.FormatInt(info.ModTime().UnixNano(), 10)
			}
		}
		return nil
	})
	return out
}

func compareScans(a, b map[string]string) (removed, changed bool) {
	for k, v := range a {
		nv, ok := b[k]
		if !ok {
			removed, changed = true, true
		} else if nv != v {
			changed = true
		}
	}
	if len(b) != len(a) {
		changed = true
	}
	return removed, changed
}

// addRecursive watches dir and every directory below it.
func addRecursive(fsys afero.Fs, fw *fsnotify.Watcher, dir string) error {
	var dirs []string
	err := fswalk.Walk(context.Background(), fsys, dir, func(e fswalk.Entry) error {
		if e.Type.IsDir() && !strings.HasPrefix(filepath.Base(e.Rel), ".") {
			dirs = append(dirs, e.Abs)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(dirs)
	for _, d := range append([]string{dir}, dirs...) {
		if err := fw.Add(d); err != nil {
			return err
		}
	}
	return nil
}

package teammem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/fswalk"
	"github.com/fsnotify/fsnotify"
	"github.com/spf13/afero"
)

// DefaultDebounce is how long the watcher waits after the last change
// before it pushes.
const DefaultDebounce = 2 * time.Second

// WatcherConfig configures a Watcher. Client is required.
type WatcherConfig struct {
	Client *Client
	// State is the client's SyncState (default a fresh one).
	State *SyncState
	// Debounce defaults to DefaultDebounce.
	Debounce time.Duration
	// Poll, when positive, detects changes by walking the team dir at this
	// interval instead of using fsnotify: for filesystems other than the
	// real disk (afero.MemMapFs) or where inotify is unavailable.
	Poll time.Duration
	// OnSync is called after every pull or push with its result.
	OnSync func(Result, error)
	Logger *slog.Logger
}

// Watcher keeps a team directory in sync: it pulls once, then pushes
// shortly after local changes. A permanent failure (no token, no access,
// the entry limit, another client error) stops pushes until Resume, or,
// for the entry limit, until a file is deleted. Close stops it, waits for
// a push in flight and flushes pending changes. Safe for concurrent use.
type Watcher struct {
	cfg    WatcherConfig
	st     *SyncState
	log    *slog.Logger
	notify chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu         sync.Mutex
	suppressed string // the reason pushes stopped, "" when running
	dirty      bool
}

// StartWatcher pulls, creates the team dir, and starts watching it.
// The initial pull's error is returned with a started watcher when it is
// not permanent (the server may come back); a permanent one stops here.
func StartWatcher(ctx context.Context, cfg WatcherConfig) (*Watcher, error) {
	if cfg.Client == nil {
		return nil, errors.New("teammem: WatcherConfig needs a Client")
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = DefaultDebounce
	}
	st := cfg.State
	if st == nil {
		st = &SyncState{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{cfg: cfg, st: st, log: log, notify: make(chan struct{}, 1), done: make(chan struct{})}
	res, pullErr := cfg.Client.Pull(ctx, st)
	w.report(res, pullErr)
	var se *SyncError
	if errors.As(pullErr, &se) && se.Permanent() {
		return nil, pullErr
	}
	c := cfg.Client.cfg
	if err := c.Fs.MkdirAll(c.TeamDir, 0o755); err != nil {
		return nil, fmt.Errorf("teammem: create the team directory: %w", err)
	}
	var fw *fsnotify.Watcher
	if cfg.Poll <= 0 {
		var err error
		if fw, err = fsnotify.NewWatcher(); err != nil {
			return nil, fmt.Errorf("teammem: start watching: %w", err)
		}
		if err := addRecursive(fw, c.TeamDir); err != nil {
			fw.Close()
			return nil, fmt.Errorf("teammem: watch the team directory: %w", err)
		}
	}
	var snapshot map[string]string
	if cfg.Poll > 0 {
		snapshot = w.scan() // before returning: later writes are changes
	}
	w.wg.Add(1)
	go w.loop(fw, snapshot)
	return w, pullErr
}

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
	w.once.Do(func() { close(w.done) })
	w.wg.Wait()
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
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	pushDone := make(chan struct{}, 1)
	pushing := false
	changed := func() {
		w.mu.Lock()
		w.dirty = true
		w.mu.Unlock()
		timer.Reset(w.cfg.Debounce)
	}
	for {
		select {
		case <-w.done:
			if pushing {
				<-pushDone
			}
			w.flush()
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Has(fsnotify.Create) {
				if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
					_ = addRecursive(fw, ev.Name)
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
		case <-timer.C:
			if pushing {
				timer.Reset(w.cfg.Debounce) // a push is running: try again later
				continue
			}
			w.mu.Lock()
			run := w.dirty && w.suppressed == ""
			w.dirty = false
			w.mu.Unlock()
			if !run {
				continue
			}
			pushing = true
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				w.push(context.Background())
				pushDone <- struct{}{}
			}()
		case <-pushDone:
			pushing = false
		}
	}
}

// flush pushes pending changes at shutdown.
func (w *Watcher) flush() {
	w.mu.Lock()
	run := w.dirty && w.suppressed == ""
	w.dirty = false
	w.mu.Unlock()
	if run {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
		defer cancel()
		w.push(ctx)
	}
}

func (w *Watcher) push(ctx context.Context) {
	res, err := w.cfg.Client.Push(ctx, w.st)
	w.report(res, err)
	var se *SyncError
	if errors.As(err, &se) && se.Permanent() {
		reason := se.Code
		if reason == "" && se.Status != 0 {
			reason = "http_" + strconv.Itoa(se.Status)
		}
		if reason == "" {
			reason = string(se.Class)
		}
		w.mu.Lock()
		w.suppressed = reason
		w.mu.Unlock()
		w.log.Warn("teammem: pushes stopped", "event", "teammem_push_suppressed", "reason", reason)
	} else if err != nil {
		w.mu.Lock()
		w.dirty = true // try again on the next change
		w.mu.Unlock()
	}
}

// fileRemoved lifts a suppression caused by the entry limit.
func (w *Watcher) fileRemoved() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.suppressed == CodeTooManyEntries {
		w.suppressed = ""
	}
}

func (w *Watcher) report(res Result, err error) {
	if w.cfg.OnSync != nil {
		w.cfg.OnSync(res, err)
	}
}

// scan records every file's size and mtime, for polling mode.
func (w *Watcher) scan() map[string]string {
	c := w.cfg.Client.cfg
	out := map[string]string{}
	_ = fswalk.Walk(context.Background(), c.Fs, c.TeamDir, func(e fswalk.Entry) error {
		if e.Type.IsRegular() {
			if info, err := c.Fs.Stat(e.Abs); err == nil {
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
func addRecursive(fw *fsnotify.Watcher, dir string) error {
	var dirs []string
	err := fswalk.Walk(context.Background(), afero.NewOsFs(), dir, func(e fswalk.Entry) error {
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

package recall

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/fsnotify/fsnotify"
	"github.com/spf13/afero"
)

// Change detection defaults.
const (
	// defaultFullWalkEvery is how often a Finder walks its whole directory
	// even when nothing says it changed: the safety net under change
	// notices and folder mtimes.
	defaultFullWalkEvery = 30 * time.Second
	// racyWindow is how recent a folder's mtime may be before it is no
	// proof of "unchanged": a change within the same clock tick as the
	// last look would leave it as it was (git's racily-clean rule; 2 s
	// covers the coarsest filesystem clocks).
	racyWindow = 2 * time.Second
)

// changeDetector tells a corpus whether its directory may have changed
// since the last full walk, without walking it. On the real disk it
// stats the folders the walk met (a file added, removed or renamed moves
// its folder's mtime) and watches them for change notices (fsnotify: an
// edit in place moves no folder); elsewhere, or before the first walk, it
// always answers "walk". A full walk is due at least every fullEvery.
type changeDetector struct {
	root      string
	fullEvery time.Duration
	now       func() time.Time

	// Owned by the corpus (under its lock).
	disk     bool
	dirs     map[string]dirMark // folder → its state at the last walk
	lastWalk time.Time          // start of the last full walk

	loop    sync.WaitGroup
	mu      sync.Mutex
	watch   bool              // start a watcher at the first walk
	watcher *fsnotify.Watcher // nil: no change notices
	closed  bool
	// dirty reports a change notice since the last walk began. It is
	// apart from the detector so the watcher's goroutine does not keep the
	// Finder reachable (see NewFinder's cleanup).
	dirty *atomic.Bool
}

// dirMark is a folder as the last walk saw it.
type dirMark struct {
	info fs.FileInfo
	// settled reports whether its mtime was older than racyWindow when
	// recorded, so a later change must move it.
	settled bool
}

func newChangeDetector(fsys afero.Fs, root string, fullEvery time.Duration, watch bool, now func() time.Time) *changeDetector {
	d := &changeDetector{root: root, fullEvery: fullEvery, now: now, watch: watch, dirty: new(atomic.Bool)}
	if _, ok := fsys.(*afero.OsFs); ok {
		d.disk = true
	}
	return d
}

// startWatching starts the watcher at the first walk (an inotify instance
// is a scarce resource: a Finder never used holds none). Without one,
// folder mtimes and the periodic walk remain.
func (d *changeDetector) startWatching() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.watch || d.watcher != nil || d.closed {
		return
	}
	d.watch = false // one try
	if w, err := fsnotify.NewWatcher(); err == nil {
		d.watcher = w
		dirty := d.dirty
		d.loop.Go(func() { listen(w, dirty) })
	}
}

// listen marks the directory dirty on every notice that can matter.
func listen(w *fsnotify.Watcher, dirty *atomic.Bool) {
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if matters(ev) {
				dirty.Store(true)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflowed queue dropped notices: walk next time.
			dirty.Store(true)
		}
	}
}

// matters reports whether a notice can change the memories: anything but
// a write or mode change of a file that is not a memory file.
func matters(ev fsnotify.Event) bool {
	if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		return true
	}
	base := filepath.Base(ev.Name)
	return strings.HasSuffix(base, ".md") && base != memdir.EntrypointName
}

// unchanged reports whether the last walk still holds: no full walk is
// due, no change notice came, and every folder it met is there with the
// same identity and a settled, unchanged mtime.
func (d *changeDetector) unchanged() bool {
	if !d.disk || d.dirs == nil || d.now().Sub(d.lastWalk) >= d.fullEvery {
		return false
	}
	if d.dirty.Load() {
		return false
	}
	for dir, mark := range d.dirs {
		if !mark.settled {
			return false
		}
		info, err := os.Lstat(dir)
		if err != nil || !os.SameFile(info, mark.info) || !info.ModTime().Equal(mark.info.ModTime()) {
			return false
		}
	}
	return true
}

// walking is called as a full walk begins: notices from here on count
// against the new walk.
func (d *changeDetector) walking() time.Time {
	d.dirty.Store(false)
	return d.now()
}

// walkFailed is called when a walk that began did not finish (cancelled,
// unreadable): what the notices said before it still stands.
func (d *changeDetector) walkFailed() { d.dirty.Store(true) }

// walked records the folders a full walk that began at start met, and
// watches the new ones.
func (d *changeDetector) walked(start time.Time, dirs []string) {
	if !d.disk {
		return
	}
	d.startWatching()
	d.mu.Lock()
	w := d.watcher
	d.mu.Unlock()
	marks := make(map[string]dirMark, len(dirs))
	for _, dir := range dirs {
		info, err := os.Lstat(dir)
		if err != nil {
			d.dirs = nil // gone already: walk again next time
			return
		}
		marks[dir] = dirMark{info: info, settled: start.Sub(info.ModTime()) > racyWindow}
		if old, known := d.dirs[dir]; w != nil && (!known || !os.SameFile(old.info, info)) {
			// Out of watches (fs.inotify.max_user_watches), this folder
			// falls back to its mtime and the periodic walk.
			_ = w.Add(dir)
		}
	}
	d.dirs, d.lastWalk = marks, start
}

// close stops the watcher and waits for its goroutine.
func (d *changeDetector) close() {
	d.mu.Lock()
	w := d.watcher
	d.watcher, d.closed = nil, true
	d.mu.Unlock()
	if w != nil {
		_ = w.Close()
		d.loop.Wait()
	}
}

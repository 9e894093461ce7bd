package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/spf13/afero"
)

// lockFileName is the consolidation lock inside the auto-memory dir. Its
// mtime is the time of the last consolidation; its body is the PID of the
// process holding it.
const lockFileName = ".consolidate-lock"

// Lock errors.
var (
	// ErrLockHeld: another live process took the lock within the last hour.
	ErrLockHeld = errors.New("dream: another process is consolidating")
	// ErrLostRace: another process wrote the lock at the same moment.
	ErrLostRace = errors.New("dream: lost the race for the consolidation lock")
)

// defaultStaleLock is how long a holder's lock counts even when its
// process is alive.
const defaultStaleLock = time.Hour

// claimStale is when a leftover claim file (a crash in the middle of
// Acquire) is cleared.
const claimStale = 30 * time.Second

// LockOptions tunes a Lock; the zero value means the defaults.
type LockOptions struct {
	// PID is this process's ID (default os.Getpid()).
	PID int
	// Alive reports whether a process is running (default: signal 0).
	Alive func(pid int) bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// StaleAfter is how long a holder's lock counts even when its
	// process looks alive (default one hour).
	StaleAfter time.Duration
}

// Lock is the consolidation lock of one memory directory, shared by every
// process that may consolidate it. Safe for concurrent use on a
// filesystem whose O_EXCL create is atomic (a real disk; afero's MemMapFs
// is not, under concurrent callers).
type Lock struct {
	fs   afero.Fs
	path string
	opts LockOptions
}

// newLock returns the lock of autoDir.
func newLock(fsys afero.Fs, autoDir string, opts LockOptions) *Lock {
	if opts.PID <= 0 {
		opts.PID = os.Getpid()
	}
	if opts.Alive == nil {
		opts.Alive = processAlive
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	defaults.IfUnset(&opts.StaleAfter, defaultStaleLock)
	return &Lock{fs: fsys, path: filepath.Join(autoDir, lockFileName), opts: opts}
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// LastConsolidation returns the lock's mtime, or the zero time when there
// is no lock file.
func (l *Lock) LastConsolidation() (time.Time, error) {
	info, err := l.fs.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

// Acquire takes the lock and returns the previous last-consolidation time
// (zero when there was none), to pass to Rollback if the run fails. It
// fails with ErrLockHeld when the lock was stamped within StaleAfter by a
// process that is still alive, and with ErrLostRace when another process
// wrote it at the same time. Taking the lock stamps it with the current
// time and this PID.
//
// The check and the write happen under a short-lived claim file created
// with O_EXCL, so two processes never both pass the check; the re-read
// after writing stays as a second line of defence.
func (l *Lock) Acquire() (time.Time, error) {
	release, err := l.claim()
	if err != nil {
		return time.Time{}, err
	}
	defer release()
	prev, err := l.LastConsolidation()
	if err != nil {
		return time.Time{}, err
	}
	if !prev.IsZero() && l.opts.Now().Sub(prev) < l.opts.StaleAfter {
		if pid, ok := l.holder(); ok && pid > 1 && pid != l.opts.PID && l.opts.Alive(pid) {
			return time.Time{}, ErrLockHeld
		}
	}
	if err := l.write(strconv.Itoa(l.opts.PID)); err != nil {
		return time.Time{}, err
	}
	if pid, ok := l.holder(); !ok || pid != l.opts.PID {
		return time.Time{}, ErrLostRace
	}
	return prev, nil
}

// Rollback undoes an Acquire after a failed or cancelled run: with no
// previous consolidation the lock file is removed; otherwise its body is
// emptied and its mtime set back to prev.
func (l *Lock) Rollback(prev time.Time) error {
	if prev.IsZero() {
		if err := l.fs.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := l.write(""); err != nil {
		return err
	}
	return l.fs.Chtimes(l.path, prev, prev)
}

func (l *Lock) write(body string) error {
	if err := l.fs.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(l.fs, l.path, []byte(body), 0o644); err != nil {
		return err
	}
	now := l.opts.Now()
	if body == "" {
		return nil
	}
	return l.fs.Chtimes(l.path, now, now)
}

func (l *Lock) holder() (int, bool) {
	data, err := afero.ReadFile(l.fs, l.path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, err == nil
}

// claim creates the claim file exclusively; a stale one is cleared once.
func (l *Lock) claim() (func(), error) {
	p := l.path + ".claim"
	if err := l.fs.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 2; attempt++ {
		f, err := l.fs.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, _ = fmt.Fprintf(f, "%d", l.opts.PID)
			_ = f.Close()
			return func() { _ = l.fs.Remove(p) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		info, serr := l.fs.Stat(p)
		if serr != nil || l.opts.Now().Sub(info.ModTime()) < claimStale {
			return nil, ErrLockHeld
		}
		_ = l.fs.Remove(p)
	}
	return nil, ErrLockHeld
}

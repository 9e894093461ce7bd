// Package racefs is a filesystem for tests of undo: it makes another
// write race the moment a file history saves a file's version.
package racefs

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/spf13/afero"
)

// Fs is a history's filesystem that, once the history has read Target
// and starts to journal it, runs Concurrent (a write that takes the
// memory directory's lock) and waits for it a moment: a writer that
// lands just after the file's version was saved, unless the save happens
// under the write's lock.
type Fs struct {
	afero.Fs
	target     string
	concurrent func() error
	read, done atomic.Bool
	finished   chan error
}

// New wraps fsys; concurrent runs once, at the history's first write
// after it read target.
func New(fsys afero.Fs, target string, concurrent func() error) *Fs {
	return &Fs{Fs: fsys, target: filepath.Clean(target), concurrent: concurrent, finished: make(chan error, 1)}
}

// Open notes a read of the target.
func (f *Fs) Open(name string) (afero.File, error) {
	if filepath.Clean(name) == f.target {
		f.read.Store(true)
	}
	return f.Fs.Open(name)
}

// OpenFile starts the concurrent write at the first write after the
// target was read, and waits for it at most 300 ms (it is held while the
// write's lock is).
func (f *Fs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 && f.read.Load() && f.done.CompareAndSwap(false, true) {
		go func() { f.finished <- f.concurrent() }()
		select {
		case err := <-f.finished:
			f.finished <- err
		case <-time.After(300 * time.Millisecond):
		}
	}
	return f.Fs.OpenFile(name, flag, perm)
}

// Ran says whether the concurrent write started.
func (f *Fs) Ran() bool { return f.done.Load() }

// Wait returns the concurrent write's error, once it has finished.
func (f *Fs) Wait() error { return <-f.finished }

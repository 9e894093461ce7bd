// Package filelock serialises read-modify-write cycles on one file across
// goroutines and processes, through a lock file beside it.
//
// On a filesystem whose files are real OS files (afero.OsFs, rootfs.Fs) the
// lock is flock(2) on "<dir>/.<name>.lock": the kernel releases it when the
// holder exits, so a crash never leaves a stale lock, and each Lock opens
// its own descriptor, so goroutines of one process exclude each other too.
// On other filesystems the lock file is created with O_EXCL and removed on
// unlock; a lock file older than StaleAfter is taken as abandoned. That
// excludes only where the filesystem's exclusive create is atomic, and
// afero.MemMapFs's is not: so on such a filesystem the goroutines of one
// process first take an in-process lock kept per filesystem and lock
// file, which every caller over the same filesystem shares.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/spf13/afero"
)

// StaleAfter is the age at which an O_EXCL lock file is taken as left
// behind by a holder that died (locks are held for milliseconds).
const StaleAfter = 10 * time.Second

// ErrTimeout reports a lock that could not be taken before the context
// ended.
var ErrTimeout = errors.New("filelock: timed out waiting for the lock")

// Name returns the lock file used for path.
func Name(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".lock")
}

// fder is an afero.File backed by an OS descriptor (*os.File).
type fder interface{ Fd() uintptr }

// Lock takes the lock for path (whose directory must exist) and returns
// the function that releases it. It waits until ctx ends.
func Lock(ctx context.Context, fsys afero.Fs, path string) (unlock func(), err error) {
	name := Name(path)
	if !osBacked(fsys) {
		release, err := processLock(ctx, fsys, name)
		if err != nil {
			return nil, err
		}
		unlock, err := exclusiveLock(ctx, fsys, name)
		if err != nil {
			release()
			return nil, err
		}
		return func() { unlock(); release() }, nil
	}
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("filelock: open lock file: %w", err)
	}
	fd, ok := f.(fder)
	if !ok {
		_ = f.Close()
		return nil, errors.New("filelock: the filesystem's files have no OS descriptor")
	}
	if err := flockWait(ctx, fd.Fd()); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing the descriptor releases the lock
}

// osBacked reports whether fsys hands out real OS files that flock works
// on: afero's OsFs and agentmem's kernel-confined rootfs.
func osBacked(fsys afero.Fs) bool {
	if !osLockSupported {
		return false
	}
	switch fsys.Name() {
	case "OsFs", "rootfs":
		return true
	}
	return false
}

// lockKey names one lock file of one filesystem value.
type lockKey struct {
	fs   afero.Fs
	name string
}

// processLocks holds, per filesystem and lock file, a one-slot channel:
// holding the slot is holding the in-process lock.
var processLocks sync.Map // lockKey → chan struct{}

// processLock takes the in-process lock of name on fsys, waiting until
// ctx ends. A filesystem value that cannot be a map key (not a pointer)
// gets none: its callers rely on the lock file alone.
func processLock(ctx context.Context, fsys afero.Fs, name string) (func(), error) {
	if reflect.ValueOf(fsys).Kind() != reflect.Pointer {
		return func() {}, nil
	}
	v, _ := processLocks.LoadOrStore(lockKey{fs: fsys, name: name}, make(chan struct{}, 1))
	slot := v.(chan struct{})
	select {
	case slot <- struct{}{}:
		return func() { <-slot }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
}

// exclusiveLock is the portable lock: create the lock file with O_EXCL.
func exclusiveLock(ctx context.Context, fsys afero.Fs, name string) (func(), error) {
	delay := time.Millisecond
	for {
		f, err := fsys.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_ = f.Close()
			return func() { _ = fsys.Remove(name) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("filelock: create lock file: %w", err)
		}
		if info, err := fsys.Stat(name); err == nil && time.Since(info.ModTime()) > StaleAfter {
			_ = fsys.Remove(name)
			continue
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
		delay = min(delay*2, 20*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
}

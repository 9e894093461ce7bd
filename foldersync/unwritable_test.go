package foldersync_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// lockedFs refuses every change below one folder with EACCES, as the
// kernel does for a folder of another user (a test run as root would
// not be refused by the mode bits alone).
type lockedFs struct {
	afero.Fs
	locked string
}

func (l lockedFs) in(name string) bool {
	return strings.HasPrefix(filepath.Clean(name), l.locked+string(filepath.Separator))
}

func (l lockedFs) deny(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: syscall.EACCES}
}

func (l lockedFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if l.in(name) && flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE) != 0 {
		return nil, l.deny("open", name)
	}
	return l.Fs.OpenFile(name, flag, perm)
}

func (l lockedFs) Create(name string) (afero.File, error) {
	if l.in(name) {
		return nil, l.deny("open", name)
	}
	return l.Fs.Create(name)
}

func (l lockedFs) Rename(from, to string) error {
	if l.in(from) || l.in(to) {
		return l.deny("rename", to)
	}
	return l.Fs.Rename(from, to)
}

func (l lockedFs) Remove(name string) error {
	if l.in(name) {
		return l.deny("remove", name)
	}
	return l.Fs.Remove(name)
}

func (l lockedFs) Mkdir(name string, perm os.FileMode) error {
	if l.in(name) {
		return l.deny("mkdir", name)
	}
	return l.Fs.Mkdir(name, perm)
}

func (l lockedFs) MkdirAll(name string, perm os.FileMode) error {
	if l.in(name) {
		if _, err := l.Fs.Stat(name); err == nil {
			return nil
		}
		return l.deny("mkdir", name)
	}
	return l.Fs.MkdirAll(name, perm)
}

// TestUnwritableFolderIsOneSkip: a folder this client may not write is
// skipped path by path (SkipUnwritable, a refusal); the rest of the round
// goes on both ways, and a file's mode is kept when a pull replaces it.
func TestUnwritableFolderIsOneSkip(t *testing.T) {
	remote := memremote.New("store-1")
	dir := t.TempDir()
	locked := filepath.Join(dir, "theirs")
	if err := os.MkdirAll(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := memdir.NewDir(lockedFs{Fs: afero.NewOsFs(), locked: locked}, dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := foldersync.New(d, dir, remote, foldersync.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "mine.md")
	if err := os.WriteFile(mine, []byte("v1\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	remote.Write("theirs/a.md", []byte("a teammate's\n"))
	remote.Write("mine.md", []byte("v2 from a teammate\n"))
	if err := os.WriteFile(filepath.Join(dir, "new.md"), []byte("my new memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.Round(context.Background())
	if err != nil {
		t.Fatalf("one unwritable folder stopped the round: %v", err)
	}
	if skipOf(res, "theirs/a.md") != foldersync.SkipUnwritable || !(foldersync.Skip{Reason: foldersync.SkipUnwritable}).Refused() {
		t.Fatalf("the unwritable path: %+v", res)
	}
	if !contains(res.Pushed, "new.md") || !contains(res.Pulled, "mine.md") {
		t.Fatalf("the rest of the round did not go on: %+v", res)
	}
	info, err := os.Stat(mine)
	if err != nil || info.Mode().Perm() != 0o444 {
		t.Fatalf("the pulled file's mode: %v %v", info.Mode(), err)
	}
	if got, _ := remote.Read("new.md"); string(got) != "my new memory\n" {
		t.Fatalf("the remote holds %q", got)
	}
}

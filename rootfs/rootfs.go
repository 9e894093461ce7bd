// Package rootfs is an afero.Fs confined to one directory of the real disk
// by Go's os.Root, so the confinement holds at the moment of every open,
// not only when a path was checked.
//
// # What it guarantees
//
// Every operation resolves its path inside the root directory with the
// kernel's help (openat and friends, one component at a time): "..", an
// absolute symbolic link, or a relative link that climbs out fails with an
// error, and so does a link swapped in between a validation and the write,
// because there is no separate check to race. Names are taken relative to
// the root; a leading "/" is allowed and means the root, as with
// afero.BasePathFs (which, unlike this Fs, is a string-prefix check that
// follows links out and is not a security boundary).
//
// # What it does not guarantee
//
//   - A symbolic link inside the root that points at a missing file inside
//     the root is followed on create: the write lands on the link's target,
//     still inside the root. teammem.ValidateTeamMemKey refuses dangling
//     links; run it first.
//   - Backslashes, percent escapes and fullwidth or other compatibility
//     characters are ordinary name bytes here ("..\x" and "．．／x" are
//     legal names inside the root). They cannot escape this Fs, but a peer
//     that decodes or normalises names could be fooled by them: run
//     teammem.SanitizeKey (through ValidateTeamMemKey) in front.
//   - Chmod, Chown and Chtimes follow os.Root's caveat on Unix: if a file
//     is replaced by a link while the call runs, the call may act on the
//     link itself (never on a file outside the root).
//   - Filesystem boundaries, bind mounts, /proc files and device files
//     inside the root are not blocked, as in os.Root.
//   - The root is held open by descriptor: if the directory is moved, the
//     Fs follows it to its new place.
//
// # Concurrency
//
// An *Fs is safe for concurrent use. Close releases the root; operations
// after Close fail.
package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"
)

// Fs is an afero.Fs whose every operation stays inside one directory. It
// also implements afero.Lstater, afero.LinkReader and afero.Symlinker.
type Fs struct {
	root *os.Root
}

var (
	_ afero.Fs         = (*Fs)(nil)
	_ afero.Lstater    = (*Fs)(nil)
	_ afero.LinkReader = (*Fs)(nil)
	_ afero.Symlinker  = (*Fs)(nil)
)

// New opens dir (which must exist) as the root of a confined Fs.
func New(dir string) (*Fs, error) {
	if dir == "" {
		return nil, errors.New("rootfs: no directory given")
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Fs{root: r}, nil
}

// Close releases the root directory.
func (f *Fs) Close() error { return f.root.Close() }

// Dir returns the directory the Fs was opened on.
func (f *Fs) Dir() string { return f.root.Name() }

// rel turns an afero name into a name relative to the root: separators
// normalised, leading "/" removed, "" meaning the root itself. Nothing is
// cleaned: ".." stays for os.Root to judge.
func rel(name string) string {
	n := strings.TrimLeft(filepath.ToSlash(name), "/")
	if n == "" {
		return "."
	}
	return filepath.FromSlash(n)
}

// Name returns "rootfs".
func (f *Fs) Name() string { return "rootfs" }

// Create creates or truncates a file inside the root.
func (f *Fs) Create(name string) (afero.File, error) { return wrap(f.root.Create(rel(name))) }

// Mkdir creates a directory inside the root.
func (f *Fs) Mkdir(name string, perm os.FileMode) error { return f.root.Mkdir(rel(name), perm) }

// MkdirAll creates a directory and its parents inside the root.
func (f *Fs) MkdirAll(name string, perm os.FileMode) error { return f.root.MkdirAll(rel(name), perm) }

// Open opens a file or directory inside the root for reading.
func (f *Fs) Open(name string) (afero.File, error) { return wrap(f.root.Open(rel(name))) }

// OpenFile opens a file inside the root with the given flags.
func (f *Fs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	return wrap(f.root.OpenFile(rel(name), flag, perm))
}

// Remove removes a file or empty directory inside the root.
func (f *Fs) Remove(name string) error { return f.root.Remove(rel(name)) }

// RemoveAll removes a path and everything below it, inside the root.
func (f *Fs) RemoveAll(name string) error { return f.root.RemoveAll(rel(name)) }

// Rename moves a file within the root.
func (f *Fs) Rename(oldname, newname string) error { return f.root.Rename(rel(oldname), rel(newname)) }

// Stat describes a file inside the root, following links that stay inside.
func (f *Fs) Stat(name string) (os.FileInfo, error) { return f.root.Stat(rel(name)) }

// LstatIfPossible describes a file without following a final link.
func (f *Fs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	info, err := f.root.Lstat(rel(name))
	return info, true, err
}

// ReadlinkIfPossible returns the target of a link inside the root, as
// stored.
func (f *Fs) ReadlinkIfPossible(name string) (string, error) { return f.root.Readlink(rel(name)) }

// SymlinkIfPossible creates a link inside the root; os.Root refuses to
// follow one that points outside.
func (f *Fs) SymlinkIfPossible(oldname, newname string) error {
	return f.root.Symlink(oldname, rel(newname))
}

// Chmod changes a file's mode (see the package note on races).
func (f *Fs) Chmod(name string, mode os.FileMode) error { return f.root.Chmod(rel(name), mode) }

// Chown changes a file's owner (see the package note on races).
func (f *Fs) Chown(name string, uid, gid int) error { return f.root.Chown(rel(name), uid, gid) }

// Chtimes changes a file's times (see the package note on races).
func (f *Fs) Chtimes(name string, atime, mtime time.Time) error {
	return f.root.Chtimes(rel(name), atime, mtime)
}

// wrap avoids returning a typed nil *os.File as a non-nil afero.File.
func wrap(file *os.File, err error) (afero.File, error) {
	if err != nil {
		return nil, err
	}
	return file, nil
}

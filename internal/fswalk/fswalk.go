// Package fswalk walks a directory tree through an afero.Fs with one
// directory read per directory and no Lstat per entry where the
// filesystem can say entry types itself (a real disk can).
package fswalk

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/afero"
)

// Entry is one directory entry met by Walk.
type Entry struct {
	// Rel is the path below the root, with "/" separators.
	Rel string
	// Abs is the root joined with Rel.
	Abs string
	// Type holds the type bits only (directory, link, regular, ...).
	Type fs.FileMode
	// dir is the open folder that listed the entry (on a real disk), and
	// name its bare name there: Lstat asks the folder, not the path.
	dir  *os.File
	name string
}

// Lstat returns what the filesystem says of the entry, not following a
// link. On a real disk it asks the open folder for the bare name, so the
// kernel does not resolve the whole path again (a good part of a stat
// walk's time); elsewhere it is fsys's Lstat, or Stat where fsys has no
// Lstat. Call it inside the walk's callback: the folder is closed after.
func (e Entry) Lstat(fsys afero.Fs) (fs.FileInfo, error) {
	if e.dir != nil {
		if info, asked, err := statAt(e.dir, e.name); asked {
			if err != nil {
				return nil, &fs.PathError{Op: "lstat", Path: e.Abs, Err: err}
			}
			return info, nil
		}
	}
	if l, ok := fsys.(afero.Lstater); ok {
		info, _, err := l.LstatIfPossible(e.Abs)
		return info, err
	}
	return fsys.Stat(e.Abs)
}

// dirEntryReader is implemented by *os.File: it lists a directory with the
// entry types from readdir, without an lstat per entry.
type dirEntryReader interface {
	ReadDir(n int) ([]fs.DirEntry, error)
}

// Walk calls fn for every entry below root, depth first, entries of a
// directory in name order. Symbolic links are reported, never followed.
// An error reading the root is returned; an unreadable subdirectory is
// skipped. A cancelled ctx stops the walk with ctx's error; an error from
// fn stops it with that error.
func Walk(ctx context.Context, fsys afero.Fs, root string, fn func(Entry) error) error {
	return walk(ctx, fsys, filepath.Clean(root), "", true, fn)
}

// WalkAnyOrder is Walk with a directory's entries in the order the
// filesystem lists them: for a caller that does not depend on the order
// (sorting thousands of names is a good part of a walk's time).
func WalkAnyOrder(ctx context.Context, fsys afero.Fs, root string, fn func(Entry) error) error {
	return walk(ctx, fsys, filepath.Clean(root), "", false, fn)
}

func walk(ctx context.Context, fsys afero.Fs, abs, rel string, sorted bool, fn func(Entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, dir, err := readDir(fsys, abs, sorted)
	if err != nil {
		if rel == "" {
			return err
		}
		return nil
	}
	osDir, _ := dir.(*os.File)
	if canStatAt && osDir != nil {
		defer dir.Close() // open while its entries are met: Lstat asks it
	} else {
		dir.Close() // nothing to ask it (and an open folder can block its renaming)
		osDir = nil
	}
	for _, e := range entries {
		child := Entry{Abs: abs + string(filepath.Separator) + e.Rel, Rel: e.Rel, Type: e.Type, dir: osDir, name: e.Rel}
		if rel != "" {
			child.Rel = rel + "/" + e.Rel
		}
		if err := fn(child); err != nil {
			return err
		}
		if e.Type.IsDir() {
			if err := walk(ctx, fsys, child.Abs, child.Rel, sorted, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadDir lists one directory, sorted by name; each Entry's Rel is the
// bare name.
func ReadDir(fsys afero.Fs, dir string) ([]Entry, error) {
	out, f, err := readDir(fsys, dir, true)
	if err == nil {
		f.Close()
	}
	return out, err
}

// readDir lists dir and returns it still open (the caller closes it).
func readDir(fsys afero.Fs, dir string, sorted bool) (_ []Entry, _ afero.File, err error) {
	f, err := fsys.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	var out []Entry
	if r, ok := f.(dirEntryReader); ok {
		des, err := r.ReadDir(-1)
		if err != nil {
			return nil, nil, err
		}
		out = make([]Entry, len(des))
		for i, de := range des {
			out[i] = Entry{Rel: de.Name(), Type: de.Type()}
		}
	} else {
		infos, err := f.Readdir(-1)
		if err != nil {
			return nil, nil, err
		}
		out = make([]Entry, len(infos))
		for i, fi := range infos {
			out[i] = Entry{Rel: fi.Name(), Type: fi.Mode().Type()}
		}
	}
	if sorted && !slices.IsSortedFunc(out, byRel) { // most filesystems list in order already
		slices.SortFunc(out, byRel)
	}
	return out, f, nil
}

// byRel orders entries by name.
func byRel(a, b Entry) int { return strings.Compare(a.Rel, b.Rel) }

// Hidden reports whether a "/"-separated relative path has a hidden
// ("."-prefixed) folder or name on its way: such paths hold sync state,
// conflict copies, locks and staged copies, never memories.
func Hidden(rel string) bool {
	return strings.HasPrefix(rel, ".") || strings.Contains(rel, "/.")
}

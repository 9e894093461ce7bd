// Package realpath resolves symbolic links through an afero.Fs, the way
// realpath(3) does on a real disk, so that containment checks compare the
// paths the kernel would actually open.
//
// Filesystems without symlink support (afero.MemMapFs) are resolved
// lexically: every component must still exist.
package realpath

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/afero"
)

// MaxHops is the number of symbolic links followed before a path is
// reported as a loop (the Linux limit).
const MaxHops = 40

// ErrLoop reports a chain of more than MaxHops symbolic links.
var ErrLoop = errors.New("too many levels of symbolic links")

// Resolve returns the absolute path p with every symbolic link expanded and
// every "." and ".." removed. Every component must exist. Errors wrap the
// underlying *fs.PathError (so errors.Is(err, fs.ErrNotExist) works), or
// ErrLoop.
func Resolve(fsys afero.Fs, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("realpath: %w", &fs.PathError{Op: "realpath", Path: p, Err: errors.New("path is not absolute")})
	}
	lstater, _ := fsys.(afero.Lstater)
	linker, _ := fsys.(afero.LinkReader)
	resolved := string(filepath.Separator)
	rest := splitPath(p)
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		info, err := lstat(fsys, lstater, next)
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink != 0 && linker != nil {
			hops++
			if hops > MaxHops {
				return "", &fs.PathError{Op: "realpath", Path: p, Err: ErrLoop}
			}
			target, err := linker.ReadlinkIfPossible(next)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				resolved = string(filepath.Separator)
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if len(rest) > 0 && !info.IsDir() {
			return "", &fs.PathError{Op: "realpath", Path: next, Err: syscall.ENOTDIR}
		}
		resolved = next
	}
	return resolved, nil
}

func lstat(fsys afero.Fs, l afero.Lstater, p string) (fs.FileInfo, error) {
	if l != nil {
		info, _, err := l.LstatIfPossible(p)
		return info, err
	}
	return fsys.Stat(p)
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

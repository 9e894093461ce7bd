// Package realpath is agentmem's one symbolic-link resolver: it resolves
// paths through an afero.Fs the way realpath(3) does on a real disk, so
// that containment checks compare the paths the kernel would actually
// open. Every validator (memory roots, team keys and paths, the memory
// tools, the git-root check) uses it, with one strict policy: a link that
// cannot be read, a dangling link, a loop or more than MaxHops links are
// refused, never treated as ordinary names.
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

// ErrDangling reports a symbolic link whose target does not exist: writing
// through it would create a file wherever it points.
// It matches fs.ErrNotExist too.
var ErrDangling = fmt.Errorf("dangling symbolic link: %w", fs.ErrNotExist)

// Resolve returns the absolute path p with every symbolic link expanded and
// every "." and ".." removed. Every component must exist. Errors wrap the
// underlying *fs.PathError (so errors.Is(err, fs.ErrNotExist) works), or
// ErrLoop.
func Resolve(fsys afero.Fs, p string) (string, error) {
	resolved, err := ResolvePartial(fsys, p)
	if err != nil {
		return "", err
	}
	// ResolvePartial stops at the first missing component; here it must
	// all exist.
	if _, err := lstat(fsys, resolved); err != nil {
		return "", err
	}
	return resolved, nil
}

// lstat is Lstat where fsys has it, else Stat (no links to see).
func lstat(fsys afero.Fs, p string) (fs.FileInfo, error) {
	if l, ok := fsys.(afero.Lstater); ok {
		info, _, err := l.LstatIfPossible(p)
		return info, err
	}
	return fsys.Stat(p)
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// ResolvePartial is Resolve for a path that may not exist yet: it expands
// the symbolic links of the deepest existing ancestor and appends the
// missing rest lexically (the rest holds no links, since it does not
// exist). A component that is missing, or that cannot be a directory
// (ENOTDIR) or is too long (ENAMETOOLONG), ends the existing part. A link
// whose target is missing fails with ErrDangling, a chain of more than
// MaxHops links with ErrLoop; any other error is returned as is, so the
// caller can fail closed.
func ResolvePartial(fsys afero.Fs, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", &fs.PathError{Op: "realpath", Path: p, Err: errors.New("path is not absolute")}
	}
	linker, _ := fsys.(afero.LinkReader)
	resolved := string(filepath.Separator)
	rest := splitPath(p)
	hops := 0
	// linkDepth counts components still to resolve that came from a link
	// target: a missing one of those means the link dangles.
	linkDepth := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		fromLink := linkDepth > 0
		if fromLink {
			linkDepth--
		}
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := join(resolved, c)
		info, err := lstat(fsys, next)
		if err != nil {
			if !isMissing(err) {
				return "", err
			}
			if fromLink {
				return "", &fs.PathError{Op: "realpath", Path: next, Err: ErrDangling}
			}
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			hops++
			if hops > MaxHops {
				return "", &fs.PathError{Op: "realpath", Path: p, Err: ErrLoop}
			}
			target, err := readlink(linker, next)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				resolved = string(filepath.Separator)
			}
			parts := splitPath(target)
			linkDepth += len(parts)
			rest = append(parts, rest...)
			continue
		}
		if len(rest) > 0 && !info.IsDir() {
			// Nothing can exist below a file: the rest is missing.
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		resolved = next
	}
	return resolved, nil
}

func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG)
}

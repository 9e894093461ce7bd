package teammem

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentmem/agentmem/internal/realpath"
	"github.com/spf13/afero"
)

// checkContainment reports whether root/rel (rel already cleaned and
// relative) stays inside root once symbolic links are followed.
//
// The fast path walks rel from the root, one Lstat per component, as the
// kernel would: links inside the tree are followed, a missing component
// ends the walk (nothing below it exists to follow), a missing link target
// is a dangling link. It needs no work on the root's own ancestors. When a
// link climbs above the root with ".." or points to an absolute place
// outside the lexical root, the answer depends on where the root really
// is, and the full check (both paths resolved from "/") decides.
func checkContainment(fsys afero.Fs, root, rel string) *PathTraversalError {
	root = filepath.Clean(root)
	lstater, _ := fsys.(afero.Lstater)
	linker, _ := fsys.(afero.LinkReader)
	// cur is the resolved path so far; ends[i] is len(cur) before the i-th
	// component below root was appended, so ".." is a slice, not a Join.
	cur := root
	var ends []int
	rest := strings.Split(filepath.ToSlash(rel), "/")
	linkDepth, hops := 0, 0
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
			if len(ends) == 0 {
				return fullContainment(fsys, root, filepath.Join(root, rel))
			}
			cur, ends = cur[:ends[len(ends)-1]], ends[:len(ends)-1]
			continue
		}
		next := cur + string(filepath.Separator) + c
		info, err := lstatAfero(fsys, lstater, next)
		if err != nil {
			if !missing(err) {
				return linkError(err)
			}
			if fromLink {
				return traversal(ReasonDangling, "")
			}
			return nil // the rest does not exist yet: plain names below root
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if linker == nil {
				// A link we cannot read: fail closed.
				return &PathTraversalError{Reason: ReasonUnverifiable, Detail: "no readlink"}
			}
			hops++
			if hops > realpath.MaxHops {
				return traversal(ReasonLoop, "")
			}
			target, err := linker.ReadlinkIfPossible(next)
			if err != nil {
				return linkError(err)
			}
			if filepath.IsAbs(target) {
				t := filepath.Clean(target)
				if t != root && !strings.HasPrefix(t, root+string(filepath.Separator)) {
					return fullContainment(fsys, root, filepath.Join(root, rel))
				}
				cur, ends = root, ends[:0]
				target = strings.TrimPrefix(strings.TrimPrefix(t, root), string(filepath.Separator))
			}
			parts := strings.Split(filepath.ToSlash(target), "/")
			linkDepth += len(parts)
			rest = append(parts, rest...)
			continue
		}
		if len(rest) > 0 && !info.IsDir() {
			return nil // nothing can exist below a file
		}
		ends = append(ends, len(cur))
		cur = next
	}
	if len(ends) == 0 {
		return traversal(ReasonSymlinkEscape, "") // resolves to the team dir itself
	}
	return nil
}

// fullContainment resolves the team dir and the path from "/" and compares
// the real paths: exact, and only needed for links that leave the tree.
func fullContainment(fsys afero.Fs, root, full string) *PathTraversalError {
	realRoot, err := realpath.ResolvePartial(fsys, root)
	if err != nil {
		return linkError(err)
	}
	realPath, err := realpath.ResolvePartial(fsys, full)
	if err != nil {
		return linkError(err)
	}
	if realPath == realRoot || !strings.HasPrefix(realPath, withSep(realRoot)) {
		return traversal(ReasonSymlinkEscape, "")
	}
	return nil
}

func lstatAfero(fsys afero.Fs, l afero.Lstater, p string) (fs.FileInfo, error) {
	if l != nil {
		info, _, err := l.LstatIfPossible(p)
		return info, err
	}
	return fsys.Stat(p)
}

func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG)
}

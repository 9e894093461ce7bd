package realpath

import (
	"errors"
	"github.com/spf13/afero"
	"io/fs"
	"path/filepath"
	"strings"
)

// Reasons Within refuses a path. Errors other than these (an I/O error
// while checking) are returned as they are: callers fail closed on them.
var (
	// ErrOutside: the path resolves outside the root, or to the root
	// itself, through its names or through symbolic links.
	ErrOutside = errors.New("path resolves outside the root")
	// ErrUnreadableLink: a component is a symbolic link whose target
	// cannot be read (the filesystem has no Readlink, or it failed).
	ErrUnreadableLink = errors.New("symbolic link cannot be read")
)

// Within checks that root/rel stays strictly inside root once every
// symbolic link is followed, under one strict policy shared by every
// caller: a link that cannot be read, a dangling link (a write through it
// would create its target wherever it points), a loop or more than
// MaxHops links are refused; a missing component ends the check (nothing
// below it exists to follow). rel is relative to root and is cleaned
// lexically first, as the path that will be written is (a ".." above
// root, or rel naming root itself, is ErrOutside). root need not exist.
//
// The walk starts at root, one Lstat per component, as the kernel would;
// only when a link climbs above root or points to an absolute place
// outside it does the answer depend on where root really is, and then
// both paths are resolved from "/" (Resolve) and compared.
func Within(fsys afero.Fs, root, rel string) error {
	root = filepath.Clean(root)
	rel = filepath.Clean(rel)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ErrOutside
	}
	linker, _ := fsys.(afero.LinkReader)
	// cur is the resolved path so far; ends[i] is len(cur) before the i-th
	// component below root was appended, so ".." is a slice, not a Join.
	cur := root
	var ends []int
	rest := splitPath(rel)
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
				if hops == 0 {
					return ErrOutside // lexically above the root
				}
				return fullWithin(fsys, root, filepath.Join(root, rel))
			}
			cur, ends = cur[:ends[len(ends)-1]], ends[:len(ends)-1]
			continue
		}
		next := join(cur, c)
		info, err := lstat(fsys, next)
		if err != nil {
			if !isMissing(err) {
				return err
			}
			if fromLink {
				return &fs.PathError{Op: "realpath", Path: next, Err: ErrDangling}
			}
			return nil // the rest does not exist yet: plain names below root
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			hops++
			if hops > MaxHops {
				return &fs.PathError{Op: "realpath", Path: next, Err: ErrLoop}
			}
			target, err := readlink(linker, next)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				t := filepath.Clean(target)
				if t != root && !strings.HasPrefix(t, join(root, "")) {
					return fullWithin(fsys, root, filepath.Join(root, rel))
				}
				cur, ends = root, ends[:0]
				target = strings.TrimPrefix(strings.TrimPrefix(t, root), string(filepath.Separator))
			}
			parts := splitPath(target)
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
		return ErrOutside // resolves to the root itself
	}
	return nil
}

// fullWithin resolves root and full from "/" and compares the real paths.
func fullWithin(fsys afero.Fs, root, full string) error {
	realRoot, err := ResolvePartial(fsys, root)
	if err != nil {
		return err
	}
	realPath, err := ResolvePartial(fsys, full)
	if err != nil {
		return err
	}
	if realPath == realRoot || !strings.HasPrefix(realPath, join(realRoot, "")) {
		return ErrOutside
	}
	return nil
}

// join appends name to dir with exactly one separator, also when dir is
// the filesystem root ("/" + "x" is "/x", never "//x").
func join(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

// readlink reads a link's target; a filesystem that cannot read links, or
// a read that fails, is ErrUnreadableLink (the caller fails closed).
func readlink(linker afero.LinkReader, p string) (string, error) {
	if linker == nil {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: ErrUnreadableLink}
	}
	target, err := linker.ReadlinkIfPossible(p)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: errors.Join(ErrUnreadableLink, err)}
	}
	return target, nil
}

package memdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// ErrMemoryNotFound is returned by Dir.Delete for a memory file that does
// not exist.
var ErrMemoryNotFound = errors.New("memdir: no such memory file")

// indexFor returns the index that points to file (relative to the memory
// directory) and the link target it uses: team/x.md is indexed in
// team/MEMORY.md as "x.md".
func (d *Dir) indexFor(file string) (indexAbs, target string) {
	if rest, ok := strings.CutPrefix(file, TeamDirName+"/"); ok {
		return filepath.Join(d.path, TeamDirName, EntrypointName), rest
	}
	return filepath.Join(d.path, EntrypointName), file
}

// CheckFile validates a memory file name as Save does: a clean relative
// ".md" path below the directory, no hidden segments, not an index. It
// returns an error matching ErrInvalidMemory.
func CheckFile(file string) error {
	_, err := memoryFileName(Memory{File: file})
	return err
}

// Delete removes a memory file and every pointer to it from its index,
// through the write gate (a path that leaves the directory is refused with
// a *PathTraversalError). A file that does not exist gives
// ErrMemoryNotFound; its stale pointers are still removed.
func (d *Dir) Delete(ctx context.Context, file string) error {
	if err := CheckFile(file); err != nil {
		return err
	}
	abs := filepath.Join(d.path, filepath.FromSlash(file))
	if _, err := d.gate.CheckPath(abs); err != nil {
		return err
	}
	_, statErr := d.fs.Stat(abs)
	if statErr == nil {
		if _, err := d.gate.Remove(ctx, abs); err != nil {
			return fmt.Errorf("memdir: delete %s: %w", file, err)
		}
	}
	if err := d.RemovePointers(ctx, file); err != nil {
		return fmt.Errorf("memdir: %s deleted but %s could not be updated: %w", file, EntrypointName, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrMemoryNotFound, file)
	}
	return statErr
}

// RemovePointers drops every index line that links file.
func (d *Dir) RemovePointers(ctx context.Context, file string) error {
	index, target := d.indexFor(file)
	return d.editIndex(ctx, index, func(lines []string) []string { return withoutLinks(lines, target) })
}

// withoutLinks returns lines without those that link target (reusing
// lines' storage).
func withoutLinks(lines []string, target string) []string {
	out := lines[:0]
	for _, l := range lines {
		if !linksTo(l, target) {
			out = append(out, l)
		}
	}
	return out
}

// IndexWithoutPointers returns the text of an index (a MEMORY.md) without
// the lines that link target (a path relative to the index's folder, as
// its links are written), and whether any was dropped: what a memory's
// index must become when the memory is deleted anywhere but on this disk
// (a team server's console, a store).
func IndexWithoutPointers(index, target string) (string, bool) {
	lines := strings.Split(strings.TrimRight(index, "\n"), "\n")
	kept := withoutLinks(slices.Clone(lines), target)
	if len(kept) == len(lines) {
		return index, false
	}
	if len(kept) == 0 {
		return "", true
	}
	return strings.Join(kept, "\n") + "\n", true
}

// IndexWithPointer returns the text of an index with a pointer to target
// appended (IndexLine of m) unless a line links it already, and whether
// it added one: what the index must become when a memory comes back.
func IndexWithPointer(index, target string, m Memory) (string, bool) {
	for _, l := range strings.Split(index, "\n") {
		if linksTo(l, target) {
			return index, false
		}
	}
	if s := strings.TrimRight(index, "\n"); s != "" {
		return s + "\n" + IndexLine(m, target) + "\n", true
	}
	return IndexLine(m, target) + "\n", true
}

// MovePointers makes the pointers to from point to to. Within one index
// the line is rewritten in place; across indexes (into or out of team/)
// it moves to the other index.
func (d *Dir) MovePointers(ctx context.Context, from, to string) error {
	fromIndex, fromTarget := d.indexFor(from)
	toIndex, toTarget := d.indexFor(to)
	var moved []string
	err := d.editIndex(ctx, fromIndex, func(lines []string) []string {
		out := lines[:0]
		for _, l := range lines {
			if !linksTo(l, fromTarget) {
				out = append(out, l)
				continue
			}
			l = relink(l, fromTarget, toTarget)
			if fromIndex == toIndex {
				out = append(out, l)
			} else {
				moved = append(moved, l)
			}
		}
		return out
	})
	if err != nil || len(moved) == 0 {
		return err
	}
	return d.editIndex(ctx, toIndex, func(lines []string) []string { return append(lines, moved...) })
}

// EnsurePointer adds a pointer for file to its index unless one exists,
// titled and hooked from the file's frontmatter (its name without ".md"
// when it has none). It reports whether it added one.
func (d *Dir) EnsurePointer(ctx context.Context, file string) (bool, error) {
	if err := CheckFile(file); err != nil {
		return false, err
	}
	var m Memory
	if content, err := readGated(d, file); err == nil {
		fm, _, _ := ParseFrontmatter(content)
		m = Memory{Name: fm.Name, Description: fm.Description}
	}
	index, target := d.indexFor(file)
	added := false
	err := d.editIndex(ctx, index, func(lines []string) []string {
		for _, l := range lines {
			if linksTo(l, target) {
				return lines
			}
		}
		added = true
		return append(lines, IndexLine(m, target))
	})
	return added, err
}

// readGated reads a memory file's header lines (as a scan does) through
// the gate's confined open.
func readGated(d *Dir, file string) ([]byte, error) {
	f, err := d.gate.Open(filepath.Join(d.path, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLines(f, make([]byte, 0, 1024), frontmatterMaxLines)
}

// editIndex rewrites an index under the gate's lock; an index that does
// not exist is created only when edit leaves lines in it.
func (d *Dir) editIndex(ctx context.Context, index string, edit func(lines []string) []string) error {
	_, err := d.gate.UpdateFile(ctx, index, func(old []byte, exists bool) ([]byte, error) {
		var lines []string
		if s := strings.TrimRight(string(old), "\n"); s != "" {
			lines = strings.Split(s, "\n")
		}
		lines = edit(lines)
		if !exists && len(lines) == 0 {
			return nil, errNoIndexChange
		}
		if exists && strings.Join(lines, "\n") == strings.TrimRight(string(old), "\n") {
			return nil, errNoIndexChange
		}
		if len(lines) == 0 {
			return []byte{}, nil
		}
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	}, 0o644)
	if errors.Is(err, errNoIndexChange) {
		return nil
	}
	return err
}

var errNoIndexChange = errors.New("index unchanged")

// relink replaces the link target from with to in an index line.
func relink(line, from, to string) string {
	for _, old := range []string{"](" + from + ")", "](./" + from + ")"} {
		if strings.Contains(line, old) {
			return strings.Replace(line, old, "]("+to+")", 1)
		}
	}
	return line
}

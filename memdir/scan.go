package memdir

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/spf13/afero"
)

// Default scan limits.
const (
	// maxMemoryFiles is how many headers a scan keeps, newest first.
	maxMemoryFiles = 200
	// frontmatterMaxLines is how many lines of each file a scan reads.
	frontmatterMaxLines = 30
	// maxHeaderBytes bounds the bytes read per file, whatever its lines.
	maxHeaderBytes = 16 << 10
)

// MemoryHeader is what a scan learns about one memory file.
type MemoryHeader struct {
	// Filename is the path relative to the scanned directory, with "/".
	Filename string
	// Path is the absolute path.
	Path    string
	ModTime time.Time
	Frontmatter
	// Links are the [[name]] links in the body lines the scan read (the
	// first HeaderLines of the file), in order, once each; see Links.
	Links []string
}

// ScanOptions tunes ScanMemoryFiles; the zero value means the defaults.
type ScanOptions struct {
	// MaxFiles caps the result (default 200).
	MaxFiles int
	// HeaderLines is how many lines of each file are read (default 30).
	HeaderLines int
	// Parallelism is how many files are read at once (default: GOMAXPROCS,
	// at most 4; 1 reads serially). Workers end before the call returns.
	Parallelism int
}

// ScanMemoryFiles lists the memory files under dir at any depth: every
// regular "*.md" file except those named MEMORY.md (so team/*.md is
// included when dir is the auto-memory dir). Only the first HeaderLines
// lines of each file are read, with one open per file (the mtime comes from
// the open file); a file that cannot be read is left out. Symbolic links
// are not followed. The result is sorted newest first (ties by name) and
// cut to MaxFiles. Only the files kept are parsed, so a directory of
// 20,000 files costs 20,000 short reads but at most MaxFiles parses.
//
// A missing dir gives an empty result; an unreadable dir or a cancelled ctx
// gives an error.
func ScanMemoryFiles(ctx context.Context, fsys afero.Fs, dir string, opts ScanOptions) ([]MemoryHeader, error) {
	defaults.IfUnset(&opts.MaxFiles, maxMemoryFiles)
	defaults.IfUnset(&opts.HeaderLines, frontmatterMaxLines)
	files, err := memoryFiles(ctx, fsys, filepath.Clean(dir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("memdir: scan memory directory: %w", err)
	}
	kept, err := readCandidates(ctx, fsys, files, opts)
	if err != nil {
		return nil, err
	}
	sort.Slice(kept, func(i, j int) bool { return newer(kept[i], kept[j]) })
	if len(kept) > opts.MaxFiles {
		kept = kept[:opts.MaxFiles]
	}
	out := make([]MemoryHeader, len(kept))
	for i, c := range kept {
		fm, body, _ := ParseFrontmatter(c.head)
		out[i] = MemoryHeader{Filename: c.rel, Path: c.abs, ModTime: c.mtime, Frontmatter: fm}
		if bytes.Contains(body, []byte("[[")) {
			out[i].Links = Links(string(body))
		}
	}
	return out, nil
}

// fileRef is a memory file found by the walk, not yet opened.
type fileRef struct{ rel, abs string }

// candidate is a file read during a scan, not yet parsed.
type candidate struct {
	rel, abs string
	mtime    time.Time
	head     []byte
}

// newer orders candidates newest first, then by name.
func newer(a, b candidate) bool {
	if !a.mtime.Equal(b.mtime) {
		return a.mtime.After(b.mtime)
	}
	return a.rel < b.rel
}

// readCandidates reads the headers of files with a few workers, each
// keeping its own best MaxFiles; the union holds the overall best.
func readCandidates(ctx context.Context, fsys afero.Fs, files []fileRef, opts ScanOptions) ([]candidate, error) {
	workers := opts.Parallelism
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	workers = max(1, min(workers, len(files)/32))
	readers := make([]headerReader, workers)
	var wg sync.WaitGroup
	for i := range readers {
		r := &readers[i]
		*r = headerReader{ctx: ctx, fsys: fsys, lines: opts.HeaderLines, max: opts.MaxFiles, buf: make([]byte, 0, 4096)}
		wg.Go(func() {
			for k := i; k < len(files); k += workers {
				if k%64 == i && ctx.Err() != nil {
					return
				}
				r.consider(files[k])
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var all []candidate
	for _, r := range readers {
		all = append(all, r.kept.items...)
	}
	return all, nil
}

// memoryFiles lists the memory files below root: regular "*.md" files
// except MEMORY.md, at any depth, without following links, outside hidden
// folders (such as .team-conflicts).
func memoryFiles(ctx context.Context, fsys afero.Fs, root string) ([]fileRef, error) {
	root = filepath.Clean(root)
	names, err := memoryFileNames(ctx, fsys, root, "", nil)
	files := make([]fileRef, len(names))
	for i, n := range names {
		files[i] = fileRef{rel: n, abs: root + string(filepath.Separator) + filepath.FromSlash(n)}
	}
	return files, err
}

// memoryFileNames lists the memory files below dir by their "/"-separated
// names relative to it (the walk of memoryFiles, without building a path
// per file), skipping hidden folders, which hold none. Only a failure to
// read dir itself is an error. When seen is not nil, every folder read is
// added to it.
func memoryFileNames(ctx context.Context, fsys afero.Fs, dir, rel string, seen *[]string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := fswalk.ReadDir(fsys, dir)
	if err != nil {
		if rel == "" {
			return nil, err
		}
		return nil, nil
	}
	if seen != nil {
		*seen = append(*seen, dir)
	}
	var names []string
	for _, e := range entries {
		name := e.Rel
		if rel != "" {
			name = rel + "/" + e.Rel
		}
		switch {
		case e.Type.IsDir() && !strings.HasPrefix(e.Rel, "."):
			below, err := memoryFileNames(ctx, fsys, dir+string(filepath.Separator)+e.Rel, name, seen)
			if err != nil {
				return nil, err
			}
			names = append(names, below...)
		case IsMemoryFile(name, e.Type):
			names = append(names, name)
		}
	}
	return names, nil
}

// IsMemoryFile reports whether rel (relative to a memory directory, "/"
// separators) of the given type is a memory file: a regular "*.md" file
// other than MEMORY.md, with no hidden ("."-prefixed) folder or name on
// its way (.team-conflicts/ and .team-sync/ hold no memories).
func IsMemoryFile(rel string, typ fs.FileMode) bool {
	return typ.IsRegular() && strings.HasSuffix(rel, ".md") && path.Base(rel) != EntrypointName && !fswalk.Hidden(rel)
}

// headerReader reads file headers for one worker, keeping the best max.
type headerReader struct {
	ctx   context.Context
	fsys  afero.Fs
	lines int
	max   int
	buf   []byte
	kept  keepHeap
}

// consider opens one file, and reads its header only if its mtime could
// place it among the files kept.
func (r *headerReader) consider(ref fileRef) {
	f, err := r.fsys.Open(ref.abs)
	if err != nil {
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return
	}
	c := candidate{rel: ref.rel, abs: ref.abs, mtime: info.ModTime()}
	full := r.kept.Len() >= r.max
	if full && !newer(c, r.kept.items[0]) {
		return
	}
	head, err := readLines(f, r.buf[:0], r.lines)
	if err != nil {
		return
	}
	r.buf = head[:0]
	c.head = append([]byte(nil), head...)
	if full {
		r.kept.items[0] = c
		heap.Fix(&r.kept, 0)
		return
	}
	heap.Push(&r.kept, c)
}

// keepHeap holds the best candidates seen so far; its root is the worst of
// them, the first to go when a better one arrives.
type keepHeap struct{ items []candidate }

func (h *keepHeap) Len() int           { return len(h.items) }
func (h *keepHeap) Less(i, j int) bool { return newer(h.items[j], h.items[i]) }
func (h *keepHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *keepHeap) Push(x any)         { h.items = append(h.items, x.(candidate)) }
func (h *keepHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

// readLines reads r into buf until it holds n complete lines, EOF, or
// maxHeaderBytes; the result ends after the n-th newline.
func readLines(r io.Reader, buf []byte, n int) ([]byte, error) {
	seen := 0
	for len(buf) < maxHeaderBytes {
		if cap(buf)-len(buf) < 1024 {
			grown := make([]byte, len(buf), 2*cap(buf)+1024)
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		chunk := buf[len(buf) : len(buf)+m]
		for i := 0; i < len(chunk); {
			j := bytes.IndexByte(chunk[i:], '\n')
			if j < 0 {
				break
			}
			seen++
			if seen == n {
				return buf[:len(buf)+i+j+1], nil
			}
			i += j + 1
		}
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf[:maxHeaderBytes], nil
}

// FormatManifest renders headers one per line, for a model to choose from:
//
//   - [feedback] testing_policy.md (2026-03-15T10:30:00.000Z): Integration tests use real DB
//
// The type tag and the description are left out when absent; times are
// UTC with milliseconds.
func FormatManifest(headers []MemoryHeader) string {
	var b strings.Builder
	for i, h := range headers {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- ")
		if h.Type != "" {
			b.WriteString("[" + string(h.Type) + "] ")
		}
		b.WriteString(h.Filename)
		b.WriteString(" (" + h.ModTime.UTC().Format("2006-01-02T15:04:05.000Z") + ")")
		if h.Description != "" {
			b.WriteString(": " + h.Description)
		}
	}
	return b.String()
}

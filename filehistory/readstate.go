package filehistory

import (
	"bytes"
	"container/list"
	"errors"
	"io/fs"
	"sync"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
)

// Read-state limits (defaults of ReadStateOptions).
const (
	maxReadFiles       = 100
	maxReadBytes int64 = 25 << 20
)

// Read-before-write refusals.
var (
	// ErrNotRead: the agent writes a file that exists but that it has not
	// read (Write also needs a whole read, not part of the file). It must
	// read the file first.
	ErrNotRead = errors.New("the file has not been read yet; read it first before writing to it")
	// ErrModifiedSinceRead: the file changed (by the user, a teammate's
	// sync or another agent) after the agent read or wrote it. It must
	// read it again; nothing was written.
	ErrModifiedSinceRead = errors.New("the file has been modified since it was read; read it again before writing to it")
)

// ReadStateOptions bounds a ReadState. The zero value means the defaults.
type ReadStateOptions struct {
	// MaxFiles and MaxBytes bound the remembered files (least recently
	// used go first; defaults 100 files, 25 MiB of content).
	MaxFiles int
	MaxBytes int64
}

// View says how much of a file a read showed.
type View struct {
	// Offset and Limit are the read's 1-based first line and line count
	// (0 when not given).
	Offset, Limit int
	// Partial reports whether the read showed only part of the file.
	Partial bool
}

// Change is a file the agent wrote that has changed since.
type Change struct {
	Path string
	// Deleted reports whether the file is gone; Content is what it holds
	// now otherwise.
	Deleted bool
	Content []byte
}

// ReadState remembers what one agent read and wrote, so that its writes
// can refuse to overwrite changes it has not seen. It is safe for
// concurrent use.
type ReadState struct {
	opts ReadStateOptions

	mu    sync.Mutex
	lru   *list.List // of *readEntry, most recent first
	files map[string]*list.Element
	bytes int64
}

type readEntry struct {
	path string
	// content is the whole file as read or written: the check compares
	// it, not the mtime, so a rewrite within one mtime tick is still seen.
	content []byte
	view    View
	wrote   bool
}

// NewReadState returns an empty read state.
func NewReadState(opts ReadStateOptions) *ReadState {
	defaults.IfUnset(&opts.MaxFiles, maxReadFiles)
	defaults.IfUnset(&opts.MaxBytes, maxReadBytes)
	return &ReadState{opts: opts, lru: list.New(), files: map[string]*list.Element{}}
}

// RecordRead remembers that the agent read path, whose whole content was
// content, showing it view.
func (r *ReadState) RecordRead(path string, content []byte, view View) {
	r.put(&readEntry{path: path, content: bytes.Clone(content), view: view})
}

// RecordWrite remembers that the agent wrote content to path: it may
// write the file again without reading it, and Changes reports the file
// when someone else changes it.
func (r *ReadState) RecordWrite(path string, content []byte) {
	r.put(&readEntry{path: path, content: bytes.Clone(content), wrote: true})
}

func (r *ReadState) put(e *readEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(e.path)
	if int64(len(e.content)) > r.opts.MaxBytes {
		return // too large to remember: a later write must read again
	}
	r.files[e.path] = r.lru.PushFront(e)
	r.bytes += int64(len(e.content))
	for r.lru.Len() > r.opts.MaxFiles || r.bytes > r.opts.MaxBytes {
		r.dropLocked(r.lru.Back().Value.(*readEntry).path)
	}
}

func (r *ReadState) dropLocked(path string) {
	if el, ok := r.files[path]; ok {
		r.bytes -= int64(len(el.Value.(*readEntry).content))
		r.lru.Remove(el)
		delete(r.files, path)
	}
}

// forget drops what is remembered of path.
func (r *ReadState) forget(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(path)
}

// CheckWrite decides whether the agent may write path, which now holds
// current (exists false: the file is absent). whole reports whether the
// write replaces the whole file (Write), which needs a whole read; an
// edit needs any read. The file must hold exactly what the agent last
// read or wrote. Call it under the lock that the write then holds.
func (r *ReadState) CheckWrite(path string, current []byte, exists, whole bool) error {
	if !exists {
		return nil // creating a file overwrites nothing
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.files[path]
	if !ok {
		return ErrNotRead
	}
	e := el.Value.(*readEntry)
	if whole && e.view.Partial {
		return ErrNotRead
	}
	if !bytes.Equal(current, e.content) {
		return ErrModifiedSinceRead
	}
	r.lru.MoveToFront(el)
	return nil
}

// Changes returns the files the agent wrote that no longer hold what it
// wrote, read through read (fs.ErrNotExist: deleted). Each change is
// reported once: the state then remembers the new content, as if the
// agent had been shown it.
func (r *ReadState) Changes(read func(path string) ([]byte, error)) []Change {
	r.mu.Lock()
	var wrote []*readEntry
	for el := r.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*readEntry); e.wrote {
			wrote = append(wrote, e)
		}
	}
	r.mu.Unlock()
	var out []Change
	for _, e := range wrote {
		cur, err := read(e.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, Change{Path: e.path, Deleted: true})
			r.forget(e.path)
		case err != nil || bytes.Equal(cur, e.content):
		default:
			out = append(out, Change{Path: e.path, Content: cur})
			r.RecordWrite(e.path, cur)
		}
	}
	return out
}

package recall

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// Corpus limits.
const (
	// maxIndexedFiles bounds how many memory files a Finder indexes; the
	// newest are kept beyond it, so memory stays bounded.
	maxIndexedFiles = 100_000
	// maxIndexedBytes is how much of each file is read and indexed.
	maxIndexedBytes = 16 << 10
)

// corpus is a memory directory kept indexed between queries: a refresh
// walks the tree only when the change detector cannot vouch for it, and
// then reads again only files whose size or mtime changed; removed files
// leave the index.
type corpus struct {
	fs      afero.Fs
	dir     string
	changes *changeDetector

	mu    sync.Mutex // one refresh at a time
	files map[string]fileState
	index *lexical.Index
	snap  *snapshot // as of the last refresh; never changed once made

	// With an Embedder: vectors by the hash of the text embedded, and the
	// texts still to embed (kept until an Embed call succeeds).
	embedder Embedder
	vectors  map[[32]byte]vector
	pending  map[[32]byte]string
	// embedded lists the files that have a vector while embeddedOK.
	embedded   []embeddedFile
	embeddedOK bool

	// What the embedder earned (vectorTrust), and the vectors of the
	// texts that measure it, by the hash of the text.
	trustMu      sync.Mutex
	trust        Trust
	meaningKnown bool
	fitAt        int // how many memories the fit was measured on
	aux          map[[32]byte]vector

	// The vectors on disk (FinderOptions.VectorCache), opened once.
	cacheDir string
	cacheMu  sync.Mutex
	cache    atomic.Pointer[vectorCache]
	cacheErr error
	// cacheErrSaid: the Finder logged cacheErr already.
	cacheErrSaid bool
}

// snapshot is the directory's memories as of one refresh.
type snapshot struct {
	headers []memdir.MemoryHeader // newest first, ties by name
	byName  map[string]memdir.MemoryHeader
	// subjects are each memory's name and description terms, sorted.
	subjects map[string]lexical.Subject
	// links are each memory's [[name]] links, resolved to files.
	links map[string][]string
	// age is each memory's place in headers (0: the newest).
	age map[string]int
	// values are each memory's description terms, once each, sorted.
	values map[string][]string
	// expires is when each memory with an expires date stops holding
	// (memdir.ExpiresKey); recall leaves it out from then on.
	expires map[string]time.Time
}

// expired reports whether the memory rel has expired at now.
func (s *snapshot) expired(rel string, now time.Time) bool {
	t, ok := s.expires[rel]
	return ok && !now.Before(t)
}

type fileState struct {
	size    int64
	mtime   time.Time
	header  memdir.MemoryHeader
	subject lexical.Subject
	links   []string // [[name]] as written
	hash    [32]byte // of the embedded text
}

func newCorpus(fsys afero.Fs, dir string, changes *changeDetector) *corpus {
	return &corpus{fs: fsys, dir: dir, changes: changes, files: map[string]fileState{}, index: lexical.NewIndex()}
}

// statFile is one memory file met by the walk.
type statFile struct {
	rel, abs string
	size     int64
	mtime    time.Time
}

// refresh brings the index up to date with the directory and returns the
// memory headers, newest first (ties by name), like memdir.ScanMemoryFiles
// without its cap. A missing directory is empty.
func (c *corpus) refresh(ctx context.Context) (*snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil && c.changes.unchanged() {
		return c.snap, nil
	}
	snap, err := c.walkAndRead(ctx)
	if err != nil {
		c.changes.walkFailed()
	}
	return snap, err
}

// walkAndRead walks the directory, reads what changed and records the
// walk with the change detector.
func (c *corpus) walkAndRead(ctx context.Context) (*snapshot, error) {
	start := c.changes.walking()
	stats, dirs, err := c.walk(ctx)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		stats, dirs = nil, []string{c.dir}
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("recall: scan memory directory: %w", err)
	}
	if len(stats) > maxIndexedFiles {
		sort.Slice(stats, func(i, j int) bool { return stats[i].mtime.After(stats[j].mtime) })
		stats = stats[:maxIndexedFiles]
	}
	changed := false
	seen := make(map[string]bool, len(stats))
	var stale []statFile
	for _, s := range stats {
		seen[s.rel] = true
		old, ok := c.files[s.rel]
		if !ok || old.size != s.size || !old.mtime.Equal(s.mtime) {
			stale = append(stale, s)
		}
	}
	read, err := c.readAll(ctx, stale)
	if err != nil {
		return nil, err
	}
	for i, s := range stale {
		changed = true
		r := read[i]
		if !r.ok {
			delete(c.files, s.rel)
			c.index.Delete(s.rel)
			continue
		}
		c.files[s.rel] = fileState{size: s.size, mtime: s.mtime, header: r.header, subject: r.subject, links: r.links, hash: r.hash}
		c.index.PutPrepared(r.doc)
		if c.embedder != nil {
			if _, ok := c.vectors[r.hash]; !ok {
				c.pending[r.hash] = r.text
			}
		}
	}
	for rel := range c.files {
		if !seen[rel] {
			changed = true
			delete(c.files, rel)
			c.index.Delete(rel)
		}
	}
	if changed || c.snap == nil {
		headers := make([]memdir.MemoryHeader, 0, len(c.files))
		byName := make(map[string]memdir.MemoryHeader, len(c.files))
		for rel, f := range c.files {
			headers = append(headers, f.header)
			byName[rel] = f.header
		}
		sort.Slice(headers, func(i, j int) bool {
			if !headers[i].ModTime.Equal(headers[j].ModTime) {
				return headers[i].ModTime.After(headers[j].ModTime)
			}
			return headers[i].Filename < headers[j].Filename
		})
		c.snap = c.snapshot(headers, byName)
	}
	c.changes.walked(start, dirs)
	return c.snap, nil
}

// snapshot builds a snapshot of the files (under c.mu), and drops the
// vectors no file holds any more.
func (c *corpus) snapshot(headers []memdir.MemoryHeader, byName map[string]memdir.MemoryHeader) *snapshot {
	c.embeddedOK = false // the files changed
	snap := &snapshot{headers: headers, byName: byName, subjects: make(map[string]lexical.Subject, len(c.files)), links: map[string][]string{},
		age: make(map[string]int, len(headers)), values: make(map[string][]string, len(c.files))}
	for i, h := range headers {
		snap.age[h.Filename] = i
		if t, ok := h.Expires(); ok {
			if snap.expires == nil {
				snap.expires = map[string]time.Time{}
			}
			snap.expires[h.Filename] = t
		}
	}
	byLinkName := make(map[string]string, len(c.files))
	for rel, f := range c.files {
		snap.subjects[rel] = f.subject
		snap.values[rel] = slices.Compact(slices.Sorted(slices.Values(lexical.Tokenize(f.header.Description))))
		for _, n := range memdir.LinkNames(rel, f.header.Name) {
			if old, taken := byLinkName[n]; !taken || rel < old {
				byLinkName[n] = rel
			}
		}
	}
	for rel, f := range c.files {
		for _, l := range f.links {
			if to, ok := byLinkName[memdir.LinkKey(l)]; ok && to != rel {
				snap.links[rel] = append(snap.links[rel], to)
			}
		}
	}
	if c.embedder != nil {
		live := make(map[[32]byte]bool, len(c.files))
		for _, f := range c.files {
			live[f.hash] = true
		}
		for h := range c.vectors {
			if !live[h] {
				delete(c.vectors, h)
			}
		}
		for h := range c.pending {
			if !live[h] {
				delete(c.pending, h)
			}
		}
	}
	return snap
}

// embedPending embeds the texts read but not embedded yet; what fails
// stays pending for the next Find.
func (c *corpus) embedPending(ctx context.Context) error {
	c.openCache(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	hashes := make([][32]byte, 0, len(c.pending))
	for h := range c.pending {
		if v, ok := c.cached(h); ok {
			c.vectors[h] = v
			c.embeddedOK = false
			delete(c.pending, h)
			continue
		}
		hashes = append(hashes, h)
	}
	if len(hashes) == 0 {
		return nil
	}
	sort.Slice(hashes, func(i, j int) bool { return string(hashes[i][:]) < string(hashes[j][:]) })
	texts := make([]string, len(hashes))
	for i, h := range hashes {
		texts[i] = c.pending[h]
	}
	vecs, err := embedAll(ctx, c.embedder, texts)
	if err != nil {
		return err
	}
	for i, h := range hashes {
		c.vectors[h] = vecs[i]
		c.embeddedOK = false
		delete(c.pending, h)
	}
	c.remember(hashes, vecs)
	return nil
}

// cached returns the vector of hash from the vector cache, if open.
func (c *corpus) cached(h [32]byte) (vector, bool) {
	vc := c.cache.Load()
	if vc == nil {
		return nil, false
	}
	return vc.get(h)
}

// remember writes vectors to the vector cache, if open; a cache that
// cannot be written only costs embedding them again later.
func (c *corpus) remember(hashes [][32]byte, vecs []vector) {
	if vc := c.cache.Load(); vc != nil {
		_ = vc.put(hashes, vecs)
	}
}

// embedAux returns the vectors of texts that are not memories (the
// embedder's tests), embedding only those not met before.
func (c *corpus) embedAux(ctx context.Context, texts []string) ([]vector, error) {
	c.mu.Lock()
	if c.aux == nil {
		c.aux = map[[32]byte]vector{}
	}
	out := make([]vector, len(texts))
	var todo []string
	var at []int
	for i, t := range texts {
		h := sha256.Sum256([]byte(t))
		if v, ok := c.aux[h]; ok {
			out[i] = v
		} else if v, ok := c.cached(h); ok {
			out[i], c.aux[h] = v, v
		} else {
			todo, at = append(todo, t), append(at, i)
		}
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return out, nil
	}
	vecs, err := embedAll(ctx, c.embedder, todo)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hashes := make([][32]byte, len(todo))
	for j, i := range at {
		hashes[j] = sha256.Sum256([]byte(todo[j]))
		out[i] = vecs[j]
		c.aux[hashes[j]] = vecs[j]
	}
	c.remember(hashes, vecs)
	return out, nil
}

// rankOf returns key's rank (1: the most similar) among the embedded
// memories by cosine to q, ties against it; false when it is not
// embedded or ranks below limit.
func (c *corpus) rankOf(q vector, key string, limit int) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vectors[c.files[key].hash]
	if !ok {
		return 0, false
	}
	own, rank := cosine(q, v), 1
	for _, e := range c.embeddedFiles() {
		if e.rel != key && cosine(q, e.v) >= own {
			if rank++; rank > limit {
				return 0, false
			}
		}
	}
	return rank, true
}

// similarities returns the cosine to q of every embedded memory keep
// keeps, in no order.
func (c *corpus) similarities(q vector, keep func(rel string) bool) []scored {
	c.mu.Lock()
	defer c.mu.Unlock()
	embedded := c.embeddedFiles()
	out := make([]scored, 0, len(embedded))
	for _, e := range embedded {
		if keep(e.rel) {
			out = append(out, scored{e.rel, cosine(q, e.v)})
		}
	}
	return out
}

// embeddedFile is a memory and its vector.
type embeddedFile struct {
	rel string
	v   vector
}

// maxVectorBlock bounds the block embeddedFiles copies the vectors into
// (each change of the directory copies it again).
const maxVectorBlock = 64 << 20

// embeddedFiles returns the memories that have a vector (under c.mu),
// listed again only after the files or the vectors changed.
func (c *corpus) embeddedFiles() []embeddedFile {
	if c.embeddedOK {
		return c.embedded
	}
	c.embedded = c.embedded[:0]
	size := 0
	for _, f := range c.files {
		if v, ok := c.vectors[f.hash]; ok {
			size += len(v)
		}
	}
	// Up to maxVectorBlock the vectors are moved side by side into one
	// block, so a Find reads them in order from memory instead of from
	// wherever each was made; the vector cache then keeps the block's
	// copy too, not a second one.
	var block vector
	if size <= maxVectorBlock {
		block = make(vector, 0, size)
	}
	vc := c.cache.Load()
	for rel, f := range c.files {
		v, ok := c.vectors[f.hash]
		if !ok {
			continue
		}
		if block != nil {
			block = append(block, v...)
			v = block[len(block)-len(v) : len(block) : len(block)]
			c.vectors[f.hash] = v
			if vc != nil {
				vc.share(f.hash, v)
			}
		}
		c.embedded = append(c.embedded, embeddedFile{rel, v})
	}
	c.embeddedOK = true
	return c.embedded
}

// walk lists the memory files (memdir.IsMemoryFile: "*.md" files except
// MEMORY.md, at any depth, outside hidden folders, links not followed)
// with their size and mtime, and the folders that can hold them.
func (c *corpus) walk(ctx context.Context) ([]statFile, []string, error) {
	lstater, _ := c.fs.(afero.Lstater)
	var out []statFile
	dirs := []string{c.dir}
	err := fswalk.Walk(ctx, c.fs, c.dir, func(e fswalk.Entry) error {
		if e.Type.IsDir() && !fswalk.Hidden(e.Rel) {
			dirs = append(dirs, e.Abs)
		}
		if !memdir.IsMemoryFile(e.Rel, e.Type) {
			return nil
		}
		var info fs.FileInfo
		var err error
		if lstater != nil {
			info, _, err = lstater.LstatIfPossible(e.Abs)
		} else {
			info, err = c.fs.Stat(e.Abs)
		}
		if err != nil || !info.Mode().IsRegular() {
			return nil // gone or replaced since the directory was read
		}
		out = append(out, statFile{rel: e.Rel, abs: e.Abs, size: info.Size(), mtime: info.ModTime()})
		return nil
	})
	return out, dirs, err
}

// readFile is what read found in one file.
type readFile struct {
	doc     lexical.Prepared
	header  memdir.MemoryHeader
	subject lexical.Subject
	links   []string
	text    string // to embed (with an Embedder)
	hash    [32]byte
	ok      bool
}

// readAll reads and tokenizes files, several at a time when there are
// many (the first Find of a directory reads them all).
func (c *corpus) readAll(ctx context.Context, files []statFile) ([]readFile, error) {
	out := make([]readFile, len(files))
	workers := max(1, min(runtime.GOMAXPROCS(0), 4, len(files)/32))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := w; k < len(files); k += workers {
				if k%256 == w && ctx.Err() != nil {
					return
				}
				doc, header, ok := c.read(files[k])
				if !ok {
					continue
				}
				prepared := c.index.Prepare(doc)
				r := readFile{doc: prepared, header: header, ok: true, subject: prepared.Subject(), links: memdir.Links(doc.Body)}
				if c.embedder != nil {
					r.text = embedText(doc.Name, doc.Description, doc.Body)
					r.hash = sha256.Sum256([]byte(r.text))
				}
				out[k] = r
			}
		})
	}
	wg.Wait()
	return out, ctx.Err()
}

// read loads one file's header and the start of its body.
func (c *corpus) read(s statFile) (lexical.Document, memdir.MemoryHeader, bool) {
	f, err := c.fs.Open(s.abs)
	if err != nil {
		return lexical.Document{}, memdir.MemoryHeader{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIndexedBytes))
	if err != nil {
		return lexical.Document{}, memdir.MemoryHeader{}, false
	}
	fm, body, _ := memdir.ParseFrontmatter(data)
	h := memdir.MemoryHeader{Filename: s.rel, Path: s.abs, ModTime: s.mtime, Frontmatter: fm}
	return lexical.Document{Key: s.rel, Name: fm.Name, Description: fm.Description, Body: string(body)}, h, true
}

// search ranks the indexed memories for query, leaving out skip.
func (c *corpus) search(query string, k int, skip func(rel string) bool) []lexical.Hit {
	return c.index.Search(query, k, keepAll(skip))
}

// searchAll is search that also returns every match, in no order.
func (c *corpus) searchAll(query string, k int, skip func(rel string) bool) (top, all []lexical.Hit) {
	return c.index.SearchAll(query, k, keepAll(skip))
}

// keepAll turns a skip test into the index's keep test.
func keepAll(skip func(rel string) bool) func(string) bool {
	if skip == nil {
		return nil
	}
	return func(rel string) bool { return !skip(rel) }
}

package recall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// IdentifiedEmbedder is an Embedder that names itself: what it returns
// for a text changes only when its EmbedderID does (put the model's name
// and endpoint in it). A vector cache is then found without embedding
// anything; an Embedder without it is known by the vectors it gives a
// fixed set of texts (one Embed call per Finder).
type IdentifiedEmbedder interface {
	Embedder
	EmbedderID() string
}

// Vector cache limits.
const (
	// vectorCacheMagic starts every cache file, before the embedder's
	// identity and a newline.
	vectorCacheMagic = "agentmem vectors 1 "
	// maxVectorCacheBytes is how large a cache file may grow before it
	// is rewritten with its newest half (64 MiB: about 120,000 vectors
	// of 512 dimensions).
	maxVectorCacheBytes = 64 << 20
	// maxVectorDims bounds one record's length.
	maxVectorDims = 1 << 14
)

// vectorCache keeps an embedder's vectors on disk, by the SHA-256 of the
// text embedded, in one append-only file per embedder identity under a
// directory: a new Finder, a restart or another directory holding the
// same memory (a teammate's, pulled) finds its vector there instead of
// embedding it again. A record is the text's hash, the vector's length
// (uint16) and its int8 values, appended in one write, so several
// processes may share the file; a torn last record (a crash mid-append)
// is cut off on open. A file whose first line names another identity is
// left alone and not used.
type vectorCache struct {
	mu   sync.Mutex
	path string
	have map[[32]byte]vector
	// size is the file's length; past maxVectorCacheBytes the file is
	// rewritten with its newest half.
	size int64
}

// openVectorCache opens (or creates) the cache of identity under dir.
func openVectorCache(dir, identity string) (*vectorCache, error) {
	sum := sha256.Sum256([]byte(identity))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recall: vector cache %s: %w", dir, err)
	}
	c := &vectorCache{path: filepath.Join(dir, hex.EncodeToString(sum[:12])+".vectors"), have: map[[32]byte]vector{}}
	header := []byte(vectorCacheMagic + identity + "\n")
	data, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, os.ErrNotExist) || (err == nil && len(data) == 0):
		if err := os.WriteFile(c.path, header, 0o600); err != nil {
			return nil, fmt.Errorf("recall: vector cache: %w", err)
		}
		c.size = int64(len(header))
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("recall: vector cache: %w", err)
	case !bytes.HasPrefix(data, header):
		return nil, fmt.Errorf("recall: vector cache %s belongs to another embedder; remove it", c.path)
	}
	whole := c.load(data[len(header):]) + len(header)
	if whole < len(data) {
		// A torn last record: cut it off so appends line up again.
		if err := os.Truncate(c.path, int64(whole)); err != nil {
			return nil, fmt.Errorf("recall: vector cache: %w", err)
		}
	}
	c.size = int64(whole)
	return c, nil
}

// load reads the records of data into have and returns how many bytes
// of whole records it read.
func (c *vectorCache) load(data []byte) int {
	at := 0
	for len(data)-at >= 34 {
		n := int(binary.LittleEndian.Uint16(data[at+32:]))
		if n == 0 || len(data)-at-34 < n {
			break
		}
		var h [32]byte
		copy(h[:], data[at:])
		v := make(vector, n)
		for i, b := range data[at+34 : at+34+n] {
			v[i] = int8(b)
		}
		c.have[h] = v
		at += 34 + n
	}
	return at
}

// get returns the vector of the text with hash h, if the cache has it.
func (c *vectorCache) get(h [32]byte) (vector, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.have[h]
	return v, ok
}

// put appends vectors to the file (and keeps them); a failure to write
// leaves them only in memory.
func (c *vectorCache) put(hashes [][32]byte, vecs []vector) error {
	var buf bytes.Buffer
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range hashes {
		v := vecs[i]
		if len(v) == 0 || len(v) > maxVectorDims {
			continue
		}
		c.have[h] = v
		buf.Write(h[:])
		_ = binary.Write(&buf, binary.LittleEndian, uint16(len(v)))
		for _, x := range v {
			buf.WriteByte(byte(x))
		}
	}
	if buf.Len() == 0 {
		return nil
	}
	if c.size+int64(buf.Len()) > maxVectorCacheBytes {
		return c.rewriteNewest(buf.Bytes())
	}
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	c.size += int64(buf.Len())
	return nil
}

// rewriteNewest replaces the file with its newest half of records and
// more (under c.mu), through a temporary file and a rename.
func (c *vectorCache) rewriteNewest(more []byte) error {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	nl := bytes.IndexByte(data, '\n') + 1
	header, records := data[:nl], data[nl:]
	at := 0
	for len(records)-at >= 34 && at < len(records)/2 {
		n := int(binary.LittleEndian.Uint16(records[at+32:]))
		if len(records)-at-34 < n {
			break
		}
		at += 34 + n
	}
	keep := records[at:]
	tmp := c.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	_, err = io.Copy(f, io.MultiReader(bytes.NewReader(header), bytes.NewReader(keep), bytes.NewReader(more)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	c.size = int64(len(header) + len(keep) + len(more))
	return nil
}

// openCache opens the vector cache of the corpus's embedder once (no
// cache without FinderOptions.VectorCache). An embedder without an
// EmbedderID is known by its vectors of meaningPairs, embedded here.
func (c *corpus) openCache(ctx context.Context) {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	if c.cacheDir == "" || c.cache.Load() != nil || c.cacheErr != nil {
		return
	}
	var identity string
	if ie, ok := c.embedder.(IdentifiedEmbedder); ok {
		identity = "id " + ie.EmbedderID()
	} else {
		vecs, err := c.embedAux(ctx, meaningTexts())
		if err != nil {
			return // tried again with the next Find
		}
		h := sha256.New()
		for _, v := range vecs {
			_ = binary.Write(h, binary.LittleEndian, uint16(len(v)))
			for _, x := range v {
				h.Write([]byte{byte(x)})
			}
		}
		identity = "vectors " + hex.EncodeToString(h.Sum(nil))
	}
	vc, err := openVectorCache(c.cacheDir, identity)
	if err != nil {
		c.cacheErr = err
		return
	}
	c.cache.Store(vc)
}

package recall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/spf13/afero"
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
	vectorCacheMagic = "agentmem vectors 2 "
	// maxVectorCacheBytes is how large a cache file may grow before it
	// is rewritten with its newest half (64 MiB: about 120,000 vectors
	// of 512 dimensions).
	maxVectorCacheBytes = 64 << 20
	// maxVectorDims bounds one record's length.
	maxVectorDims = 1 << 14
	// recordHead is a record's fixed part: the marker, the text's hash,
	// the vector's length and the checksum.
	recordHead = 4 + 32 + 2 + 4
)

// recordMarker starts every record, so a reader finds the next whole
// record after a torn or garbled one.
var recordMarker = [4]byte{0xA7, 0x3E, 0x91, 0x5C}

// vectorCache keeps an embedder's vectors on disk, by the SHA-256 of the
// text embedded, in one append-only file per embedder identity under a
// directory: a new Finder, a restart or another directory holding the
// same memory (a teammate's, pulled) finds its vector there instead of
// embedding it again. A record is a marker, the text's hash, the
// vector's length (uint16), a CRC-32 of those and the values, and the
// int8 values, appended in one write, so several processes may share
// the file. A record that is torn (a crash mid-append), garbled or not a
// unit vector is skipped, never read as another's: the reader goes on
// at the next marker. A file whose first line names another identity is
// not used. Only a cache: what is lost is embedded again.
type vectorCache struct {
	mu   sync.Mutex
	path string
	have map[[32]byte]vector
	// broken stops writing after a failed write, so a short write is
	// never followed by more records from this process.
	broken bool
}

// openVectorCache opens (or creates) the cache of identity under dir.
func openVectorCache(dir, identity string) (*vectorCache, error) {
	sum := sha256.Sum256([]byte(identity))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recall: vector cache %s: %w", dir, err)
	}
	c := &vectorCache{path: filepath.Join(dir, hex.EncodeToString(sum[:12])+".vectors"), have: map[[32]byte]vector{}}
	header := []byte(vectorCacheMagic + identity + "\n")
	data, err := readAtMost(c.path, 2*maxVectorCacheBytes)
	switch {
	case errors.Is(err, os.ErrNotExist) || (err == nil && len(data) < len(header) && bytes.HasPrefix(header, data)):
		// New, or a header torn by a crash: start the file afresh.
		if err := writeCache(c.path, header); err != nil {
			return nil, fmt.Errorf("recall: vector cache: %w", err)
		}
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("recall: vector cache: %w", err)
	case !bytes.HasPrefix(data, header):
		return nil, fmt.Errorf("recall: vector cache %s belongs to another embedder; remove it", c.path)
	}
	c.load(data[len(header):])
	return c, nil
}

// writeCache replaces a cache file whole (atomicfile, without the
// fsync: a cache lost to a power cut is only embedded again).
func writeCache(path string, data []byte) error {
	return atomicfile.WriteFileNoSync(afero.NewOsFs(), path, data, 0o600)
}

// readAtMost reads a file, refusing one larger than limit.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes; remove it", path, limit)
	}
	return data, err
}

// load reads the whole, sound records of data into have.
func (c *vectorCache) load(data []byte) {
	for len(data) >= recordHead {
		if !bytes.HasPrefix(data, recordMarker[:]) {
			next := bytes.Index(data[1:], recordMarker[:])
			if next < 0 {
				return
			}
			data = data[1+next:]
			continue
		}
		h, v, size, ok := decodeRecord(data)
		if !ok {
			data = data[len(recordMarker):] // look for the next marker
			continue
		}
		c.have[h] = v
		data = data[size:]
	}
}

// decodeRecord reads the record at the start of data: its hash, vector
// and size; false when it is torn, fails its checksum, or is not a
// quantized unit vector (or the zero vector).
func decodeRecord(data []byte) (h [32]byte, v vector, size int, ok bool) {
	n := int(binary.LittleEndian.Uint16(data[36:]))
	size = recordHead + n
	if n == 0 || n > maxVectorDims || len(data) < size {
		return h, nil, 0, false
	}
	sum := crc32.NewIEEE()
	sum.Write(data[4:38])
	sum.Write(data[recordHead:size])
	if sum.Sum32() != binary.LittleEndian.Uint32(data[38:]) {
		return h, nil, 0, false
	}
	copy(h[:], data[4:36])
	v = make(vector, n)
	var norm float64
	for i, b := range data[recordHead:size] {
		v[i] = int8(b)
		norm += float64(v[i]) * float64(v[i])
	}
	if norm != 0 && math.Abs(math.Sqrt(norm)/127-1) > 0.1 {
		return h, nil, 0, false
	}
	return h, v, size, true
}

// encodeRecord appends the record of h and v to buf.
func encodeRecord(buf *bytes.Buffer, h [32]byte, v vector) {
	var head [recordHead]byte
	copy(head[:4], recordMarker[:])
	copy(head[4:36], h[:])
	binary.LittleEndian.PutUint16(head[36:], uint16(len(v)))
	values := make([]byte, len(v))
	for i, x := range v {
		values[i] = byte(x)
	}
	sum := crc32.NewIEEE()
	sum.Write(head[4:38])
	sum.Write(values)
	binary.LittleEndian.PutUint32(head[38:], sum.Sum32())
	buf.Write(head[:])
	buf.Write(values)
}

// get returns the vector of the text with hash h, if the cache has it.
func (c *vectorCache) get(h [32]byte) (vector, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.have[h]
	return v, ok
}

// share keeps v, equal to the vector held for h, in its place, so the
// Finder's copy and the cache's are one.
func (c *vectorCache) share(h [32]byte, v vector) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.have[h]; ok && slices.Equal(old, v) {
		c.have[h] = v
	}
}

// put appends vectors to the file (and keeps them); after a failed write
// they are kept in memory only.
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
		encodeRecord(&buf, h, v)
	}
	if buf.Len() == 0 || c.broken {
		return nil
	}
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		c.broken = true
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(buf.Bytes()); err != nil {
		c.broken = true
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	if info, err := f.Stat(); err == nil && info.Size() > maxVectorCacheBytes {
		return c.rewriteNewest()
	}
	return nil
}

// rewriteNewest replaces the file with its newest half of records (under
// c.mu), through a temporary file of its own and a rename.
func (c *vectorCache) rewriteNewest() error {
	data, err := readAtMost(c.path, 2*maxVectorCacheBytes)
	if err != nil {
		c.broken = true
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	nl := bytes.IndexByte(data, '\n') + 1
	half := data[nl+(len(data)-nl)/2:]
	if at := bytes.Index(half, recordMarker[:]); at >= 0 {
		half = half[at:]
	} else {
		half = nil
	}
	if err := writeCache(c.path, append(slices.Clip(data[:nl]), half...)); err != nil {
		c.broken = true
		return fmt.Errorf("recall: vector cache: %w", err)
	}
	return nil
}

// cacheFailure returns, once, why the vector cache could not be opened
// (nil when it opened, or when that was said already).
func (c *corpus) cacheFailure() error {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	if c.cacheErr == nil || c.cacheErrSaid {
		return nil
	}
	c.cacheErrSaid = true
	return c.cacheErr
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

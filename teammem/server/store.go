package server

import (
	"sort"
	"strings"

	"context"
	"errors"
	"fmt"
	"golang.org/x/text/unicode/norm"
	"maps"
	"sync"
	"time"

	"github.com/agentmem/agentmem/teammem"
)

// Repo names one repository of one tenant.
type Repo struct {
	Tenant string
	Name   string
}

// Snapshot is a repo's state.
type Snapshot struct {
	Version      int64
	Checksum     string
	LastModified time.Time
	// Entries is nil when the content was not asked for.
	Entries    map[string]string
	Checksums  map[string]string
	Tombstones map[string]int64
}

// PutRequest is one conditional upsert.
type PutRequest struct {
	// IfMatch, when set, must equal the repo's current checksum.
	IfMatch string
	Entries map[string]string
	// Deletes are keys to remove and remember as tombstones.
	Deletes []string
	// MaxEntries bounds the entries the repo may hold after the write
	// (0: no limit).
	MaxEntries int
	Now        time.Time
}

// Errors a Store returns.
var (
	// ErrNotFound: the repo has no data yet.
	ErrNotFound = errors.New("server: repo has no team memory")
	// ErrPreconditionFailed: IfMatch did not match; nothing was written.
	ErrPreconditionFailed = errors.New("server: the repo changed since the client read it")
)

// TooManyEntriesError reports a write that would exceed MaxEntries;
// nothing was written.
type TooManyEntriesError struct {
	Max, Received int
}

func (e *TooManyEntriesError) Error() string {
	return fmt.Sprintf("server: the repo would hold %d entries, more than the limit of %d", e.Received, e.Max)
}

// Store keeps team memory. Put must be atomic: the IfMatch check, the
// limit check and the write happen together or not at all, even across
// processes sharing the store. Implementations must be safe for
// concurrent use; StoreSuite checks all of this.
type Store interface {
	// Get returns a repo's state, with Entries only when withContent.
	Get(ctx context.Context, repo Repo, withContent bool) (Snapshot, error)
	// Put applies a conditional upsert and returns the new state (without
	// Entries).
	Put(ctx context.Context, repo Repo, req PutRequest) (Snapshot, error)
	Close() error
}

// apply computes the state after req on top of cur (which may be empty),
// or the error that refuses it. Shared by every store so they agree.
func apply(cur Snapshot, exists bool, req PutRequest) (Snapshot, error) {
	if req.IfMatch != "" && (!exists || req.IfMatch != cur.Checksum) {
		return Snapshot{}, ErrPreconditionFailed
	}
	next := Snapshot{
		Version:    cur.Version + 1,
		Entries:    maps.Clone(cur.Entries),
		Checksums:  maps.Clone(cur.Checksums),
		Tombstones: maps.Clone(cur.Tombstones),
	}
	// A store that keeps contents elsewhere passes cur.Entries == nil with
	// exists; it then writes req.Entries itself.
	trackContent := cur.Entries != nil || !exists
	if next.Entries == nil && trackContent {
		next.Entries = map[string]string{}
	}
	if next.Checksums == nil {
		next.Checksums = map[string]string{}
	}
	if next.Tombstones == nil {
		next.Tombstones = map[string]int64{}
	}
	for _, k := range req.Deletes {
		if _, ok := next.Checksums[k]; ok {
			delete(next.Entries, k)
			delete(next.Checksums, k)
			next.Tombstones[k] = req.Now.UnixMilli()
		}
	}
	for k, v := range req.Entries {
		if next.Entries != nil {
			next.Entries[k] = v
		}
		next.Checksums[k] = teammem.EntryChecksum(v)
		delete(next.Tombstones, k)
	}
	if keys := keyConflicts(next.Checksums, req.Entries); keys != nil {
		return Snapshot{}, &KeyConflictError{Keys: keys}
	}
	if req.MaxEntries > 0 && len(next.Checksums) > req.MaxEntries {
		return Snapshot{}, &TooManyEntriesError{Max: req.MaxEntries, Received: len(next.Checksums)}
	}
	next.Checksum = teammem.RepoChecksum(next.Checksums)
	next.LastModified = req.Now.UTC().Truncate(time.Millisecond)
	return next, nil
}

// MemoryStore keeps everything in memory: for tests and throwaway servers.
type MemoryStore struct {
	mu    sync.Mutex
	repos map[Repo]Snapshot
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{repos: map[Repo]Snapshot{}} }

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, repo Repo, withContent bool) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.repos[repo]
	if !ok {
		return Snapshot{}, ErrNotFound
	}
	out := cur
	out.Checksums = maps.Clone(cur.Checksums)
	out.Tombstones = maps.Clone(cur.Tombstones)
	out.Entries = nil
	if withContent {
		out.Entries = maps.Clone(cur.Entries)
	}
	return out, nil
}

// Put implements Store.
func (s *MemoryStore) Put(_ context.Context, repo Repo, req PutRequest) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.repos[repo]
	next, err := apply(cur, ok, req)
	if err != nil {
		return Snapshot{}, err
	}
	s.repos[repo] = next
	out := next
	out.Entries = nil
	out.Checksums = maps.Clone(next.Checksums)
	out.Tombstones = maps.Clone(next.Tombstones)
	return out, nil
}

// Close implements Store.
func (s *MemoryStore) Close() error { return nil }

// KeyConflictError reports a write that would leave keys that cannot all
// exist as files on a disk: one is a folder of another ("a.md" and
// "a.md/x.md"), or two differ only in case or Unicode form.
type KeyConflictError struct{ Keys []string }

func (e *KeyConflictError) Error() string {
	return "server: keys that cannot coexist on a filesystem: " + strings.Join(e.Keys, ", ")
}

// keyConflicts returns the pairs of keys, at least one of them in added,
// that cannot coexist among live keys, sorted.
func keyConflicts(live map[string]string, added map[string]string) []string {
	if len(added) == 0 {
		return nil
	}
	dirs := map[string]string{}   // every folder of a live key → one key below it
	folded := map[string]string{} // case- and NFC-folded key → key
	found := map[string]bool{}
	for k := range live {
		for i := strings.IndexByte(k, '/'); i >= 0; i = next(k, i) {
			dirs[k[:i]] = k
		}
		f := strings.ToLower(norm.NFC.String(k))
		if other, ok := folded[f]; ok && other != k {
			_, a := added[k]
			_, b := added[other]
			if a || b {
				found[k], found[other] = true, true
			}
		}
		folded[f] = k
	}
	for k := range added {
		if below, ok := dirs[k]; ok {
			found[k], found[below] = true, true
		}
		for i := strings.IndexByte(k, '/'); i >= 0; i = next(k, i) {
			if _, ok := live[k[:i]]; ok {
				found[k], found[k[:i]] = true, true
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	out := make([]string, 0, len(found))
	for k := range found {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// next returns the index of the next '/' in k after i, or -1.
func next(k string, i int) int {
	j := strings.IndexByte(k[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

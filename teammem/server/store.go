package server

import (
	"context"
	"errors"
	"fmt"
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

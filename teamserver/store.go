package teamserver

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"golang.org/x/text/unicode/norm"
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
	// Author names who writes (the token's name), for the history; the
	// Provenance (door, session, origin, reviewer) is recorded beside it.
	Author string
	teamwire.Provenance
	// MaxRepos bounds the repos one tenant may hold; a write that would
	// create one more fails with ErrTooManyRepos (0: no limit).
	MaxRepos int
	// Retention bounds what the store keeps besides live entries.
	Retention Retention
	Now       time.Time
}

// Retention bounds tombstones and history. Zero fields keep everything.
type Retention struct {
	// TombstoneAge drops tombstones older than this; MaxTombstones keeps
	// at most this many per repo (the newest).
	TombstoneAge  time.Duration
	MaxTombstones int
	// HistoryKeep keeps at most this many revisions per key (the newest),
	// and HistoryAge drops revisions older than this, except each live
	// key's newest.
	HistoryKeep int
	HistoryAge  time.Duration
}

// Revision is one recorded write of a key: its content then (only from
// Store.Revision), or its deletion.
type Revision struct {
	Key      string
	Version  int64
	Checksum string // "" for a deletion
	Author   string
	Time     time.Time
	Deleted  bool
	Content  string
	teamwire.Provenance
}

// Change is one accepted write of a repo.
type Change struct {
	Version int64
	Time    time.Time
	Author  string
	Keys    []string
	// Ops says what the write did to each of Keys, in its order
	// (KeyCreated, KeyChanged, KeyDeleted); nil for a change recorded
	// before the operations were.
	Ops []string
	teamwire.Provenance
}

// What a repo write did to one key (Change.Ops).
const (
	KeyCreated = "created"
	KeyChanged = "changed"
	KeyDeleted = "deleted"
)

// keyOp is what revision r of a write did, given the repo before it.
func keyOp(cur Snapshot, r Revision) string {
	switch _, was := cur.Checksums[r.Key]; {
	case r.Deleted:
		return KeyDeleted
	case was:
		return KeyChanged
	}
	return KeyCreated
}

// Errors a Store returns.
var (
	// ErrNotFound: the repo has no data yet.
	ErrNotFound = errors.New("server: repo has no team memory")
	// ErrPreconditionFailed: IfMatch did not match; nothing was written.
	ErrPreconditionFailed = errors.New("server: the repo changed since the client read it")
	// ErrTooManyRepos: the write would create a repo beyond MaxRepos.
	ErrTooManyRepos = errors.New("server: the tenant holds as many repos as it may")
	// ErrNoRevision: the key has no revision with that version.
	ErrNoRevision = errors.New("server: no such revision")
	// ErrOverloaded: the store could not take the request in time (no
	// free connection, the database busy); the client should retry.
	ErrOverloaded = errors.New("server: the store is busy")
	// ErrStorageFull: the store's disk (or its quota) is full; nothing was
	// written. Answered 507 with Retry-After: the operator must free
	// space, and /readyz says not ready meanwhile.
	ErrStorageFull = errors.New("server: the store's disk is full")
	// ErrStoreReadOnly: the store takes no writes (a read-only database
	// file or filesystem, a PostgreSQL standby); nothing was written.
	// Answered 503 with Retry-After, and /readyz says not ready meanwhile.
	ErrStoreReadOnly = errors.New("server: the store is read-only")
)

// TooManyEntriesError reports a write that would exceed MaxEntries;
// nothing was written.
type TooManyEntriesError struct {
	Max, Received int
}

func (e *TooManyEntriesError) Error() string {
	return fmt.Sprintf("server: the repo would hold %d entries, more than the limit of %d", e.Received, e.Max)
}

// Store is a store of every protocol the server speaks and of
// everything the handler can ask: what NewMemoryStore and NewSQLStore
// return. NewHandler needs only a TeamStore and serves the other
// protocols a store has (see MemoryStores, Reviews and RepoLister for
// what a store without one does).
type Store interface {
	TeamStore
	RepoLister
	MemoryStores
	Reviews
}

// TeamStore keeps team memory: the store interface of the team repo
// protocol, its history and log. Put must be atomic: the IfMatch check,
// the limit checks and the write (with its history) happen together or
// not at all, even across processes sharing the store. Every read sees
// one consistent snapshot: a version, checksum and entries that belong
// together. Implementations must be safe for concurrent use; the
// storetest suite (Run) checks all of this.
type TeamStore interface {
	// Get returns a repo's state, with Entries only when withContent.
	Get(ctx context.Context, repo Repo, withContent bool) (Snapshot, error)
	// Head returns a repo's version, checksum and time only (cheap).
	Head(ctx context.Context, repo Repo) (Snapshot, error)
	// Stream reads a repo in one snapshot: head gets the version,
	// checksum and time first, then entry is called for every entry in
	// key order, without the store holding all contents at once; the
	// returned Snapshot has Checksums and Tombstones (no Entries). An
	// error from head or entry stops the stream and is returned. Once
	// head is called, a store never reads again from the start: a caller
	// sees each entry once.
	Stream(ctx context.Context, repo Repo, head func(Snapshot) error, entry func(key, content string) error) (Snapshot, error)
	// Put applies a conditional upsert and returns the new state (without
	// Entries).
	Put(ctx context.Context, repo Repo, req PutRequest) (Snapshot, error)
	// History lists a key's revisions, newest first, at most limit.
	History(ctx context.Context, repo Repo, key string, limit int) ([]Revision, error)
	// Revision returns one revision of a key with its content.
	Revision(ctx context.Context, repo Repo, key string, version int64) (Revision, error)
	// Log lists the repo's accepted writes after version since, newest
	// first, at most limit.
	Log(ctx context.Context, repo Repo, since int64, limit int) ([]Change, error)
	// Authors returns, for each live key of repo, its newest recorded
	// revision without content (none for a key past the history's
	// retention): who wrote each entry, for the full view
	// (teamwire.Content.EntryAuthors).
	Authors(ctx context.Context, repo Repo) (map[string]Revision, error)
	// Counts reports the store's size over every tenant: repos, live
	// entries and tombstones (for metrics).
	Counts(ctx context.Context) (repos, entries, tombstones int64, err error)
	// ID returns the store's identity: a random name made once, when the
	// store itself was created, and never changed. Every server on one
	// database reports the same ID; a new, emptied or replaced store has
	// another, so a client can tell that the server it syncs with is no
	// longer the store it agreed with (and must not delete on its word).
	ID() string
	// Ping reports whether the store can serve requests.
	Ping(ctx context.Context) error
	Close() error
}

// newStoreID returns a fresh store identity ("ams_" and 26 random
// base32 characters).
func newStoreID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "ams_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// apply computes the state after req on top of cur (which may be empty),
// or the error that refuses it. Shared by every store so they agree.
func apply(cur Snapshot, exists bool, req PutRequest) (Snapshot, error) {
	if req.IfMatch != "" && (!exists || req.IfMatch != cur.Checksum) {
		return Snapshot{}, ErrPreconditionFailed
	}
	if !changes(cur, req) {
		return cur, errNothingToWrite
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
		next.Checksums[k] = teamwire.EntryChecksum(v)
		delete(next.Tombstones, k)
	}
	pruneTombstones(next.Tombstones, req.Retention, req.Now)
	if keys := keyConflicts(next.Checksums, req.Entries); keys != nil {
		return Snapshot{}, &KeyConflictError{Keys: keys}
	}
	if req.MaxEntries > 0 && len(next.Checksums) > req.MaxEntries {
		return Snapshot{}, &TooManyEntriesError{Max: req.MaxEntries, Received: len(next.Checksums)}
	}
	next.Checksum = teamwire.RepoChecksum(next.Checksums)
	next.LastModified = req.Now.UTC().Truncate(time.Millisecond)
	return next, nil
}

// errNothingToWrite: the request changes nothing; the store returns the
// current state without writing (an empty PUT creates no repo).
var errNothingToWrite = errors.New("server: nothing to write")

// changes reports whether req changes cur: an entry that is new or
// different, or a deletion of a live key.
func changes(cur Snapshot, req PutRequest) bool {
	for k, v := range req.Entries {
		if sum, ok := cur.Checksums[k]; !ok || sum != teamwire.EntryChecksum(v) {
			return true
		}
	}
	for _, k := range req.Deletes {
		if _, ok := cur.Checksums[k]; ok {
			return true
		}
	}
	return false
}

// revisions lists what a write records in the history: every key whose
// content changed or that was deleted, in key order.
func revisions(cur, next Snapshot, req PutRequest) []Revision {
	var out []Revision
	for _, k := range slices.Sorted(maps.Keys(req.Entries)) {
		if cur.Checksums[k] == next.Checksums[k] {
			continue
		}
		out = append(out, Revision{Key: k, Version: next.Version, Checksum: next.Checksums[k], Author: req.Author, Time: req.Now, Content: req.Entries[k], Provenance: req.Provenance})
	}
	for _, k := range req.Deletes {
		if _, was := cur.Checksums[k]; was {
			out = append(out, Revision{Key: k, Version: next.Version, Author: req.Author, Time: req.Now, Deleted: true, Provenance: req.Provenance})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// pruneTombstones drops tombstones past the retention age, then the
// oldest beyond the count.
func pruneTombstones(t map[string]int64, r Retention, now time.Time) {
	if r.TombstoneAge > 0 {
		cutoff := now.Add(-r.TombstoneAge).UnixMilli()
		for k, ms := range t {
			if ms < cutoff {
				delete(t, k)
			}
		}
	}
	if r.MaxTombstones > 0 && len(t) > r.MaxTombstones {
		keys := slices.Sorted(maps.Keys(t))
		sort.SliceStable(keys, func(i, j int) bool { return t[keys[i]] < t[keys[j]] })
		for _, k := range keys[:len(keys)-r.MaxTombstones] {
			delete(t, k)
		}
	}
}

// keepRevisions applies the history retention to one key's revisions,
// newest first; the newest always stays.
func keepRevisions(revs []Revision, r Retention, now time.Time) []Revision {
	out := revs[:0:0]
	for i, rev := range revs {
		if i > 0 && r.HistoryKeep > 0 && i >= r.HistoryKeep {
			break
		}
		if i > 0 && r.HistoryAge > 0 && rev.Time.Before(now.Add(-r.HistoryAge)) {
			break
		}
		out = append(out, rev)
	}
	return out
}

// memoryStore keeps everything in memory: for tests and throwaway servers.
type memoryStore struct {
	id      string
	mu      sync.Mutex
	repos   map[Repo]Snapshot
	history map[Repo]map[string][]Revision // newest first
	log     map[Repo][]Change              // oldest first
	reviews memReviews
	stores  memStores // memorystores_mem.go
	// idempotency keeps the Memory Stores API's idempotency keys
	// (idempotency.go), under its own lock.
	idempotency memIdempotency
}

// NewMemoryStore returns an empty store that keeps everything in memory,
// for tests and throwaway servers; it has every protocol.
func NewMemoryStore() Store {
	return &memoryStore{id: newStoreID(), repos: map[Repo]Snapshot{}, history: map[Repo]map[string][]Revision{}, log: map[Repo][]Change{}}
}

// ID implements Store: each memoryStore has its own.
func (s *memoryStore) ID() string { return s.id }

// Get implements Store.
func (s *memoryStore) Get(_ context.Context, repo Repo, withContent bool) (Snapshot, error) {
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

// Head implements Store.
func (s *memoryStore) Head(_ context.Context, repo Repo) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.repos[repo]
	if !ok {
		return Snapshot{}, ErrNotFound
	}
	return Snapshot{Version: cur.Version, Checksum: cur.Checksum, LastModified: cur.LastModified}, nil
}

// Stream implements Store (from a copy taken under the lock).
func (s *memoryStore) Stream(ctx context.Context, repo Repo, head func(Snapshot) error, entry func(key, content string) error) (Snapshot, error) {
	snap, err := s.Get(ctx, repo, true)
	if err != nil {
		return Snapshot{}, err
	}
	if err := head(Snapshot{Version: snap.Version, Checksum: snap.Checksum, LastModified: snap.LastModified}); err != nil {
		return Snapshot{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(snap.Entries)) {
		if err := entry(k, snap.Entries[k]); err != nil {
			return Snapshot{}, err
		}
	}
	snap.Entries = nil
	return snap, nil
}

// Put implements Store.
func (s *memoryStore) Put(_ context.Context, repo Repo, req PutRequest) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.repos[repo]
	if !ok && req.MaxRepos > 0 {
		n := 0
		for r := range s.repos {
			if r.Tenant == repo.Tenant {
				n++
			}
		}
		if n >= req.MaxRepos && changes(cur, req) {
			return Snapshot{}, ErrTooManyRepos
		}
	}
	next, err := apply(cur, ok, req)
	if errors.Is(err, errNothingToWrite) {
		return headOnly(next), nil
	}
	if err != nil {
		return Snapshot{}, err
	}
	s.repos[repo] = next
	revs := revisions(cur, next, req)
	if s.history[repo] == nil {
		s.history[repo] = map[string][]Revision{}
	}
	change := Change{Version: next.Version, Time: req.Now, Author: req.Author, Provenance: req.Provenance}
	for _, rev := range revs {
		s.history[repo][rev.Key] = keepRevisions(append([]Revision{rev}, s.history[repo][rev.Key]...), req.Retention, req.Now)
		change.Keys, change.Ops = append(change.Keys, rev.Key), append(change.Ops, keyOp(cur, rev))
	}
	s.log[repo] = append(s.log[repo], change)
	out := next
	out.Entries = nil
	out.Checksums = maps.Clone(next.Checksums)
	out.Tombstones = maps.Clone(next.Tombstones)
	return out, nil
}

// headOnly is the answer to a write that changed nothing.
func headOnly(cur Snapshot) Snapshot {
	out := Snapshot{Version: cur.Version, Checksum: cur.Checksum, LastModified: cur.LastModified,
		Checksums: maps.Clone(cur.Checksums), Tombstones: maps.Clone(cur.Tombstones)}
	if out.Checksum == "" {
		out.Checksum = teamwire.RepoChecksum(nil)
	}
	return out
}

// History implements Store.
func (s *memoryStore) History(_ context.Context, repo Repo, key string, limit int) ([]Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	revs := s.history[repo][key]
	if limit > 0 && len(revs) > limit {
		revs = revs[:limit]
	}
	out := make([]Revision, len(revs))
	for i, r := range revs {
		r.Content = ""
		out[i] = r
	}
	return out, nil
}

// Revision implements Store.
func (s *memoryStore) Revision(_ context.Context, repo Repo, key string, version int64) (Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.history[repo][key] {
		if r.Version == version {
			return r, nil
		}
	}
	return Revision{}, ErrNoRevision
}

// Log implements Store.
func (s *memoryStore) Log(_ context.Context, repo Repo, since int64, limit int) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Change
	for i := len(s.log[repo]) - 1; i >= 0; i-- {
		c := s.log[repo][i]
		if c.Version <= since || (limit > 0 && len(out) == limit) {
			break
		}
		c.Keys = slices.Clone(c.Keys)
		out = append(out, c)
	}
	return out, nil
}

// Ping implements Store.
func (s *memoryStore) Ping(context.Context) error { return nil }

// Close implements Store.
func (s *memoryStore) Close() error { return nil }

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
	return slices.Sorted(maps.Keys(found))
}

// next returns the index of the next '/' in k after i, or -1.
func next(k string, i int) int {
	j := strings.IndexByte(k[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// Counts implements TeamStore.
func (s *memoryStore) Counts(context.Context) (repos, entries, tombstones int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, snap := range s.repos {
		repos++
		entries += int64(len(snap.Checksums))
		tombstones += int64(len(snap.Tombstones))
	}
	return repos, entries, tombstones, nil
}

// Authors implements TeamStore.
func (s *memoryStore) Authors(_ context.Context, repo Repo) (map[string]Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Revision{}
	for k := range s.repos[repo].Checksums {
		if revs := s.history[repo][k]; len(revs) > 0 && !revs[0].Deleted {
			r := revs[0]
			r.Content = ""
			out[k] = r
		}
	}
	return out, nil
}

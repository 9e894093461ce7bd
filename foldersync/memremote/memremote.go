// Package memremote is an in-memory foldersync.Remote: the reference
// driver the conformance kit (foldersync/remotetest) is checked against,
// and a remote for tests of code built on the engine.
//
// It names its store and moves a generation forward on every change, keeps
// a record of every deletion, answers Unchanged to a listing whose Tag is
// its generation, and refuses what both real protocols refuse: content
// that is not valid UTF-8 or holds a NUL, and names that are not NFC or
// hold a control character.
package memremote

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// Remote is an in-memory remote. The zero value is not usable: call New.
type Remote struct {
	mu      sync.Mutex
	store   string
	gen     int64
	next    int
	entries map[string]entry
	deleted map[string]time.Time
	now     func() time.Time
	// calls counts the calls by method, for tests that a round did not
	// list or fetch more than it needed.
	calls map[string]int
	bytes int64
}

type entry struct {
	content []byte
	ref     string
	author  foldersync.Author
}

// New returns an empty remote named store.
func New(store string) *Remote {
	return &Remote{store: store, gen: 1, entries: map[string]entry{}, deleted: map[string]time.Time{}, now: time.Now, calls: map[string]int{}}
}

// SetClock sets the clock deletions are stamped with (default time.Now).
func (m *Remote) SetClock(now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = now
}

// Calls reports how often each method (List, Get, Deleted, Apply) was
// called, and SentBytes how many content bytes Apply received.
func (m *Remote) Calls(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

// SentBytes is the total of the content bytes Apply received.
func (m *Remote) SentBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// List implements foldersync.Remote.
func (m *Remote) List(ctx context.Context, prev foldersync.Listing) (foldersync.Listing, error) {
	if err := ctx.Err(); err != nil {
		return foldersync.Listing{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["List"]++
	tag := strconv.FormatInt(m.gen, 10)
	out := foldersync.Listing{Store: m.store, Generation: m.gen, Tag: tag}
	if prev.Tag == tag && prev.Store == m.store {
		out.Unchanged = true
		out.Entries = prev.Entries
		return out, nil
	}
	out.Entries = make(map[string]foldersync.Entry, len(m.entries))
	for p, e := range m.entries {
		out.Entries[p] = foldersync.Entry{Sum: foldersync.Sum(e.content), Ref: e.ref, Author: e.author}
	}
	return out, nil
}

// Get implements foldersync.Remote.
func (m *Remote) Get(ctx context.Context, paths []string) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["Get"]++
	out := map[string][]byte{}
	for _, p := range paths {
		if e, ok := m.entries[p]; ok {
			out[p] = append([]byte(nil), e.content...)
		}
	}
	return out, nil
}

// Deleted implements foldersync.Remote: every deletion is recorded.
func (m *Remote) Deleted(ctx context.Context, paths []string) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["Deleted"]++
	out := map[string]time.Time{}
	for _, p := range paths {
		if t, ok := m.deleted[p]; ok {
			if _, back := m.entries[p]; !back {
				out[p] = t
			}
		}
	}
	return out, nil
}

// Apply implements foldersync.Remote.
func (m *Remote) Apply(ctx context.Context, changes []foldersync.Change) ([]foldersync.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["Apply"]++
	out := make([]foldersync.Outcome, 0, len(changes))
	for _, c := range changes {
		m.bytes += int64(len(c.Content))
		cur, has := m.entries[c.Path]
		matches := (!has && c.Expect.Sum == "") || (has && c.Expect.Sum == foldersync.Sum(cur.content) && (c.Expect.Ref == "" || c.Expect.Ref == cur.ref))
		switch {
		case !matches:
			out = append(out, foldersync.Outcome{Path: c.Path, Status: foldersync.Mismatch})
		case c.Delete:
			if has {
				m.deleteLocked(c.Path)
			}
			out = append(out, foldersync.Outcome{Path: c.Path, Status: foldersync.Applied, Generation: m.gen})
		default:
			if reason := m.refusal(c.Path, c.Content); reason != "" {
				out = append(out, foldersync.Outcome{Path: c.Path, Status: foldersync.Refused, Reason: reason})
				continue
			}
			e := m.putLocked(c.Path, c.Content, has, cur)
			out = append(out, foldersync.Outcome{Path: c.Path, Status: foldersync.Applied, Entry: foldersync.Entry{Sum: foldersync.Sum(e.content), Ref: e.ref}, Generation: m.gen})
		}
	}
	return out, nil
}

// refusal is what the remote itself refuses: Check's reasons, and a path
// that is a folder of another one or lies below one.
func (m *Remote) refusal(p string, content []byte) string {
	if r := m.Check(p, content); r != "" {
		return r
	}
	for q := range m.entries {
		if len(q) > len(p) && q[:len(p)] == p && q[len(p)] == '/' || len(p) > len(q) && p[:len(q)] == q && p[len(q)] == '/' {
			return fmt.Sprintf("path-clash: %s is in the way", q)
		}
	}
	return ""
}

func (m *Remote) putLocked(p string, content []byte, has bool, cur entry) entry {
	m.gen++
	e := entry{content: append([]byte(nil), content...), ref: cur.ref}
	if !has {
		m.next++
		e.ref = "mem_" + strconv.Itoa(m.next)
	}
	m.entries[p] = e
	delete(m.deleted, p)
	return e
}

func (m *Remote) deleteLocked(p string) {
	m.gen++
	delete(m.entries, p)
	m.deleted[p] = m.now()
}

// Check implements foldersync.Remote: valid UTF-8 without NUL, and an NFC
// name without control characters.
func (m *Remote) Check(p string, content []byte) string {
	return foldersync.SkipText(p, content)
}

// Write puts content at p as another client would: a new version (a new
// memory when p was absent).
func (m *Remote) Write(p string, content []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, has := m.entries[p]
	m.putLocked(p, content, has, cur)
}

// Remove deletes p as another client would, with a record of it.
func (m *Remote) Remove(p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[p]; ok {
		m.deleteLocked(p)
	}
}

// Lose drops p without a record of its deletion (a remote that lost it).
func (m *Remote) Lose(p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	delete(m.entries, p)
}

// Read returns p's content as the remote holds it.
func (m *Remote) Read(p string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[p]
	return append([]byte(nil), e.content...), ok
}

// Files returns every path's content.
func (m *Remote) Files() map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for p, e := range m.entries {
		out[p] = append([]byte(nil), e.content...)
	}
	return out
}

// Snapshot is a copy of the remote's state, for Restore.
type Snapshot struct {
	gen     int64
	next    int
	entries map[string]entry
	deleted map[string]time.Time
}

// Snapshot copies the remote's state (a backup).
func (m *Remote) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Snapshot{gen: m.gen, next: m.next, entries: maps.Clone(m.entries), deleted: maps.Clone(m.deleted)}
}

// Restore puts the remote back to s (restored from a backup): its
// generation goes back with it.
func (m *Remote) Restore(s Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen, m.entries, m.deleted = s.gen, maps.Clone(s.entries), maps.Clone(s.deleted)
}

// Replace makes the remote another store named store holding files.
func (m *Remote) Replace(store string, files map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store, m.gen = store, 1
	m.entries, m.deleted = map[string]entry{}, map[string]time.Time{}
	for p, c := range files {
		m.putLocked(p, c, false, entry{})
	}
}

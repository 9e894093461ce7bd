package teammem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// reconcile runs one round of the client's engine through its team
// driver, with st as its basis, changing the sides mode allows.
func (c *Client) reconcile(ctx context.Context, st *SyncState, mode foldersync.Mode) (foldersync.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadState(st)
	// A store's folder is its store sync's alone.
	maps.DeleteFunc(st.Base, func(k, _ string) bool { return underDirs(k, c.leftOut) })
	if mode != foldersync.ModePush {
		// A pull leaves the team directory in place even when the server
		// has nothing yet, so a teammate can write the first memory.
		if err := c.fs.MkdirAll(c.teamDir, 0o755); err != nil {
			return foldersync.Result{}, fmt.Errorf("teammem: create the team directory: %w", err)
		}
	}
	rem := c.remote
	rem.mu.Lock()
	rem.maxEntries = st.MaxEntries
	rem.limitErrors = true
	rem.hashesOnly = mode == foldersync.ModePush
	switch {
	case rem.cur != nil && rem.cur.exact && st.ETag != "" && rem.cur.tag == st.ETag:
		// What the state saw is what this driver holds (with the content
		// of its last full read).
	case st.ETag != "" && st.ServerChecksums != nil && teamwire.RepoChecksum(st.ServerChecksums) == st.ETag:
		// What the state saw: a read conditional on it may be answered 304.
		rem.cur = &repoView{store: st.StoreID, version: st.Version, tag: st.ETag, exact: true,
			sums: maps.Clone(st.ServerChecksums), tombs: tombTimes(st.Tombstones), authors: maps.Clone(st.Authors)}
	default:
		rem.cur = nil
	}
	rem.mu.Unlock()
	before := *st
	c.st = st
	res, err := c.engine.RoundMode(ctx, mode)
	c.st = nil
	var se *SyncError
	if errors.As(err, &se) && se.Class == ClassTooManyEntries && se.MaxEntries > 0 {
		st.MaxEntries = se.MaxEntries // the next round sends only what fits
	}
	rem.mu.Lock()
	v := rem.cur
	for _, k := range slices.Sorted(maps.Keys(rem.hostile)) {
		res.Skipped = append(res.Skipped, foldersync.Skip{Path: k, Reason: "invalid_key: the server holds a key no team directory may hold; left out"})
	}
	st.Reset = ""
	if res.BasisReset {
		listed := rem.listed
		st.Reset = resetReason(before, &listed)
		c.log.Warn("teammem: "+st.Reset+"; syncing without a base, deleting nothing", "event", "teammem_store_reset", "repo", c.cfg.Repo)
	}
	rem.mu.Unlock()
	if v != nil && (v != c.stated || st.ETag != v.tag || len(st.ServerChecksums) != len(v.sums)) {
		// What the server holds now (unless st holds it already: an
		// unchanged round copies nothing).
		c.stated = v
		st.ETag, st.ServerChecksums = v.tag, maps.Clone(v.sums)
		st.Tombstones = map[string]int64{}
		for k, at := range v.tombs {
			st.Tombstones[k] = at.UnixMilli()
		}
		st.ServerHasContent = len(v.sums) > 0
		if v.entries != nil {
			st.Authors = maps.Clone(v.authors) // a full read: what the server says now
		}
	}
	if err == nil && mode != foldersync.ModePull {
		st.InReview = nil
		for _, k := range res.InReview {
			if st.InReview == nil {
				st.InReview = map[string]string{}
			}
			st.InReview[k] = ""
		}
	}
	if serr := c.saveState(st); serr != nil && err == nil {
		err = serr
	}
	return res, err
}

// includes reports whether the engine syncs rel: a team memory outside
// the folders the client never carries (SkipDirs; a folder holding a
// store's manifest the engine leaves alone itself).
func (c *Client) includes(rel string) bool {
	if !syncable(rel) {
		return false
	}
	return !underDirs(rel, c.leftOut)
}

// syncable reports whether a file of the team directory is a team
// memory: a .md or .txt file none of whose path segments is hidden.
func syncable(rel string) bool {
	ext := path.Ext(rel)
	return (ext == ".md" || ext == ".txt") && !fswalk.Hidden(rel) // Hidden: any segment starting with "."
}

// stateBasis is the engine's basis kept in the SyncState of the round
// that runs (Client.st).
type stateBasis struct{ c *Client }

func (m stateBasis) Seed() (foldersync.Agreed, bool) {
	st := m.c.st
	if st == nil {
		return foldersync.Agreed{}, false
	}
	a := foldersync.Agreed{Store: st.StoreID, Generation: st.Version, Resetting: st.Resetting, Entries: make(map[string]foldersync.Entry, len(st.Base)),
		InFlight: st.InFlight, Diverged: st.Diverged}
	for k, sum := range st.Base {
		a.Entries[k] = foldersync.Entry{Sum: sumHex(sum)}
	}
	m.c.mirrored = stampOf(st)
	return a, true
}

func (m stateBasis) Save(_ context.Context, a foldersync.Agreed) error {
	st := m.c.st
	if st == nil {
		return nil
	}
	st.Base = make(map[string]string, len(a.Entries))
	for k, e := range a.Entries {
		st.Base[k] = sumWire(e.Sum)
	}
	st.StoreID, st.Version, st.Resetting = a.Store, a.Generation, a.Resetting
	st.InFlight, st.Diverged = a.InFlight, a.Diverged
	m.c.mirrored = stampOf(st)
	// On disk at once: a run killed in the middle of a round leaves the
	// batches it saw through, and the changes it began, on record. What
	// the server held is not: it moved with this round, and a tag beside
	// a newer version would read as a restored server. The end of the
	// round records it.
	onDisk := *st
	onDisk.ETag, onDisk.ServerChecksums, onDisk.Tombstones = "", nil, nil
	return m.c.saveState(&onDisk)
}

// Unchanged reports whether the round's state is the one this client
// last seeded the engine from or saved to, untouched: the same state,
// the same Base map (SyncState: a Base changed in place is not seen).
func (m stateBasis) Unchanged() bool {
	st := m.c.st
	return st != nil && m.c.mirrored == stampOf(st)
}

// stateStamp tells a SyncState's basis apart from another's at no cost.
type stateStamp struct {
	st        *SyncState
	base      uintptr
	n         int
	store     string
	version   int64
	resetting bool
	inFlight  uintptr
	diverged  uintptr
}

func stampOf(st *SyncState) stateStamp {
	return stateStamp{st: st, base: reflect.ValueOf(st.Base).Pointer(), n: len(st.Base), store: st.StoreID, version: st.Version, resetting: st.Resetting,
		inFlight: reflect.ValueOf(st.InFlight).Pointer(), diverged: reflect.ValueOf(st.Diverged).Pointer()}
}

// resetReason says why the server v is not the store the state before
// last agreed with.
func resetReason(before SyncState, v *repoView) string {
	switch {
	case v == nil:
	case before.StoreID != "" && v.store != "" && v.store != before.StoreID:
		return "the server's store is not the one this directory last synced with (another identity: replaced or new)"
	case v.empty:
		return "the server has no team memory for this repo although this directory synced with it (a new or emptied store)"
	case v.version > 0 && v.version < before.Version:
		return fmt.Sprintf("the server's repo is at version %d, older than version %d seen here (restored from a backup)", v.version, before.Version)
	case v.version > 0 && v.version == before.Version:
		return fmt.Sprintf("the server's repo holds other content at version %d than this directory saw there (restored from a backup, then written)", v.version)
	}
	return "the server's store is not the one this directory last synced with (replaced or restored from a backup)"
}

package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// Conflict reports a key both sides changed differently since they last
// agreed: the server's version took the file, and the local version was
// kept at SavedAs (outside the synced directory).
type Conflict struct {
	Key     string
	SavedAs string
	// LocalKept reports that the file kept the local version and SavedAs
	// holds the server's: the round found the store replaced or restored
	// (Result.StoreReset), so the server's copy is the older one.
	LocalKept bool
}

// MassDeleteHold reports deletions a round held back: more than
// foldersync.MassDeleteThreshold of the tracked memories would have gone on one
// side at once (a wiped directory, a server emptied by mistake). Nothing
// on that side was deleted; the keys stay tracked, so the next round
// holds them again until the deletions are confirmed
// (ClientOptions.AllowMassDelete) or the files come back.
type MassDeleteHold struct {
	// Side is "local" (files here would have been removed) or "server"
	// (keys on the server would have been deleted).
	Side string
	Keys []string
	// Tracked is how many memories the sync base tracked, Threshold the
	// most one round may delete on a side.
	Tracked, Threshold int
}

// ConflictsDirName is the folder, beside the team directory, where the
// local side of a conflict is kept.
const ConflictsDirName = ".team-conflicts"

// syncMode says which sides a reconcile may change.
type syncMode int

const (
	modePull syncMode = 1 << iota
	modePush
	modeSync = modePull | modePush
)

// Sync reconciles the team directory with the server by the three-way
// rules of SyncState (see its documentation): local-only changes are
// pushed, server-only changes pulled, deletions propagate (unless
// KeepDeleted), an edit beats a deletion, and when both sides edited a
// key differently the server's version takes the file and the local one
// is kept under ConflictsDirName and reported. A 412 (someone wrote in
// between) starts the round again, at most ConflictRetries times.
func (c *Client) Sync(ctx context.Context, st *SyncState) (Result, error) {
	return c.reconcile(ctx, st, modeSync)
}

// Pull applies the server's changes by the same rules as Sync and sends
// nothing: it never overwrites a local edit. A local deletion is not
// undone, and a key both sides changed is left as it is here and
// reported as skipped ("conflict") for a Sync to resolve.
func (c *Client) Pull(ctx context.Context, st *SyncState) (Result, error) {
	return c.reconcile(ctx, st, modePull)
}

// Push sends the local changes by the same rules as Sync and writes
// nothing locally. A key the server changed too is not overwritten: it is
// reported as skipped ("conflict") for a Sync or Pull to resolve.
func (c *Client) Push(ctx context.Context, st *SyncState) (Result, error) {
	return c.reconcile(ctx, st, modePush)
}

// action is what one key needs.
type action int

const (
	actNone       action = iota
	actPullWrite         // write the server's content here
	actPullDelete        // remove the local file (deleted on the server)
	actPush              // upload the local content
	actPushDelete        // tombstone the key on the server
	actConflict          // keep the local copy aside, take the server's
	actStale             // a local copy of a key deleted on the server after it was last written here
	actKeepLocal         // the server went back: keep the server's copy aside, push the local one
)

// keyState is what a round knows of one key: l, s and b are the local,
// server and base checksums ("" for absent); tomb is the server's
// deletion time of the key (zero when it has no tombstone) and mtime the
// local file's modification time.
type keyState struct {
	l, s, b     string
	tomb, mtime time.Time
}

// decide applies the three-way rules to one key. keepDeleted stops
// deletions from propagating; resetting says the server is not the store
// this client last agreed with (replaced, or restored from a backup), so
// nothing is deleted or moved aside on its word and a key that differs
// keeps the local side.
func decide(k keyState, keepDeleted, resetting bool) action {
	l, s, b := k.l, k.s, k.b
	// stale: a copy older than the key's deletion on the server is not an
	// edit (but a store that went back has no say on what is stale).
	stale := b == "" && !resetting && !k.tomb.IsZero() && !k.mtime.After(k.tomb)
	switch {
	case l == s:
		return actNone
	case l == b: // only the server changed
		if s != "" {
			return actPullWrite
		}
		// Deletion only on evidence: the server must say the key was
		// deleted (a tombstone), not merely lack it; a key it lost
		// without a record goes back to it.
		switch {
		case k.tomb.IsZero():
			return actPush
		case keepDeleted:
			return actNone
		}
		return actPullDelete
	case s == b: // only the local side changed
		if l == "" {
			if keepDeleted {
				return actPullWrite // deletions do not propagate: restore it
			}
			return actPushDelete
		}
		if stale {
			return actStale
		}
		return actPush
	case l == "": // deleted here, edited there: the edit wins
		return actPullWrite
	case s == "": // deleted there, edited here: the edit wins
		if stale {
			return actStale
		}
		return actPush
	case resetting:
		return actKeepLocal
	}
	return actConflict
}

// serverView is what a round knows of the server.
type serverView struct {
	storeID   string // "" when the server does not name its store
	version   int64
	etag      string
	sums      map[string]string
	entries   map[string]string // nil when not fetched
	tombs     map[string]int64
	empty     bool                        // 404: no data yet
	unchanged bool                        // 304: sums are the state's
	authors   map[string]wire.Attribution // nil when the reply named none
}

func (c *Client) reconcile(ctx context.Context, st *SyncState, mode syncMode) (Result, error) {
	var res Result
	c.loadState(st, &res)
	for attempt := 0; ; attempt++ {
		err := c.round(ctx, st, mode, &res)
		var se *SyncError
		if errors.As(err, &se) && se.Class == ClassTooManyEntries && se.MaxEntries > 0 {
			st.MaxEntries = se.MaxEntries // the next round sends only what fits
		}
		if errors.As(err, &se) && se.Class == ClassConflict && attempt < c.cfg.ConflictRetries {
			continue // someone wrote in between: look again
		}
		if serr := c.saveState(st); serr != nil && err == nil {
			err = serr
		}
		return res, err
	}
}

// round reads both sides, decides every key and carries out what mode
// allows.
func (c *Client) round(ctx context.Context, st *SyncState, mode syncMode, res *Result) error {
	files, permIssues, skipped, skipDirs, err := c.readLocal(ctx)
	if err != nil {
		return err
	}
	// A store's folder is its store sync's alone: never pushed, pulled,
	// deleted or tracked here.
	for k := range st.Base {
		if underDirs(k, skipDirs) {
			delete(st.Base, k)
		}
	}
	res.Skipped = appendSkips(res.Skipped, skipped...)
	local := make(map[string]localFile, len(files))
	for _, f := range files {
		local[f.key] = f
	}
	unplanned := map[string]bool{} // on disk but not syncable (secret, size, key, bytes)
	for _, sk := range skipped {
		unplanned[sk.Key] = true
	}

	var view serverView
	if mode&modePull != 0 {
		view, err = c.fetch(ctx, st, res, true)
	} else {
		view, err = c.fetchHashes(ctx, res)
	}
	if err != nil {
		return err
	}

	for k := range view.sums {
		if underDirs(k, skipDirs) {
			unplanned[k] = true
		}
	}
	for k := range view.tombs {
		if underDirs(k, skipDirs) {
			unplanned[k] = true
		}
	}

	if mode&modePull != 0 {
		// A pull leaves the team directory in place even when the server
		// has nothing yet, so a teammate can write the first memory.
		if err := c.fs.MkdirAll(c.teamDir, 0o755); err != nil {
			return fmt.Errorf("teammem: create the team directory: %w", err)
		}
	}
	if reason := storeMoved(st, view); reason != "" {
		// Not the store this client agreed with: forget the base, so that
		// nothing is deleted on its word, and keep the local side.
		c.log.Warn("teammem: "+reason+"; syncing without a base, deleting nothing", "event", "teammem_store_reset", "repo", c.cfg.Repo)
		res.StoreReset = reason
		st.Base, st.Resetting = nil, true
	}

	keys, plan, needContent := c.plan(st, local, unplanned, view, permIssues)
	if mode&modePull != 0 && needContent && view.entries == nil && !view.empty {
		// A 304 told us the sums, but a key needs its content.
		if view, err = c.fetch(ctx, st, res, false); err != nil {
			return err
		}
		keys, plan, _ = c.plan(st, local, unplanned, view, permIssues)
	}
	c.holdMassDeletes(st, plan, mode, res)

	base := cloneMap(st.Base)
	if base == nil {
		base = map[string]string{}
	}
	// Keys both sides already agree on are the new base.
	for k := range keys {
		f, ok := local[k]
		if unplanned[k] {
			continue
		}
		s, onServer := view.sums[k]
		switch {
		case ok && onServer && f.sum == s:
			base[k] = s
		case !ok && !onServer:
			delete(base, k)
		}
	}

	// The local side.
	if mode&modePull != 0 {
		c.applyLocal(ctx, plan, mode, view, local, base, res)
	}

	// The server side.
	var uploads []localFile
	var deletes []string
	for _, k := range sortedKeys(plan) {
		switch plan[k] {
		case actPush:
			uploads = append(uploads, local[k])
		case actKeepLocal:
			if mode&modePull == 0 {
				// A push alone has not kept the server's copy aside.
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "conflict"})
				continue
			}
			uploads = append(uploads, local[k])
		case actPushDelete:
			deletes = append(deletes, k)
		case actConflict:
			if mode&modePull == 0 {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "conflict"})
			}
		}
	}
	inReviewFrom := len(res.InReview)
	if mode&modePush != 0 && (len(uploads) > 0 || len(deletes) > 0) {
		uploads = withinLimit(uploads, view.sums, deletes, st.MaxEntries, res)
		if len(uploads) > 0 || len(deletes) > 0 {
			if err := c.push(ctx, &view, res, uploads, deletes, base); err != nil {
				st.Base = base // what was applied locally and pushed so far stands
				return err
			}
		}
	}
	st.Base = base
	st.ETag = view.etag
	st.ServerChecksums = view.sums
	st.Tombstones = view.tombs
	st.ServerHasContent = len(view.sums) > 0
	if view.storeID != "" {
		st.StoreID = view.storeID
	}
	st.Version = view.version
	if view.entries != nil {
		st.Authors = view.authors // a full read: what the server says now
	}
	if mode&modePush != 0 {
		st.Resetting = false // the local side has reached the server
		st.InReview = nil
		for _, k := range res.InReview[inReviewFrom:] {
			if st.InReview == nil {
				st.InReview = map[string]string{}
			}
			st.InReview[k] = local[k].sum // "" for a deletion
		}
	}
	return nil
}

// storeMoved says why the server is not the store st last agreed with,
// or "" when it is (or when there is nothing to compare yet).
func storeMoved(st *SyncState, view serverView) string {
	switch {
	case st.StoreID != "" && view.storeID != "" && view.storeID != st.StoreID:
		return "the server's store is not the one this directory last synced with (another identity: replaced or new)"
	case view.empty && (len(st.Base) > 0 || st.Version > 0):
		return "the server has no team memory for this repo although this directory synced with it (a new or emptied store)"
	case !view.unchanged && view.version > 0 && view.version < st.Version:
		return fmt.Sprintf("the server's repo is at version %d, older than version %d seen here (restored from a backup)", view.version, st.Version)
	case !view.unchanged && view.version > 0 && view.version == st.Version && st.ETag != "" && view.etag != "" && view.etag != st.ETag:
		// One version cannot hold two contents: the repo went back and was
		// written again since (a backup restored, then a teammate's push).
		return fmt.Sprintf("the server's repo holds other content at version %d than this directory saw there (restored from a backup, then written)", view.version)
	}
	return ""
}

// holdMassDeletes turns a side's deletions into no action when they are
// more than foldersync.MassDeleteThreshold of the tracked memories, and reports them.
func (c *Client) holdMassDeletes(st *SyncState, plan map[string]action, mode syncMode, res *Result) {
	if c.cfg.AllowMassDelete {
		return
	}
	tracked := len(st.Base)
	limit := foldersync.MassDeleteThreshold(tracked)
	var local, remote []string
	for _, k := range sortedKeys(plan) {
		switch plan[k] {
		case actPullDelete, actStale:
			local = append(local, k)
		case actPushDelete:
			remote = append(remote, k)
		}
	}
	hold := func(side string, keys []string, allowed bool) {
		if !allowed || len(keys) <= limit {
			return
		}
		for _, k := range keys {
			delete(plan, k)
		}
		res.Held = append(res.Held, MassDeleteHold{Side: side, Keys: keys, Tracked: tracked, Threshold: limit})
		c.log.Warn("teammem: holding a mass delete", "event", "teammem_mass_delete_held", "side", side, "count", len(keys), "tracked", tracked, "threshold", limit)
	}
	hold("local", local, mode&modePull != 0)
	hold("server", remote, mode&modePush != 0)
}

// plan decides every key known to either side or the base.
func (c *Client) plan(st *SyncState, local map[string]localFile, unplanned map[string]bool, view serverView, permIssues bool) (map[string]bool, map[string]action, bool) {
	keys := map[string]bool{}
	for k := range local {
		keys[k] = true
	}
	for k := range view.sums {
		keys[k] = true
	}
	for k := range st.Base {
		keys[k] = true
	}
	plan := map[string]action{}
	needContent := false
	for k := range keys {
		if unplanned[k] {
			continue
		}
		var tomb, mtime time.Time
		if ms, ok := view.tombs[k]; ok {
			tomb = time.UnixMilli(ms)
		}
		f, ok := local[k]
		if ok {
			mtime = f.mtime
		}
		a := decide(keyState{l: f.sum, s: view.sums[k], b: st.Base[k], tomb: tomb, mtime: mtime}, c.cfg.KeepDeleted, st.Resetting)
		if a == actPushDelete && permIssues {
			a = actNone // a directory we could not read is not a deletion
		}
		if a != actNone {
			plan[k] = a
		}
		if a == actPullWrite || a == actConflict || a == actKeepLocal {
			needContent = true
		}
	}
	return keys, plan, needContent
}

// applyLocal carries out the pull side of a plan.
func (c *Client) applyLocal(ctx context.Context, plan map[string]action, mode syncMode, view serverView, local map[string]localFile, base map[string]string, res *Result) {
	// track takes the pull's checkpoint before its first change (the
	// writes record each file in it themselves, under their lock); a pull
	// whose checkpoint cannot be taken changes nothing.
	track := func(k, _ string) bool {
		h := c.cfg.History
		if h == nil || res.Checkpoint != "" {
			return true
		}
		id := filehistory.CheckpointID("team-pull", c.now())
		if err := h.MakeSnapshot(ctx, id); err != nil {
			res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "checkpoint_failed"})
			return false
		}
		res.Checkpoint = id
		return true
	}
	for _, k := range sortedKeys(plan) {
		if ctx.Err() != nil {
			return
		}
		switch plan[k] {
		case actConflict:
			if mode&modePush == 0 {
				// A pull never overwrites a local edit: the key waits,
				// untouched, for a sync to settle it.
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "conflict"})
				continue
			}
		case actKeepLocal:
			// The server went back: its copy is the older one. Keep it
			// aside and leave the local file (a push sends it).
			content, ok := view.entries[k]
			if !ok {
				continue
			}
			saved, err := c.keepAside(ctx, k, content)
			if err != nil {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "conflict"})
				delete(plan, k) // never push over a copy we could not keep
				continue
			}
			res.Conflicts = append(res.Conflicts, Conflict{Key: k, SavedAs: saved, LocalKept: true})
			continue
		}
		switch plan[k] {
		case actPullWrite, actConflict:
			content, ok := view.entries[k]
			if !ok {
				continue
			}
			abs, err := ValidateTeamMemKey(c.fs, c.teamDir, k)
			if err != nil {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "invalid_key"})
				continue
			}
			if len(content) > wire.MaxEntryBytes {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "too_large"})
				continue
			}
			if !track(k, abs) {
				continue
			}
			if plan[k] == actConflict {
				saved, err := c.keepAside(ctx, k, local[k].content)
				if err != nil {
					res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "conflict"})
					continue // never overwrite an edit we could not keep
				}
				res.Conflicts = append(res.Conflicts, Conflict{Key: k, SavedAs: saved})
			}
			if _, err := c.gate.WriteFile(ctx, abs, []byte(content), 0o644); err != nil {
				skip, _ := gateSkip(k, err)
				if skip.Reason == "write_failed" {
					if in := c.inTheWay(abs); in != "" {
						skip.RuleID, skip.Label = SkipPathClash, in+" is in the way"
					}
				}
				res.Skipped = appendSkips(res.Skipped, skip)
				continue
			}
			base[k] = view.sums[k]
			res.Written = append(res.Written, k)
		case actPullDelete:
			abs, err := ValidateTeamMemKey(c.fs, c.teamDir, k)
			if err != nil || !track(k, abs) {
				continue
			}
			if _, err := c.gate.Remove(ctx, abs); err == nil {
				delete(base, k)
				res.Deleted = append(res.Deleted, k)
			}
		case actStale:
			// A copy of a key deleted on the server after this copy was last
			// written: not an edit. It leaves the team directory and is kept
			// aside, so nothing comes back from the dead and nothing is lost.
			abs, err := ValidateTeamMemKey(c.fs, c.teamDir, k)
			if err != nil || !track(k, abs) {
				continue
			}
			saved, err := c.keepAside(ctx, k, local[k].content)
			if err != nil {
				continue
			}
			if _, err := c.gate.Remove(ctx, abs); err == nil {
				delete(base, k)
				res.Deleted = append(res.Deleted, k)
				res.Conflicts = append(res.Conflicts, Conflict{Key: k, SavedAs: saved})
			}
		}
	}
}

// keepAside saves the local side of a conflict under ConflictsDirName
// beside the team directory and returns its path.
func (c *Client) keepAside(ctx context.Context, key, content string) (string, error) {
	stamp := c.now().UTC().Format("20060102T150405.000Z")
	// The copy's name stays within what a filesystem holds, however long
	// the key's.
	p := filepath.Join(c.conflictsDir(), filepath.FromSlash(synctext.FitName(key, "."+stamp+".md")))
	if _, err := c.aside.WriteFile(ctx, p, []byte(content), 0o644); err != nil {
		return "", err
	}
	return p, nil
}

func (c *Client) conflictsDir() string {
	return filepath.Join(filepath.Dir(c.teamDir), ConflictsDirName)
}

// withinLimit drops uploads of new keys that would take the repo over its
// learned entry limit (sorted: the first keys go), reporting them.
func withinLimit(uploads []localFile, server map[string]string, deletes []string, maxEntries int, res *Result) []localFile {
	if maxEntries <= 0 {
		return uploads
	}
	count := len(server) - len(deletes)
	var out []localFile
	for _, f := range uploads {
		if _, exists := server[f.key]; exists {
			out = append(out, f)
			continue
		}
		if count >= maxEntries {
			res.Skipped = appendSkips(res.Skipped, Skip{Key: f.key, Reason: "over_limit"})
			continue
		}
		count++
		out = append(out, f)
	}
	return out
}

// fetch reads the whole repo (with If-None-Match when useETag and the
// state knows the server's sums).
func (c *Client) fetch(ctx context.Context, st *SyncState, res *Result, useETag bool) (serverView, error) {
	headers := map[string]string{}
	// A 304 means "the sums you have": ask only when they are the ones
	// the tag stands for.
	if useETag && st.ETag != "" && st.ServerChecksums != nil && wire.RepoChecksum(st.ServerChecksums) == st.ETag {
		headers["If-None-Match"] = `"` + st.ETag + `"`
	}
	resp, body, err := c.send(ctx, res, http.MethodGet, c.endpoint, nil, headers)
	if err != nil {
		return serverView{}, err
	}
	storeID := resp.Header.Get(wire.StoreIDHeader)
	switch resp.StatusCode {
	case http.StatusNotModified:
		res.NotModified = true
		return serverView{storeID: storeID, version: st.Version, etag: st.ETag, sums: cloneMap(st.ServerChecksums), tombs: st.Tombstones, unchanged: true}, nil
	case http.StatusNotFound:
		res.ServerEmpty = true
		return serverView{storeID: storeID, sums: map[string]string{}, empty: true}, nil
	}
	if int64(len(body)) >= c.replyCap.Load() && c.learnLimits(ctx, res) {
		return c.fetch(ctx, st, res, useETag) // the cap grew to what the server allows
	}
	var data wire.TeamMemoryData
	if err := json.Unmarshal(body, &data); err != nil {
		return serverView{}, &SyncError{Class: ClassParse, Status: resp.StatusCode, Err: errors.New("the server's reply is not team memory JSON")}
	}
	sums := data.Content.EntryChecksums
	if sums == nil {
		sums = map[string]string{}
	}
	entries := data.Content.Entries
	if entries == nil {
		entries = map[string]string{}
	}
	return serverView{storeID: storeID, version: data.Version, etag: data.Checksum, sums: sums, entries: entries, tombs: data.Content.DeletedEntries,
		authors: data.Content.EntryAuthors}, nil
}

// fetchHashes reads the repo's sums from the hashes view.
func (c *Client) fetchHashes(ctx context.Context, res *Result) (serverView, error) {
	resp, body, err := c.send(ctx, res, http.MethodGet, c.endpoint+"&view=hashes", nil, nil)
	if err != nil {
		return serverView{}, err
	}
	storeID := resp.Header.Get(wire.StoreIDHeader)
	if resp.StatusCode == http.StatusNotFound {
		res.ServerEmpty = true
		return serverView{storeID: storeID, sums: map[string]string{}, empty: true}, nil
	}
	var hv wire.HashesView
	if err := json.Unmarshal(body, &hv); err != nil || hv.EntryChecksums == nil {
		return serverView{}, &SyncError{Class: ClassParse, Status: resp.StatusCode, Err: errors.New("the hashes view has no entryChecksums")}
	}
	return serverView{storeID: storeID, version: hv.Version, etag: hv.Checksum, sums: hv.EntryChecksums, tombs: hv.DeletedEntries}, nil
}

// appendSkips adds skips, once per key and reason.
func appendSkips(list []Skip, more ...Skip) []Skip {
	for _, s := range more {
		dup := false
		for _, have := range list {
			if have.Key == s.Key && have.Reason == s.Reason {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, s)
		}
	}
	return list
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// push sends uploads and deletes through the team driver: a delta push
// in batches, each conditional on the server state the plan was made
// from. Every applied change moves view and base forward; a key the
// server refuses alone is skipped (SkipRefused) and the rest goes
// through; a write in between (412) is a ClassConflict error, after
// what was applied before it.
func (c *Client) push(ctx context.Context, view *serverView, res *Result, uploads []localFile, deletes []string, base map[string]string) error {
	drv := c.Remote()
	drv.cur, drv.limitErrors = view.repoView(), true
	changes := make([]foldersync.Change, 0, len(uploads)+len(deletes))
	for _, k := range deletes {
		changes = append(changes, foldersync.Change{Path: k, Delete: true, Expect: foldersync.Entry{Sum: sumHex(view.sums[k])}})
	}
	for _, f := range uploads {
		changes = append(changes, foldersync.Change{Path: f.key, Content: []byte(f.content), Wrote: c.wrote(f), Expect: foldersync.Entry{Sum: sumHex(view.sums[f.key])}})
	}
	outs, err := drv.Apply(ctx, changes)
	requests, sent := drv.Traffic()
	res.Requests += requests
	res.BytesSent += sent
	if view.sums == nil {
		view.sums = map[string]string{}
	}
	local := make(map[string]localFile, len(uploads))
	for _, f := range uploads {
		local[f.key] = f
	}
	mismatch := false
	for _, o := range outs {
		switch o.Status {
		case foldersync.Applied:
			if f, ok := local[o.Path]; ok {
				view.sums[o.Path], base[o.Path] = f.sum, f.sum
				res.Uploaded = append(res.Uploaded, o.Path)
				continue
			}
			delete(view.sums, o.Path)
			delete(base, o.Path)
			if view.tombs == nil {
				view.tombs = map[string]int64{}
			}
			view.tombs[o.Path] = c.now().UnixMilli()
			res.SoftDeleted = append(res.SoftDeleted, o.Path)
		case foldersync.InReview:
			res.InReview = append(res.InReview, o.Path)
		case foldersync.Rejected:
			res.Skipped = appendSkips(res.Skipped, Skip{Key: o.Path, Reason: SkipReviewRejected, Label: o.Reason})
		case foldersync.Refused:
			code, words, _ := strings.Cut(o.Reason, ": ")
			c.log.Warn("teammem: the server refused a key; the rest of the push went through", "event", "teammem_key_refused", "code", code)
			res.Skipped = appendSkips(res.Skipped, Skip{Key: o.Path, Reason: SkipRefused, RuleID: code, Label: printable(words, 300)})
		case foldersync.Mismatch:
			mismatch = true
		}
	}
	if v := drv.cur; v != nil {
		view.etag, view.version = v.tag, v.version
		if v.store != "" {
			view.storeID = v.store
		}
		if !v.exact {
			// The server holds more than we know: a PUT without If-Match
			// (the repo was empty when read) met a teammate's write. The
			// tag no longer describes our view, so the next read must be
			// a full one, not a conditional one answered 304.
			view.etag = ""
		}
	} else {
		view.etag = ""
	}
	if err != nil {
		return err
	}
	if mismatch {
		return &SyncError{Class: ClassConflict, Status: http.StatusPreconditionFailed, Code: wire.CodeConflict, Attempts: 1,
			Err: errors.New("the repo changed since it was read")}
	}
	return nil
}

// repoView is the driver's view of what the round read (its checksums:
// a push needs no content).
func (v serverView) repoView() *repoView {
	rv := &repoView{store: v.storeID, version: v.version, tag: v.etag, empty: v.empty, sums: cloneMap(v.sums), tombs: tombTimes(v.tombs)}
	if rv.sums == nil {
		rv.sums = map[string]string{}
	}
	rv.exact = rv.tag != "" && wire.RepoChecksum(rv.sums) == rv.tag
	return rv
}

// inTheWay names what keeps abs from being a file of the team directory:
// a name on its way that is a file here ("a.md" for "a.md/b.md"), or abs
// itself when it is a folder here; "" when nothing does.
func (c *Client) inTheWay(abs string) string {
	if info, err := c.fs.Stat(abs); err == nil && info.IsDir() {
		rel, _ := filepath.Rel(c.teamDir, abs)
		return "the folder " + filepath.ToSlash(rel)
	}
	for p := filepath.Dir(abs); len(p) > len(c.teamDir) && strings.HasPrefix(p, c.teamDir); p = filepath.Dir(p) {
		if info, err := c.fs.Stat(p); err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(c.teamDir, p)
			return "the file " + filepath.ToSlash(rel)
		}
	}
	return ""
}

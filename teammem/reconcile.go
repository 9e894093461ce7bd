package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"time"

	"github.com/agentmem/agentmem/filehistory"
)

// Conflict reports a key both sides changed differently since they last
// agreed: the server's version took the file, and the local version was
// kept at SavedAs (outside the synced directory).
type Conflict struct {
	Key     string
	SavedAs string
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
// nothing: local edits stay (they are not overwritten by the server's
// older copy), a local deletion is not undone, and a conflict keeps the
// local version under ConflictsDirName.
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
)

// decide applies the three-way rules to one key: l, s and b are the
// local, server and base checksums ("" for absent); tomb is the server's
// deletion time of the key (zero when not deleted) and mtime the local
// file's modification time.
func decide(l, s, b string, tomb, mtime time.Time, keepDeleted bool) action {
	switch {
	case l == s:
		return actNone
	case l == b: // only the server changed
		if s == "" {
			if keepDeleted {
				return actNone
			}
			return actPullDelete
		}
		return actPullWrite
	case s == b: // only the local side changed
		if l == "" {
			if keepDeleted {
				return actPullWrite // deletions do not propagate: restore it
			}
			return actPushDelete
		}
		if b == "" && !tomb.IsZero() && !mtime.After(tomb) {
			return actStale // a copy older than the key's deletion: not an edit
		}
		return actPush
	case l == "": // deleted here, edited there: the edit wins
		return actPullWrite
	case s == "": // deleted there, edited here: the edit wins
		if b == "" && !tomb.IsZero() && !mtime.After(tomb) {
			return actStale
		}
		return actPush
	}
	return actConflict
}

// serverView is what a round knows of the server.
type serverView struct {
	etag      string
	sums      map[string]string
	entries   map[string]string // nil when not fetched
	tombs     map[string]int64
	empty     bool // 404: no data yet
	unchanged bool // 304: sums are the state's
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
	files, permIssues, skipped, err := c.readLocal(ctx)
	if err != nil {
		return err
	}
	res.Skipped = appendSkips(res.Skipped, skipped...)
	local := make(map[string]localFile, len(files))
	for _, f := range files {
		local[f.key] = f
	}
	unplanned := map[string]bool{} // on disk but not syncable (secret, size, key)
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

	keys, plan, needContent := c.plan(st, local, unplanned, view, permIssues)
	if mode&modePull != 0 && needContent && view.entries == nil && !view.empty {
		// A 304 told us the sums, but a key needs its content.
		if view, err = c.fetch(ctx, st, res, false); err != nil {
			return err
		}
		keys, plan, _ = c.plan(st, local, unplanned, view, permIssues)
	}

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
		c.applyLocal(ctx, plan, view, local, base, res)
	}

	// The server side.
	var uploads []localFile
	var deletes []string
	for _, k := range sortedKeys(plan) {
		switch plan[k] {
		case actPush:
			uploads = append(uploads, local[k])
		case actPushDelete:
			deletes = append(deletes, k)
		case actConflict:
			if mode&modePull == 0 {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "conflict"})
			}
		}
	}
	if mode&modePush != 0 && (len(uploads) > 0 || len(deletes) > 0) {
		uploads = withinLimit(uploads, view.sums, deletes, st.MaxEntries, res)
		if len(uploads) > 0 || len(deletes) > 0 {
			if err := c.upload(ctx, &view, res, uploads, deletes, base); err != nil {
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
	return nil
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
		a := decide(f.sum, view.sums[k], st.Base[k], tomb, mtime, c.cfg.KeepDeleted)
		if a == actPushDelete && permIssues {
			a = actNone // a directory we could not read is not a deletion
		}
		if a != actNone {
			plan[k] = a
		}
		if a == actPullWrite || a == actConflict {
			needContent = true
		}
	}
	return keys, plan, needContent
}

// applyLocal carries out the pull side of a plan.
func (c *Client) applyLocal(ctx context.Context, plan map[string]action, view serverView, local map[string]localFile, base map[string]string, res *Result) {
	// track hands a file to the history before it changes; a pull whose
	// checkpoint cannot be taken changes nothing.
	track := func(k, abs string) bool {
		h := c.cfg.History
		if h == nil {
			return true
		}
		if res.Checkpoint == "" {
			id := filehistory.CheckpointID("team-pull", c.now())
			if err := h.MakeSnapshot(ctx, id); err != nil {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "checkpoint_failed"})
				return false
			}
			res.Checkpoint = id
		}
		if err := h.TrackEdit(ctx, abs); err != nil {
			res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "checkpoint_failed"})
			return false
		}
		return true
	}
	for _, k := range sortedKeys(plan) {
		if ctx.Err() != nil {
			return
		}
		switch plan[k] {
		case actPullWrite, actConflict:
			content, ok := view.entries[k]
			if !ok {
				continue
			}
			abs, err := ValidateTeamMemKey(c.cfg.fs, c.cfg.teamDir, k)
			if err != nil {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "invalid_key"})
				continue
			}
			if len(content) > MaxEntryBytes {
				res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "too_large"})
				continue
			}
			if !track(k, abs) {
				continue
			}
			if plan[k] == actConflict {
				saved, err := c.keepAside(k, local[k].content)
				if err != nil {
					res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "conflict"})
					continue // never overwrite an edit we could not keep
				}
				res.Conflicts = append(res.Conflicts, Conflict{Key: k, SavedAs: saved})
			}
			if _, err := c.gate.WriteFile(abs, []byte(content), 0o644); err != nil {
				skip, _ := gateSkip(k, err)
				res.Skipped = appendSkips(res.Skipped, skip)
				continue
			}
			base[k] = view.sums[k]
			res.Written = append(res.Written, k)
		case actPullDelete:
			abs, err := ValidateTeamMemKey(c.cfg.fs, c.cfg.teamDir, k)
			if err != nil || !track(k, abs) {
				continue
			}
			if _, err := c.gate.Remove(abs); err == nil {
				delete(base, k)
				res.Deleted = append(res.Deleted, k)
			}
		case actStale:
			// A copy of a key deleted on the server after this copy was last
			// written: not an edit. It leaves the team directory and is kept
			// aside, so nothing comes back from the dead and nothing is lost.
			abs, err := ValidateTeamMemKey(c.cfg.fs, c.cfg.teamDir, k)
			if err != nil || !track(k, abs) {
				continue
			}
			saved, err := c.keepAside(k, local[k].content)
			if err != nil {
				continue
			}
			if _, err := c.gate.Remove(abs); err == nil {
				delete(base, k)
				res.Deleted = append(res.Deleted, k)
				res.Conflicts = append(res.Conflicts, Conflict{Key: k, SavedAs: saved})
			}
		}
	}
}

// keepAside saves the local side of a conflict under ConflictsDirName
// beside the team directory and returns its path.
func (c *Client) keepAside(key, content string) (string, error) {
	stamp := c.now().UTC().Format("20060102T150405.000Z")
	p := filepath.Join(c.conflictsDir(), filepath.FromSlash(key)+"."+stamp+".md")
	if _, err := c.aside.WriteFile(p, []byte(content), 0o644); err != nil {
		return "", err
	}
	return p, nil
}

func (c *Client) conflictsDir() string {
	return filepath.Join(filepath.Dir(c.cfg.teamDir), ConflictsDirName)
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
	if useETag && st.ETag != "" && st.ServerChecksums != nil && RepoChecksum(st.ServerChecksums) == st.ETag {
		headers["If-None-Match"] = `"` + st.ETag + `"`
	}
	resp, body, err := c.send(ctx, res, http.MethodGet, c.endpoint, nil, headers)
	if err != nil {
		return serverView{}, err
	}
	switch resp.StatusCode {
	case http.StatusNotModified:
		res.NotModified = true
		return serverView{etag: st.ETag, sums: cloneMap(st.ServerChecksums), tombs: st.Tombstones, unchanged: true}, nil
	case http.StatusNotFound:
		res.ServerEmpty = true
		return serverView{sums: map[string]string{}, empty: true}, nil
	}
	if int64(len(body)) >= c.replyCap.Load() && c.learnLimits(ctx, res) {
		return c.fetch(ctx, st, res, useETag) // the cap grew to what the server allows
	}
	var data TeamMemoryData
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
	return serverView{etag: data.Checksum, sums: sums, entries: entries, tombs: data.Content.DeletedEntries}, nil
}

// fetchHashes reads the repo's sums from the hashes view.
func (c *Client) fetchHashes(ctx context.Context, res *Result) (serverView, error) {
	resp, body, err := c.send(ctx, res, http.MethodGet, c.endpoint+"&view=hashes", nil, nil)
	if err != nil {
		return serverView{}, err
	}
	if resp.StatusCode == http.StatusNotFound {
		res.ServerEmpty = true
		return serverView{sums: map[string]string{}, empty: true}, nil
	}
	var hv HashesView
	if err := json.Unmarshal(body, &hv); err != nil || hv.EntryChecksums == nil {
		return serverView{}, &SyncError{Class: ClassParse, Status: resp.StatusCode, Err: errors.New("the hashes view has no entryChecksums")}
	}
	return serverView{etag: hv.Checksum, sums: hv.EntryChecksums, tombs: hv.DeletedEntries}, nil
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

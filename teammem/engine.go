package teammem

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
	"github.com/spf13/afero"
)

// reconcile runs one round of the sync engine through the team driver,
// with st as its basis, changing the sides mode allows.
func (c *Client) reconcile(ctx context.Context, st *SyncState, mode foldersync.Mode) (Result, error) {
	var res Result
	c.loadState(st, &res)
	rem := c.Remote()
	rem.maxEntries = st.MaxEntries
	rem.limitErrors = true
	if st.ETag != "" && st.ServerChecksums != nil && wire.RepoChecksum(st.ServerChecksums) == st.ETag {
		// What the state saw: a read conditional on it may be answered 304.
		rem.cur = &repoView{store: st.StoreID, version: st.Version, tag: st.ETag, exact: true,
			sums: cloneMap(st.ServerChecksums), tombs: tombTimes(st.Tombstones), authors: cloneMap(st.Authors)}
	}
	if mode == foldersync.ModePush {
		rem.HashesOnly(true)
	}
	skipDirs, err := c.storeDirs(ctx)
	if err != nil {
		return res, err
	}
	for k := range st.Base {
		if underDirs(k, skipDirs) {
			delete(st.Base, k) // a store's folder is its store sync's alone
		}
	}
	if mode != foldersync.ModePush {
		// A pull leaves the team directory in place even when the server
		// has nothing yet, so a teammate can write the first memory.
		if err := c.fs.MkdirAll(c.teamDir, 0o755); err != nil {
			return res, fmt.Errorf("teammem: create the team directory: %w", err)
		}
	}
	before := *st
	m := &stateBasis{st: st}
	opts := foldersync.Options{
		Include:         func(rel string) bool { return syncable(rel) && !underDirs(rel, skipDirs) },
		ConflictsDir:    c.conflictsDir(),
		ConflictsIn:     c.aside,
		KeepDeleted:     c.cfg.KeepDeleted,
		AllowMassDelete: c.cfg.AllowMassDelete,
		Retries:         c.cfg.ConflictRetries,
		Now:             c.cfg.Now,
		// A pull's checkpoint, and the local side of a conflict kept as
		// <key>.<time>.md beside the team directory.
		CheckpointPrefix: "team-pull",
		AsideName:        func(rel, stamp string) string { return synctext.FitName(rel, "."+stamp+".md") }, // within a file name's limit
		BasisInMemory:    true,
		Mirror:           m,
		Mode:             mode,
	}
	if c.cfg.History != nil {
		opts.History = c.cfg.History
	}
	e, err := foldersync.New(c.team, c.teamDir, rem, opts)
	if err != nil {
		return res, fmt.Errorf("teammem: %w", err)
	}
	fr, err := e.Round(ctx)
	var se *SyncError
	if errors.As(err, &se) && se.Class == ClassTooManyEntries && se.MaxEntries > 0 {
		st.MaxEntries = se.MaxEntries // the next round sends only what fits
	}
	res.view(fr, rem, c.fs, c.teamDir)
	rem.mu.Lock()
	v := rem.cur
	for _, k := range sortedKeys(rem.hostile) {
		res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: "invalid_key"})
	}
	if fr.BasisReset {
		listed := rem.listed
		res.StoreReset = resetReason(before, &listed)
		c.log.Warn("teammem: "+res.StoreReset+"; syncing without a base, deleting nothing", "event", "teammem_store_reset", "repo", c.cfg.Repo)
	}
	res.Requests, res.BytesSent = rem.stats.Requests, rem.stats.BytesSent
	res.NotModified = rem.stats.NotModified
	rem.mu.Unlock()
	if v != nil {
		res.ServerEmpty = v.empty
		st.ETag, st.ServerChecksums = v.tag, cloneMap(v.sums)
		st.Tombstones = map[string]int64{}
		for k, at := range v.tombs {
			st.Tombstones[k] = at.UnixMilli()
		}
		st.ServerHasContent = len(v.sums) > 0
		if v.entries != nil {
			st.Authors = cloneMap(v.authors) // a full read: what the server says now
		}
	}
	if err == nil && mode != foldersync.ModePull {
		st.InReview = nil
		for _, k := range fr.InReview {
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

// syncable reports whether a file of the team directory is a team
// memory: a .md or .txt file none of whose path segments is hidden.
func syncable(rel string) bool {
	ext := path.Ext(rel)
	if ext != ".md" && ext != ".txt" || fswalk.Hidden(rel) {
		return false
	}
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return true
}

// storeDirs returns the folders this client never carries: SkipDirs and
// those holding a memory store's manifest.
func (c *Client) storeDirs(ctx context.Context) ([]string, error) {
	var manifests []string
	err := fswalk.Walk(ctx, c.fs, c.teamDir, func(e fswalk.Entry) error {
		if path.Base(e.Rel) == memdir.StoreManifestName && !e.Type.IsDir() {
			manifests = append(manifests, path.Dir(e.Rel))
		}
		return nil
	})
	if err != nil && !isMissingOrDenied(err) {
		return nil, err
	}
	return c.skipDirs(manifests), nil
}

// stateBasis is the engine's basis kept in a SyncState.
type stateBasis struct{ st *SyncState }

func (m *stateBasis) Seed() (foldersync.Agreed, bool) {
	st := m.st
	a := foldersync.Agreed{Store: st.StoreID, Generation: st.Version, Resetting: st.Resetting, Entries: make(map[string]foldersync.Entry, len(st.Base))}
	for k, sum := range st.Base {
		a.Entries[k] = foldersync.Entry{Sum: sumHex(sum)}
	}
	return a, true
}

func (m *stateBasis) Save(_ context.Context, a foldersync.Agreed) error {
	st := m.st
	st.Base = make(map[string]string, len(a.Entries))
	for k, e := range a.Entries {
		st.Base[k] = sumWire(e.Sum)
	}
	st.StoreID, st.Version, st.Resetting = a.Store, a.Generation, a.Resetting
	return nil
}

// view fills r from the engine's result.
func (r *Result) view(fr foldersync.Result, rem *Remote, fsys afero.Fs, teamDir string) {
	r.Written = append(r.Written, fr.Pulled...)
	r.Deleted = append(r.Deleted, fr.DeletedLocal...)
	r.Uploaded = append(r.Uploaded, fr.Pushed...)
	r.SoftDeleted = append(r.SoftDeleted, fr.DeletedRemote...)
	for _, cf := range fr.Conflicts {
		r.Conflicts = append(r.Conflicts, Conflict{Key: cf.Path, SavedAs: cf.SavedAs, LocalKept: cf.LocalKept})
	}
	for _, h := range fr.Held {
		side := h.Side
		if side == "remote" {
			side = "server"
		}
		r.Held = append(r.Held, MassDeleteHold{Side: side, Keys: h.Paths, Tracked: h.Tracked, Threshold: h.Threshold})
	}
	r.InReview = append(r.InReview, fr.InReview...)
	if fr.Checkpoint != "" {
		r.Checkpoint = fr.Checkpoint
	}
	for _, s := range fr.Skipped {
		r.Skipped = appendSkips(r.Skipped, skipOf(s, rem, fsys, teamDir))
	}
}

// skipOf turns an engine skip into the client's.
func skipOf(s foldersync.Skip, rem *Remote, fsys afero.Fs, teamDir string) Skip {
	reason, label, _ := strings.Cut(s.Reason, ": ")
	switch {
	case s.Reason == foldersync.SkipBadName:
		return Skip{Key: s.Path, Reason: SkipNotNFC}
	case s.Reason == foldersync.SkipSecret:
		return Skip{Key: s.Path, Reason: "secret"}
	case s.Reason == foldersync.SkipOversized:
		return Skip{Key: s.Path, Reason: "too_large"}
	case s.Reason == foldersync.SkipNotRegular:
		return Skip{Key: s.Path, Reason: "not_regular"} // a link is never followed
	case s.Reason == foldersync.SkipConflict:
		return Skip{Key: s.Path, Reason: "conflict"}
	case s.Reason == foldersync.SkipUnreadable, s.Reason == foldersync.SkipChanged:
		return Skip{Key: s.Path, Reason: "write_failed", Label: s.Reason}
	case reason == foldersync.SkipPathClash:
		if other, ok := strings.CutSuffix(label, " is in the way"); ok {
			if info, err := fsys.Stat(filepath.Join(teamDir, filepath.FromSlash(other))); err == nil {
				kind := "the file "
				if info.IsDir() {
					kind = "the folder "
				}
				label = kind + label
			}
		}
		return Skip{Key: s.Path, Reason: "write_failed", RuleID: SkipPathClash, Label: label}
	case reason == foldersync.SkipRejected:
		return Skip{Key: s.Path, Reason: SkipReviewRejected, Label: label}
	case reason == foldersync.SkipRefused:
		code, words, _ := strings.Cut(label, ": ")
		if code == "over_limit" {
			return Skip{Key: s.Path, Reason: code} // the entry limit learned
		}
		return Skip{Key: s.Path, Reason: SkipRefused, RuleID: code, Label: words}
	}
	rem.skipMu.Lock()
	sk, ok := rem.skips[s.Path]
	rem.skipMu.Unlock()
	if ok && sk.Reason == reason {
		switch sk.Reason {
		case SkipNotUTF8, SkipNULByte, SkipNotNFC, "invalid_key", "too_large":
			sk.Label = "" // the reason says it all
		}
		return sk // the driver's Check: with its rule
	}
	return Skip{Key: s.Path, Reason: reason, Label: label}
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

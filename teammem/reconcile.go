package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/foldersync"
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

// Sync reconciles the team directory with the server by the three-way
// rules of SyncState (see its documentation): local-only changes are
// pushed, server-only changes pulled, deletions propagate (unless
// KeepDeleted), an edit beats a deletion, and when both sides edited a
// key differently the server's version takes the file and the local one
// is kept under ConflictsDirName and reported. A 412 (someone wrote in
// between) starts the round again, at most ConflictRetries times.
func (c *Client) Sync(ctx context.Context, st *SyncState) (Result, error) {
	return c.reconcile(ctx, st, foldersync.ModeBoth)
}

// Pull applies the server's changes by the same rules as Sync and sends
// nothing: it never overwrites a local edit. A local deletion is not
// undone, and a key both sides changed is left as it is here and
// reported as skipped ("conflict") for a Sync to resolve.
func (c *Client) Pull(ctx context.Context, st *SyncState) (Result, error) {
	return c.reconcile(ctx, st, foldersync.ModePull)
}

// Push sends the local changes by the same rules as Sync and writes
// nothing locally. A key the server changed too is not overwritten: it is
// reported as skipped ("conflict") for a Sync or Pull to resolve.
func (c *Client) Push(ctx context.Context, st *SyncState) (Result, error) {
	return c.reconcile(ctx, st, foldersync.ModePush)
}

// serverView is what a round knows of the server.
type serverView struct {
	storeID string // "" when the server does not name its store
	version int64
	etag    string
	sums    map[string]string
	tombs   map[string]int64
	empty   bool // 404: no data yet
}

func (c *Client) conflictsDir() string {
	return filepath.Join(filepath.Dir(c.teamDir), ConflictsDirName)
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

package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

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
func (c *Client) Sync(ctx context.Context, st *SyncState) (foldersync.Result, error) {
	return c.reconcile(ctx, st, foldersync.ModeBoth)
}

// Pull applies the server's changes by the same rules as Sync and sends
// nothing: it never overwrites a local edit. A local deletion is not
// undone, and a key both sides changed is left as it is here and
// reported as skipped (foldersync.SkipConflict) for a Sync to resolve.
func (c *Client) Pull(ctx context.Context, st *SyncState) (foldersync.Result, error) {
	return c.reconcile(ctx, st, foldersync.ModePull)
}

// Push sends the local changes by the same rules as Sync and writes
// nothing locally. A key the server changed too is not overwritten: it is
// reported as skipped (foldersync.SkipConflict) for a Sync or Pull to resolve.
func (c *Client) Push(ctx context.Context, st *SyncState) (foldersync.Result, error) {
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
func (c *Client) fetchHashes(ctx context.Context, tr *traffic) (serverView, error) {
	resp, body, err := c.send(ctx, tr, http.MethodGet, c.endpoint+"&view=hashes", nil, nil)
	if err != nil {
		return serverView{}, err
	}
	storeID := resp.Header.Get(teamwire.StoreIDHeader)
	if resp.Status == http.StatusNotFound {
		return serverView{storeID: storeID, sums: map[string]string{}, empty: true}, nil
	}
	var hv teamwire.HashesView
	if err := json.Unmarshal(body, &hv); err != nil || hv.EntryChecksums == nil {
		return serverView{}, &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the hashes view has no entryChecksums")}
	}
	return serverView{storeID: storeID, version: hv.Version, etag: hv.Checksum, sums: hv.EntryChecksums, tombs: hv.DeletedEntries}, nil
}

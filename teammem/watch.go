package teammem

import (
	"context"
	"strconv"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// StartWatcher keeps the team directory in step with the server with
// the sync engine's watcher (foldersync.StartWatcher): its rounds are
// this client's Sync with its own SyncState (State), a teammate's
// change starts one at once through the server's long-poll
// (Remote.LongPoll, unless opts.Wake is set), and a failure no retry
// mends (SyncError.Permanent: no token, no access, the entry limit)
// pauses it until Watcher.Resume or the removal of a file (what mends
// the entry limit). The first round runs before StartWatcher returns;
// when it fails so, StartWatcher returns its error and no watcher.
// opts.Round, when set, replaces the client's.
func (c *Client) StartWatcher(ctx context.Context, opts foldersync.WatchOptions) (*foldersync.Watcher, error) {
	if opts.Round == nil {
		opts.Round = func(ctx context.Context) (foldersync.Result, error) { return c.Sync(ctx, &c.own) }
	}
	if opts.Wake == nil {
		opts.Wake = c.remote.LongPoll
	}
	return foldersync.StartWatcher(ctx, c.engine, opts)
}

// State is the SyncState the client's watcher syncs with. Read it from
// the watcher's Observer, which runs between rounds.
func (c *Client) State() *SyncState { return &c.own }

// Reason names the failure for a paused watcher: the server's error
// code, else http_<status>, else the error class.
func (e *SyncError) Reason() string {
	switch {
	case e.Code != "":
		return e.Code
	case e.Status != 0:
		return "http_" + strconv.Itoa(e.Status)
	}
	return string(e.Class)
}

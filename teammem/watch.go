package teammem

import (
	"context"
	"errors"
	"strconv"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// StartWatcher keeps the team directory in step with the server with
// the sync engine's watcher (foldersync.StartWatcher): its rounds are
// this client's Sync with st (a fresh SyncState when nil), a
// teammate's change starts one at once through the server's long-poll
// (Remote.LongPoll, unless opts.Wake is set), and a failure no retry
// mends (SyncError.Permanent: no token, no access, the entry limit)
// pauses it until Watcher.Resume or the removal of a file (what mends
// the entry limit). The first round runs before StartWatcher returns;
// when it fails so, StartWatcher returns its error and no watcher.
// opts.Round and opts.Pause, when set, replace the client's.
func (c *Client) StartWatcher(ctx context.Context, st *SyncState, opts foldersync.WatchOptions) (*foldersync.Watcher, error) {
	if st == nil {
		st = &SyncState{}
	}
	if opts.Round == nil {
		opts.Round = func(ctx context.Context) (foldersync.Result, error) { return c.Sync(ctx, st) }
	}
	if opts.Pause == nil {
		opts.Pause = pauseReason
	}
	if opts.Wake == nil {
		opts.Wake = c.remote.LongPoll
	}
	return foldersync.StartWatcher(ctx, c.engine, opts)
}

// pauseReason names a failure no retry mends: the server's error code,
// else http_<status>, else the error class ("" for any other failure).
func pauseReason(err error) string {
	var se *SyncError
	if !errors.As(err, &se) || !se.Permanent() {
		return ""
	}
	switch {
	case se.Code != "":
		return se.Code
	case se.Status != 0:
		return "http_" + strconv.Itoa(se.Status)
	}
	return string(se.Class)
}

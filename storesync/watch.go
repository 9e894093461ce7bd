package storesync

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// DefaultResync is the watcher's time between full rounds while nothing
// changes here (its foldersync.WatchOptions.Interval), as Claude Code's
// store watcher: the store's changes arrive within the hour.
const DefaultResync = 60 * time.Minute

// StartWatcher starts the engine's watcher (foldersync.StartWatcher) over
// this Client: a round at once, then one about opts.Debounce after each
// local change and one every opts.Interval (default DefaultResync); a
// failed round is tried again with a doubling wait, and one no retry
// mends (APIError.Permanent: a revoked token, a store gone, a full disk)
// pauses the watcher, as team sync's does, until Watcher.Resume or the
// removal of a file. When the first round fails so, StartWatcher returns
// its error and no watcher. Close (or the end of ctx) stops it. The
// Observer's Result is in store paths; opts.Round, when set, replaces
// the client's.
func (c *Client) StartWatcher(ctx context.Context, opts foldersync.WatchOptions) (*foldersync.Watcher, error) {
	if opts.Interval == 0 {
		opts.Interval = DefaultResync
	}
	if opts.Round == nil {
		opts.Round = c.round // the engine's, then the authors for the prompt
	}
	if observe := opts.Observer; observe != nil {
		opts.Observer = func(ev foldersync.Event) {
			ev.Result = fromEngine(ev.Result)
			observe(ev)
		}
	}
	return foldersync.StartWatcher(ctx, c.engine, opts)
}

// Reason names the failure for a paused watcher: the store's error type
// and status.
func (e *APIError) Reason() string { return fmt.Sprintf("%s (HTTP %d)", e.Type, e.Status) }

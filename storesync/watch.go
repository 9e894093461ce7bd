package storesync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// Defaults of a Watcher, as Claude Code's store watcher: a push about 2 s
// after the last local change, and a full resync every hour.
const (
	defaultDebounce = 2 * time.Second
	DefaultResync   = 60 * time.Minute
)

// WatchOptions configures Watch.
type WatchOptions struct {
	// Debounce is how long the folder must stay unchanged before a round
	// pushes its changes (default 2 s).
	Debounce time.Duration
	// Resync is the time between full rounds while nothing changes here,
	// which bring the store's changes in (default DefaultResync; negative:
	// only local changes start a round).
	Resync time.Duration
	// Poll, when positive, finds local changes by looking at the folder
	// this often instead of through fsnotify.
	Poll time.Duration
	// Observer receives every round's Event, its foldersync.Result in store paths
	// (optional; it must not block).
	Observer func(foldersync.Event)
}

// StartWatcher starts the engine's watcher (foldersync.StartWatcher) over
// this Client: a round at once, then one about Debounce after each local
// change and one every Resync; a failed round is tried again with a
// doubling wait, and one no retry mends (the store answered an error
// that is not APIError.Temporary: a revoked token, a store gone, a full
// disk) pauses the watcher, as team sync's does, until Watcher.Resume or
// the removal of a file. When the first round fails so, StartWatcher
// returns its error and no watcher. Close (or the end of ctx) stops it.
func StartWatcher(ctx context.Context, c *Client, cfg WatchOptions) (*foldersync.Watcher, error) {
	if cfg.Debounce <= 0 {
		cfg.Debounce = defaultDebounce
	}
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	// Each round is Sync's: the engine's, then the authors for the prompt.
	opts := foldersync.WatchOptions{Debounce: cfg.Debounce, Interval: cfg.Resync, Poll: cfg.Poll, Round: c.round, Pause: pauseReason}
	if cfg.Observer != nil {
		opts.Observer = func(ev foldersync.Event) {
			ev.Result = fromEngine(ev.Result)
			cfg.Observer(ev)
		}
	}
	return foldersync.StartWatcher(ctx, c.engine, opts)
}

// Watch runs StartWatcher's watcher until ctx ends, and returns nil then.
func Watch(ctx context.Context, c *Client, cfg WatchOptions) error {
	w, err := StartWatcher(ctx, c, cfg)
	if err != nil {
		return err
	}
	<-w.Done()
	return nil
}

// pauseReason names a failure no retry mends: the store's error type and
// status ("" for any other failure, which is retried).
func pauseReason(err error) string {
	var api *APIError
	if !errors.As(err, &api) || api.Temporary() {
		return ""
	}
	return fmt.Sprintf("%s (HTTP %d)", api.Type, api.Status)
}

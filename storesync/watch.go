package storesync

import (
	"context"
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
	// OnRound receives every round's result and error (optional).
	OnRound func(Result, error)
}

// Watch runs a round at once, then one about Debounce after each local
// change and one every Resync, until ctx ends; it returns nil then. A
// failed round is reported to OnRound and tried again with a doubling
// wait. It is the engine's watcher (foldersync.Watch) over this Client.
func Watch(ctx context.Context, c *Client, cfg WatchOptions) error {
	if cfg.Debounce <= 0 {
		cfg.Debounce = defaultDebounce
	}
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	opts := foldersync.WatchOptions{Debounce: cfg.Debounce, Interval: cfg.Resync, Poll: cfg.Poll}
	if cfg.OnRound != nil {
		opts.Observer = func(ev foldersync.Event) { cfg.OnRound(fromEngine(ev.Result), ev.Err) }
	}
	return foldersync.Watch(ctx, c.engine, opts)
}

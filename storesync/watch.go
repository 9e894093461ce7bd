package storesync

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
)

// Defaults of a Watcher, as Claude Code's store watcher: a push about 2 s
// after the last local change, and a full resync every hour.
const (
	defaultDebounce = 2 * time.Second
	DefaultResync   = 60 * time.Minute
	defaultPoll     = 500 * time.Millisecond
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
	// Poll is how often the folder is looked at (default 500 ms).
	Poll time.Duration
	// OnRound receives every round's result and error (optional).
	OnRound func(Result, error)
}

// Watch runs a round at once, then one about Debounce after each local
// change and one every Resync, until ctx ends; it returns nil then. A
// failed round is reported to OnRound and retried at the next change or
// resync, after at least Debounce.
func Watch(ctx context.Context, c *Client, cfg WatchOptions) error {
	if cfg.Debounce <= 0 {
		cfg.Debounce = defaultDebounce
	}
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Poll <= 0 {
		cfg.Poll = defaultPoll
	}
	round := func() {
		res, err := c.Sync(ctx)
		if ctx.Err() != nil {
			return
		}
		if cfg.OnRound != nil {
			cfg.OnRound(res, err)
		}
	}
	round()
	last := c.fingerprint(ctx)
	lastRound := time.Now()
	var changedAt time.Time // when the folder was last seen changing; zero: settled
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := time.Now()
		if fp := c.fingerprint(ctx); fp != last {
			last, changedAt = fp, now
			continue
		}
		due := !changedAt.IsZero() && now.Sub(changedAt) >= cfg.Debounce
		resync := cfg.Resync > 0 && now.Sub(lastRound) >= cfg.Resync
		if !due && !resync {
			continue
		}
		round()
		changedAt, lastRound = time.Time{}, time.Now()
		last = c.fingerprint(ctx) // the round's own writes are not a change
	}
}

// fingerprint sums the names, sizes and mtimes of the folder's synced
// files: it moves when one is created, changed or removed.
func (c *Client) fingerprint(ctx context.Context) [32]byte {
	h := sha256.New()
	_ = fswalk.Walk(ctx, c.fs, c.dir, func(e fswalk.Entry) error {
		if !e.Type.IsRegular() || !c.cfg.Mount.syncable(e.Rel) {
			return nil
		}
		info, err := c.fs.Stat(e.Abs)
		if err == nil {
			fmt.Fprintf(h, "%s\x00%d\x00%d\n", e.Rel, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

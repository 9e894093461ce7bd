package foldersync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
)

// flaky fails its listings while down is set.
type flaky struct {
	*memremote.Remote
	down chan bool
}

func (f *flaky) List(ctx context.Context, prev foldersync.Listing) (foldersync.Listing, error) {
	select {
	case d := <-f.down:
		if d {
			f.down <- true
			return foldersync.Listing{}, errors.New("the remote is down")
		}
	default:
	}
	return f.Remote.List(ctx, prev)
}

func waitFor(t *testing.T, events <-chan foldersync.Event, what string, ok func(foldersync.Event) bool) foldersync.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ok(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no round %s within 10 s", what)
		}
	}
}

func TestWatcher(t *testing.T) {
	for _, poll := range []time.Duration{0, 20 * time.Millisecond} {
		name := "fsnotify"
		if poll > 0 {
			name = "poll"
		}
		t.Run(name, func(t *testing.T) {
			r := memremote.New("w")
			fr := &flaky{Remote: r, down: make(chan bool, 1)}
			c := remotetest.NewClient(t, fr, foldersync.Options{})
			events := make(chan foldersync.Event, 100)
			w, err := foldersync.StartWatcher(context.Background(), c.Engine, foldersync.WatchOptions{
				Debounce: 50 * time.Millisecond, Interval: 300 * time.Millisecond, Poll: poll, MaxBackoff: 200 * time.Millisecond,
				Observer: func(ev foldersync.Event) { events <- ev },
			})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, events, "at start", func(ev foldersync.Event) bool { return ev.Cause == "start" })
			c.Write(t, "a.md", "a\n")
			waitFor(t, events, "pushing a local change", func(ev foldersync.Event) bool {
				return ev.Cause == "local" && len(ev.Result.Pushed) == 1
			})
			r.Write("b.md", []byte("from a teammate\n"))
			waitFor(t, events, "pulling on the interval", func(ev foldersync.Event) bool { return len(ev.Result.Pulled) == 1 })
			r.Write("c.md", []byte("notified\n"))
			w.Notify()
			waitFor(t, events, "on Notify", func(ev foldersync.Event) bool { return ev.Cause == "notify" && len(ev.Result.Pulled) == 1 })
			fr.down <- true
			c.Write(t, "d.md", "while down\n")
			waitFor(t, events, "failing twice in a row", func(ev foldersync.Event) bool { return ev.Failures >= 2 })
			<-fr.down
			waitFor(t, events, "retrying once the remote is back", func(ev foldersync.Event) bool {
				return ev.Err == nil && ev.Failures == 0 && len(ev.Result.Pushed) == 1
			})
			c.Write(t, "e.md", "just before close\n")
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got, ok := r.Read("e.md"); !ok || string(got) != "just before close\n" {
				t.Fatalf("Close did not push the pending change: %q", got)
			}
		})
	}
}

// writesDuringList writes a file into the folder while the round lists
// the remote, once armed: a user's write that lands after the round's
// walk.
type writesDuringList struct {
	*memremote.Remote
	arm   chan func()
	wrote chan struct{}
}

func (w *writesDuringList) List(ctx context.Context, prev foldersync.Listing) (foldersync.Listing, error) {
	select {
	case write := <-w.arm:
		write()
		close(w.wrote)
	default:
	}
	return w.Remote.List(ctx, prev)
}

// TestWatcherSeesAWriteDuringARound: a file written while a round runs
// (after its walk of the folder) starts another round, whether the
// watcher polls or is told by fsnotify. Polling took the folder's
// fingerprint after the round, so such a write counted as the round's
// own and waited for the interval (the store mount's lost pushes of
// TestFrontDoorMountsStores: rounds held up on a shared lock made the
// window wide).
func TestWatcherSeesAWriteDuringARound(t *testing.T) {
	for _, poll := range []time.Duration{0, 20 * time.Millisecond} {
		name := "fsnotify"
		if poll > 0 {
			name = "poll"
		}
		t.Run(name, func(t *testing.T) {
			r := &writesDuringList{Remote: memremote.New("w"), arm: make(chan func(), 1), wrote: make(chan struct{})}
			c := remotetest.NewClient(t, r, foldersync.Options{})
			events := make(chan foldersync.Event, 100)
			w, err := foldersync.StartWatcher(context.Background(), c.Engine, foldersync.WatchOptions{
				Debounce: 50 * time.Millisecond, Interval: -1, Poll: poll,
				Observer: func(ev foldersync.Event) { events <- ev },
			})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			r.arm <- func() { c.Write(t, "during.md", "written during a round\n") }
			c.Write(t, "before.md", "starts the round\n")
			<-r.wrote
			waitFor(t, events, "pushing the write made during a round", func(ev foldersync.Event) bool {
				got, ok := r.Read("during.md")
				return ok && string(got) == "written during a round\n"
			})
		})
	}
}

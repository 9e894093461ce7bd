package foldersync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// The walk meets files in the folder's own order (a real disk lists by
// hash, not by name); what it refuses is still reported in path order,
// every round the same, and a name refused once stays refused.
func TestSkipsAreReportedInPathOrder(t *testing.T) {
	r := memremote.New("m")
	c := remotetest.NewClient(t, r, foldersync.Options{})
	var want []string
	for i := range 40 {
		p := fmt.Sprintf("n%02d-cafe\u0301.md", 39-i) // not NFC: refused by name
		c.Write(t, p, "x\n")
		want = append(want, p)
		c.Write(t, fmt.Sprintf("ok%02d.md", i), "kept\n")
	}
	if err := os.Symlink("ok00.md", filepath.Join(c.Dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	want = append(want, "link.md")
	slices.Sort(want)
	for round := range 3 {
		res := c.Round(t)
		var got []string
		for _, s := range res.Skipped {
			got = append(got, s.Path)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d skipped %q, want %q (path order)", round, got, want)
		}
		if skipOf(res, "link.md") != foldersync.SkipNotRegular || skipOf(res, want[len(want)-1]) != foldersync.SkipBadName {
			t.Fatalf("round %d: reasons %q and %q", round, skipOf(res, "link.md"), skipOf(res, want[len(want)-1]))
		}
	}
	if got, _ := r.Read("ok39.md"); string(got) != "kept\n" {
		t.Fatalf("the remote holds ok39.md as %q", got)
	}
}

// A link to a folder is reported (not a regular file), not passed over in
// silence, and nothing behind it is synced or touched.
func TestALinkToAFolderIsReported(t *testing.T) {
	r := memremote.New("m")
	c := remotetest.NewClient(t, r, foldersync.Options{})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(c.Dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	c.Write(t, "kept.md", "kept\n")
	res := c.Round(t)
	if skipOf(res, "linkdir") != foldersync.SkipNotRegular {
		t.Fatalf("the link to a folder was skipped with %q; skipped: %+v", skipOf(res, "linkdir"), res.Skipped)
	}
	if _, ok := r.Read("linkdir/secret.md"); ok {
		t.Fatal("a file behind the link reached the remote")
	}
	if got, _ := r.Read("kept.md"); string(got) != "kept\n" {
		t.Fatalf("kept.md reached the remote as %q", got)
	}
}

// A write's temporary file left by a killed process (over an hour old)
// is removed by the next round; a fresh one, which may be a write under
// way, stays; neither is synced.
func TestStaleTemporaryFilesGo(t *testing.T) {
	r := memremote.New("m")
	c := remotetest.NewClient(t, r, foldersync.Options{})
	old := filepath.Join(c.Dir, ".notes.md.tmp-4242")
	fresh := filepath.Join(c.Dir, ".other.md.tmp-77")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("half a write"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	c.Write(t, "notes.md", "whole\n")
	c.Round(t)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the stale temporary file is still there (%v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a fresh temporary file was removed: %v", err)
	}
	if got, _ := r.Read("notes.md"); string(got) != "whole\n" {
		t.Fatalf("notes.md reached the remote as %q", got)
	}
	if _, ok := r.Read(".notes.md.tmp-4242"); ok {
		t.Fatal("a temporary file reached the remote")
	}
}

// A tracked file that is no longer a regular file is left out of the
// round's checkpoint instead of stopping every pull for good; a nil
// tracker records nothing rather than failing the round.
func TestCheckpointLeavesOutWhatItCannotBackUp(t *testing.T) {
	r := memremote.New("m")
	tr, err := filehistory.Open(afero.NewOsFs(), t.TempDir(), "sync-test", filehistory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := remotetest.NewClient(t, r, foldersync.Options{History: tr})
	r.Write("x.md", []byte("x1\n"))
	r.Write("y.md", []byte("y1\n"))
	if res := c.Round(t); res.Checkpoint == "" {
		t.Fatal("a round that pulled took no checkpoint")
	}
	if err := os.Remove(filepath.Join(c.Dir, "x.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(c.Dir, "x.md")); err != nil {
		t.Fatal(err)
	}
	r.Write("y.md", []byte("y2\n"))
	res := c.Round(t)
	if got, _ := c.Read(t, "y.md"); got != "y2\n" || res.Checkpoint == "" {
		t.Fatalf("y.md is %q after the round (checkpoint %q): a file the snapshot could not back up stopped the pull", got, res.Checkpoint)
	}
	if skipOf(res, "x.md") != foldersync.SkipNotRegular {
		t.Fatalf("x.md skipped with %q", skipOf(res, "x.md"))
	}

	var none *filehistory.Tracker
	n := remotetest.NewClient(t, r, foldersync.Options{History: none})
	if res := n.Round(t); res.Checkpoint != "" {
		t.Fatalf("a nil tracker took checkpoint %q", res.Checkpoint)
	}
	if got, _ := n.Read(t, "y.md"); got != "y2\n" {
		t.Fatalf("with a nil tracker y.md is %q", got)
	}
}

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

func skipOf(res foldersync.Result, p string) string {
	for _, s := range res.Skipped {
		if s.Path == p {
			return s.Reason
		}
	}
	return ""
}

func contains(list []string, p string) bool {
	for _, s := range list {
		if s == p {
			return true
		}
	}
	return false
}

// modeClients returns a folder synced both ways and the same folder's
// engines for one side only, all agreed on a.md, b.md and c.md.
func modeClients(t *testing.T, r *memremote.Remote) (both *remotetest.Client, pull, push *foldersync.Engine) {
	t.Helper()
	both = remotetest.NewClient(t, r, foldersync.Options{})
	for _, p := range []string{"a.md", "b.md", "c.md"} {
		both.Write(t, p, p+" v1\n")
	}
	both.Round(t)
	d, err := memdir.NewDir(afero.NewOsFs(), both.Dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pull, err = foldersync.New(d, both.Dir, r, foldersync.Options{Mode: foldersync.ModePull}); err != nil {
		t.Fatal(err)
	}
	if push, err = foldersync.New(d, both.Dir, r, foldersync.Options{Mode: foldersync.ModePush}); err != nil {
		t.Fatal(err)
	}
	return both, pull, push
}

// roundOf runs one round of e and fails the test on an error.
func roundOf(t *testing.T, e *foldersync.Engine) foldersync.Result {
	t.Helper()
	res, err := e.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestModePullChangesTheFolderOnly(t *testing.T) {
	r := memremote.New("m")
	c, pull, _ := modeClients(t, r)
	c.Write(t, "a.md", "a local edit\n")  // waits for a push
	c.Remove(t, "b.md")                   // waits for a push
	r.Write("c.md", []byte("c remote\n")) // pulled
	r.Write("d.md", []byte("d remote\n")) // pulled
	c.Write(t, "e.md", "e local\n")       // waits
	res := roundOf(t, pull)
	if !contains(res.Pulled, "c.md") || !contains(res.Pulled, "d.md") || len(res.Pushed)+len(res.DeletedRemote) != 0 {
		t.Fatalf("a pull-only round pulled %v, pushed %v, deleted on the remote %v", res.Pulled, res.Pushed, res.DeletedRemote)
	}
	if got, _ := r.Read("a.md"); string(got) != "a.md v1\n" {
		t.Fatalf("a pull-only round sent a.md: the remote holds %q", got)
	}
	if _, ok := r.Read("b.md"); !ok {
		t.Fatal("a pull-only round deleted b.md on the remote")
	}
	if _, ok := r.Read("e.md"); ok {
		t.Fatal("a pull-only round pushed e.md")
	}
	// A path both sides changed is left alone and reported.
	c.Write(t, "c.md", "c local\n")
	r.Write("c.md", []byte("c remote 2\n"))
	res = roundOf(t, pull)
	if skipOf(res, "c.md") != foldersync.SkipConflict || len(res.Conflicts) != 0 {
		t.Fatalf("c.md changed on both sides: skipped %q, conflicts %v; want %q and none", skipOf(res, "c.md"), res.Conflicts, foldersync.SkipConflict)
	}
	if got, _ := c.Read(t, "c.md"); got != "c local\n" {
		t.Fatalf("a pull-only round overwrote a local edit: c.md holds %q", got)
	}
	// A round both ways then sends what waited.
	res = c.Round(t)
	if !contains(res.Pushed, "a.md") || !contains(res.Pushed, "e.md") || !contains(res.DeletedRemote, "b.md") || len(res.Conflicts) != 1 {
		t.Fatalf("the round both ways after the pull pushed %v, deleted %v, conflicts %v", res.Pushed, res.DeletedRemote, res.Conflicts)
	}
}

func TestModePushChangesTheRemoteOnly(t *testing.T) {
	r := memremote.New("m")
	c, _, push := modeClients(t, r)
	c.Write(t, "a.md", "a local edit\n")  // pushed
	c.Remove(t, "b.md")                   // deleted on the remote
	r.Write("c.md", []byte("c remote\n")) // waits for a pull
	r.Remove("c.md")
	r.Write("d.md", []byte("d remote\n")) // waits
	res := roundOf(t, push)
	if !contains(res.Pushed, "a.md") || !contains(res.DeletedRemote, "b.md") || len(res.Pulled)+len(res.DeletedLocal) != 0 {
		t.Fatalf("a push-only round pushed %v, deleted on the remote %v, pulled %v, deleted here %v", res.Pushed, res.DeletedRemote, res.Pulled, res.DeletedLocal)
	}
	if _, ok := c.Read(t, "c.md"); !ok {
		t.Fatal("a push-only round deleted c.md here")
	}
	if _, ok := c.Read(t, "d.md"); ok {
		t.Fatal("a push-only round wrote d.md here")
	}
	if _, ok := r.Read("c.md"); ok {
		t.Fatal("a push-only round brought c.md back to the remote")
	}
	// A path both sides changed is left alone on both.
	c.Write(t, "a.md", "a local 2\n")
	r.Write("a.md", []byte("a remote 2\n"))
	res = roundOf(t, push)
	if skipOf(res, "a.md") != foldersync.SkipConflict {
		t.Fatalf("a.md changed on both sides: skipped %q, want %q", skipOf(res, "a.md"), foldersync.SkipConflict)
	}
	if got, _ := r.Read("a.md"); string(got) != "a remote 2\n" {
		t.Fatalf("a push-only round overwrote the remote's edit: a.md holds %q", got)
	}
	if (foldersync.Skip{Reason: foldersync.SkipConflict}).Refused() {
		t.Fatal("a conflict skip is reported as refused; a round both ways settles it")
	}
	res = c.Round(t)
	if !contains(res.Pulled, "d.md") || !contains(res.DeletedLocal, "c.md") || len(res.Conflicts) != 1 {
		t.Fatalf("the round both ways after the push pulled %v, deleted here %v, conflicts %v", res.Pulled, res.DeletedLocal, res.Conflicts)
	}
}

func TestModeOutOfRange(t *testing.T) {
	dir := t.TempDir()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := foldersync.New(d, dir, memremote.New("m"), foldersync.Options{Mode: 7}); err == nil {
		t.Fatal("New took mode 7")
	}
}

// mirror keeps Agreed in memory, as a driver's state would.
type mirror struct {
	a     foldersync.Agreed
	ok    bool
	saves int
}

func (m *mirror) Seed() (foldersync.Agreed, bool) { return m.a, m.ok }
func (m *mirror) Save(_ context.Context, a foldersync.Agreed) error {
	m.a, m.ok = a, true
	m.saves++
	return nil
}

func TestBasisInMemory(t *testing.T) {
	r := memremote.New("m")
	dir := t.TempDir()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := &mirror{}
	newEngine := func() *foldersync.Engine {
		e, err := foldersync.New(d, dir, r, foldersync.Options{BasisInMemory: true, Mirror: m})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	c := &remotetest.Client{Dir: dir, Engine: newEngine()}
	c.Write(t, "a.md", "a\n")
	c.Write(t, "b.md", "b\n")
	c.Round(t)
	if _, err := os.Stat(filepath.Join(dir, foldersync.DefaultBasisName)); !os.IsNotExist(err) {
		t.Fatalf("a basis kept in memory left a basis file (stat: %v)", err)
	}
	if !m.ok || len(m.a.Entries) != 2 {
		t.Fatalf("the mirror holds %v entries after the first round, want 2", len(m.a.Entries))
	}
	// A new engine starts from the mirror: a deletion there is evidence.
	c.Engine = newEngine()
	c.Remove(t, "a.md")
	res := c.Round(t)
	if !contains(res.DeletedRemote, "a.md") {
		t.Fatalf("an engine seeded by the mirror did not send the deletion of a.md: %+v", res)
	}
	// Without a mirror, a fresh engine deletes nothing on either side.
	e, err := foldersync.New(d, dir, r, foldersync.Options{BasisInMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Remove(t, "b.md")
	res, err = e.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedRemote)+len(res.DeletedLocal) != 0 || !contains(res.Pulled, "b.md") {
		t.Fatalf("a fresh in-memory basis deleted %v/%v, pulled %v; want nothing deleted and b.md back", res.DeletedRemote, res.DeletedLocal, res.Pulled)
	}
}

func TestConflictsIn(t *testing.T) {
	r := memremote.New("m")
	parent := t.TempDir()
	dir := filepath.Join(parent, "team")
	asideDir := filepath.Join(parent, ".team-conflicts")
	for _, p := range []string{dir, asideDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := foldersync.New(d, dir, r, foldersync.Options{ConflictsDir: asideDir}); err == nil {
		t.Fatal("New took a conflicts folder outside the memory directory without ConflictsIn")
	}
	ad, err := d.WithPath(asideDir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := foldersync.New(d, dir, r, foldersync.Options{ConflictsDir: asideDir, ConflictsIn: ad})
	if err != nil {
		t.Fatal(err)
	}
	c := &remotetest.Client{Dir: dir, Engine: e}
	c.Write(t, "a.md", "a\n")
	c.Round(t)
	c.Write(t, "a.md", "a local\n")
	r.Write("a.md", []byte("a remote\n"))
	res := c.Round(t)
	if len(res.Conflicts) != 1 || filepath.Dir(res.Conflicts[0].SavedAs) != asideDir {
		t.Fatalf("conflicts %+v, want one kept in %s", res.Conflicts, asideDir)
	}
	raw, err := os.ReadFile(res.Conflicts[0].SavedAs)
	if err != nil || string(raw) != "a local\n" {
		t.Fatalf("the copy kept aside holds %q (%v), want the local edit", raw, err)
	}
}

func TestResetLastsUntilARoundThatPushes(t *testing.T) {
	r := memremote.New("m")
	c, pull, _ := modeClients(t, r)
	// The remote is replaced by an older copy: a.md differs, b.md is gone.
	r.Replace("m2", map[string][]byte{"a.md": []byte("a older\n"), "c.md": []byte("c.md v1\n")})
	res := roundOf(t, pull)
	if !res.BasisReset {
		t.Fatal("the pull did not find the remote replaced")
	}
	// A second pull still keeps the local side: the reset is not settled.
	res = roundOf(t, pull)
	if got, _ := c.Read(t, "a.md"); got != "a.md v1\n" {
		t.Fatalf("a pull after a reset took the replaced remote's a.md: %q", got)
	}
	if _, ok := c.Read(t, "b.md"); !ok || len(res.DeletedLocal) != 0 {
		t.Fatalf("a pull after a reset deleted b.md here (%v)", res.DeletedLocal)
	}
	// The round both ways settles it: the local side reaches the remote.
	res = c.Round(t)
	if got, _ := r.Read("a.md"); string(got) != "a.md v1\n" {
		t.Fatalf("after the round both ways the remote holds a.md %q, want the local side", got)
	}
	if _, ok := r.Read("b.md"); !ok {
		t.Fatal("after the round both ways the remote lacks b.md")
	}
	// Settled: a deletion now propagates again.
	c.Remove(t, "b.md")
	res = c.Round(t)
	if !contains(res.DeletedRemote, "b.md") {
		t.Fatalf("after the reset settled, deleting b.md did not reach the remote: %+v", res)
	}
}

func TestAsideName(t *testing.T) {
	r := memremote.New("m")
	c := remotetest.NewClient(t, r, foldersync.Options{AsideName: func(rel, stamp string) string { return rel + "." + stamp + ".md" }})
	c.Write(t, "a.md", "a\n")
	c.Round(t)
	c.Write(t, "a.md", "a local\n")
	r.Write("a.md", []byte("a remote\n"))
	res := c.Round(t)
	if len(res.Conflicts) != 1 || !strings.HasPrefix(filepath.Base(res.Conflicts[0].SavedAs), "a.md.") || !strings.HasSuffix(res.Conflicts[0].SavedAs, ".md") {
		t.Fatalf("conflicts %+v, want one kept as a.md.<time>.md", res.Conflicts)
	}
}

package remotetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// Client is one folder synced by the engine, for the engine's tests.
type Client struct {
	Dir    string
	Engine *foldersync.Engine
}

// NewClient returns a fresh folder synced with remote.
func NewClient(t testing.TB, remote foldersync.Remote, opts foldersync.Options) *Client {
	t.Helper()
	dir := t.TempDir()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := foldersync.New(d, dir, remote, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{Dir: dir, Engine: e}
}

// Round runs a round that must succeed.
func (c *Client) Round(t testing.TB) foldersync.Result {
	t.Helper()
	res, err := c.Engine.Round(context.Background())
	if err != nil {
		t.Fatalf("round: %v", err)
	}
	return res
}

// Write writes a file of the folder.
func (c *Client) Write(t testing.TB, p, content string) {
	t.Helper()
	abs := filepath.Join(c.Dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Read reads a file of the folder.
func (c *Client) Read(t testing.TB, p string) (string, bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(c.Dir, filepath.FromSlash(p)))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(raw), true
}

// Remove removes a file of the folder.
func (c *Client) Remove(t testing.TB, p string) {
	t.Helper()
	if err := os.Remove(filepath.Join(c.Dir, filepath.FromSlash(p))); err != nil {
		t.Fatal(err)
	}
}

func skipped(res foldersync.Result, p string) string {
	for _, s := range res.Skipped {
		if s.Path == p {
			return s.Reason
		}
	}
	return ""
}

func remoteHas(t testing.TB, ctl Control, p, want string) {
	t.Helper()
	got, ok := ctl.Read(t, p)
	if !ok || string(got) != want {
		t.Fatalf("the remote holds %q (present %v) at %s, want %q", got, ok, p, want)
	}
}

// cutRemote passes calls through to a Remote until it is cut: Apply
// carries out the first applyLeft changes one by one, then fails; Get
// answers getLeft calls, then fails. It stands in for a client killed in
// the middle of a round.
type cutRemote struct {
	foldersync.Remote
	applyLeft, getLeft int
}

var errCut = errors.New("remotetest: the round was cut here")

func (c *cutRemote) Apply(ctx context.Context, changes []foldersync.Change) ([]foldersync.Outcome, error) {
	var out []foldersync.Outcome
	for _, ch := range changes {
		if c.applyLeft <= 0 {
			return out, errCut
		}
		c.applyLeft--
		o, err := c.Remote.Apply(ctx, []foldersync.Change{ch})
		out = append(out, o...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (c *cutRemote) Get(ctx context.Context, paths []string) (map[string][]byte, error) {
	if c.getLeft <= 0 {
		return nil, errCut
	}
	c.getLeft--
	return c.Remote.Get(ctx, paths)
}

// lostReply carries out every change it is given, then answers with an
// error and no outcomes: a reply lost on its way back (a cut
// connection, a client killed before it read the answer).
type lostReply struct{ foldersync.Remote }

var errLostReply = errors.New("remotetest: the reply was lost")

func (l lostReply) Apply(ctx context.Context, changes []foldersync.Change) ([]foldersync.Outcome, error) {
	if _, err := l.Remote.Apply(ctx, changes); err != nil {
		return nil, err
	}
	return nil, errLostReply
}

// killAfterWrite stands in for a run killed just after it wrote a pulled
// file and before it recorded it: it keeps the basis file as it was when
// the first write began, to be put back after the round.
type killAfterWrite struct {
	basis string
	kept  []byte
}

func (k *killAfterWrite) TrackEdit(context.Context, string) error {
	if k.kept == nil {
		k.kept, _ = os.ReadFile(k.basis)
	}
	return nil
}

func (k *killAfterWrite) MakeSnapshot(context.Context, string) error { return nil }

// racingRemote lets a teammate write just before the first Apply: the
// engine's change then meets a remote that moved since its listing.
type racingRemote struct {
	foldersync.Remote
	before func()
}

func (r *racingRemote) Apply(ctx context.Context, changes []foldersync.Change) ([]foldersync.Outcome, error) {
	if r.before != nil {
		r.before()
		r.before = nil
	}
	return r.Remote.Apply(ctx, changes)
}

// RunEngine runs the engine's tests through the driver newRemote makes:
// two or three clients on one remote, and Control acting as a teammate.
func RunEngine(t *testing.T, newRemote Factory) {
	t.Run("PushPull", func(t *testing.T) {
		r, ctl := newRemote(t)
		a, b := NewClient(t, r, foldersync.Options{}), NewClient(t, r, foldersync.Options{})
		a.Write(t, "one.md", "one\n")
		a.Write(t, "sub/two.md", "two\n")
		if res := a.Round(t); len(res.Pushed) != 2 {
			t.Fatalf("pushed %v", res.Pushed)
		}
		remoteHas(t, ctl, "sub/two.md", "two\n")
		if res := b.Round(t); len(res.Pulled) != 2 {
			t.Fatalf("pulled %v", res.Pulled)
		}
		if got, _ := b.Read(t, "sub/two.md"); got != "two\n" {
			t.Fatalf("b holds %q", got)
		}
		// Nothing to do: a round changes nothing, on either side.
		for _, c := range []*Client{a, b} {
			if res := c.Round(t); res.Changed() || !res.Unchanged {
				t.Fatalf("an unchanged round did %+v", res)
			}
		}
		b.Write(t, "one.md", "one, edited\n")
		b.Round(t)
		if res := a.Round(t); !slices.Contains(res.Pulled, "one.md") {
			t.Fatalf("a did not pull the edit: %+v", res)
		}
		a.Remove(t, "sub/two.md")
		if res := a.Round(t); !slices.Contains(res.DeletedRemote, "sub/two.md") {
			t.Fatalf("a did not delete on the remote: %+v", res)
		}
		if res := b.Round(t); !slices.Contains(res.DeletedLocal, "sub/two.md") {
			t.Fatalf("b did not delete locally: %+v", res)
		}
		if _, ok := b.Read(t, "sub/two.md"); ok {
			t.Fatalf("b still holds the deleted file")
		}
	})
	t.Run("EditBeatsDelete", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "e.md", "v1\n")
		a.Write(t, "f.md", "v1\n")
		a.Round(t)
		// Deleted there, edited here: the edit is pushed back.
		ctl.Remove(t, "e.md")
		a.Write(t, "e.md", "v2 local\n")
		if res := a.Round(t); !slices.Contains(res.Pushed, "e.md") {
			t.Fatalf("the local edit was not pushed over the deletion: %+v", res)
		}
		remoteHas(t, ctl, "e.md", "v2 local\n")
		// Deleted here, edited there: the edit comes back.
		a.Remove(t, "f.md")
		ctl.Write(t, "f.md", []byte("v2 remote\n"))
		if res := a.Round(t); !slices.Contains(res.Pulled, "f.md") {
			t.Fatalf("the remote edit did not come back: %+v", res)
		}
		if got, _ := a.Read(t, "f.md"); got != "v2 remote\n" {
			t.Fatalf("a holds %q", got)
		}
	})
	t.Run("BothChangedKeepsLoserAside", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "c.md", "base\n")
		a.Round(t)
		a.Write(t, "c.md", "mine\n")
		ctl.Write(t, "c.md", []byte("theirs\n"))
		res := a.Round(t)
		if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "c.md" {
			t.Fatalf("conflicts %+v", res.Conflicts)
		}
		if got, _ := a.Read(t, "c.md"); got != "theirs\n" {
			t.Fatalf("the file holds %q, want the remote's", got)
		}
		saved, err := os.ReadFile(res.Conflicts[0].SavedAs)
		if err != nil || string(saved) != "mine\n" {
			t.Fatalf("the local side was not kept aside: %q %v", saved, err)
		}
		remoteHas(t, ctl, "c.md", "theirs\n")
		if res := a.Round(t); res.Changed() {
			t.Fatalf("the conflicts folder was synced: %+v", res)
		}
	})
	t.Run("DeleteOnlyOnEvidence", func(t *testing.T) {
		r, ctl := newRemote(t)
		loser, ok := ctl.(Loser)
		if !ok {
			t.Skip("this driver's Control cannot make the remote lose a path without a record")
		}
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "kept.md", "keep me\n")
		a.Round(t)
		loser.Lose(t, "kept.md")
		if res := a.Round(t); !slices.Contains(res.Pushed, "kept.md") || len(res.DeletedLocal) > 0 {
			t.Fatalf("a path lost without a record was not pushed back: %+v", res)
		}
		remoteHas(t, ctl, "kept.md", "keep me\n")
	})
	t.Run("StaleCopyMovedAside", func(t *testing.T) {
		r, ctl := newRemote(t)
		ctl.Write(t, "old.md", []byte("old\n"))
		ctl.Remove(t, "old.md")
		if l, err := r.List(context.Background(), foldersync.Listing{}); err != nil {
			t.Fatal(err)
		} else if ev, err := r.Deleted(context.Background(), []string{"old.md"}); err != nil {
			t.Fatal(err)
		} else if l.Deleted["old.md"].IsZero() && ev["old.md"].IsZero() {
			t.Skip("this remote keeps no dated record of deletions: a copy older than one cannot be told from a new file")
		}
		// A client that never synced holds a copy older than the deletion.
		b := NewClient(t, r, foldersync.Options{})
		b.Write(t, "old.md", "old\n")
		past := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(b.Dir, "old.md"), past, past); err != nil {
			t.Fatal(err)
		}
		res := b.Round(t)
		if len(res.Pushed) > 0 {
			t.Fatalf("a stale copy was pushed back: %+v", res)
		}
		if len(res.Conflicts) != 1 || !res.Conflicts[0].Stale {
			t.Fatalf("the stale copy was not moved aside: %+v", res)
		}
		if _, ok := ctl.Read(t, "old.md"); ok {
			t.Fatalf("the remote holds the deleted path again")
		}
		// A copy written after the deletion is an edit: it is pushed.
		b.Write(t, "old.md", "new after the deletion\n")
		if res := b.Round(t); !slices.Contains(res.Pushed, "old.md") {
			t.Fatalf("a newer copy was not pushed: %+v", res)
		}
	})
	t.Run("MassDeleteHold", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		for i := range 60 {
			a.Write(t, fmt.Sprintf("m%02d.md", i), fmt.Sprintf("memory %d\n", i))
		}
		a.Round(t)
		// The remote side: 55 local deletions are held.
		for i := range 55 {
			a.Remove(t, fmt.Sprintf("m%02d.md", i))
		}
		res := a.Round(t)
		if len(res.Held) != 1 || res.Held[0].Side != "remote" || len(res.Held[0].Paths) != 55 || res.Held[0].Threshold != 50 {
			t.Fatalf("held %+v", res.Held)
		}
		if len(res.DeletedRemote) != 0 {
			t.Fatalf("deleted on the remote despite the hold: %v", res.DeletedRemote)
		}
		remoteHas(t, ctl, "m00.md", "memory 0\n")
		// Held again next round.
		if res := a.Round(t); len(res.Held) != 1 {
			t.Fatalf("the hold did not stand: %+v", res)
		}
		// The local side: another client holding all 60 sees 55 remote
		// deletions held.
		b := NewClient(t, r, foldersync.Options{})
		b.Round(t)
		allow := NewClient(t, r, foldersync.Options{AllowMassDelete: true})
		allow.Dir = a.Dir
		e, err := foldersync.New(mustDir(t, a.Dir), a.Dir, r, foldersync.Options{AllowMassDelete: true})
		if err != nil {
			t.Fatal(err)
		}
		allow.Engine = e
		if res := allow.Round(t); len(res.DeletedRemote) != 55 {
			t.Fatalf("an allowed round deleted %d", len(res.DeletedRemote))
		}
		res = b.Round(t)
		if len(res.Held) != 1 || res.Held[0].Side != "local" || len(res.DeletedLocal) != 0 {
			t.Fatalf("b's local deletions were not held: %+v", res)
		}
		if _, ok := b.Read(t, "m00.md"); !ok {
			t.Fatalf("b lost a file despite the hold")
		}
	})
	t.Run("DeleteModes", func(t *testing.T) {
		r, ctl := newRemote(t)
		now := time.Now()
		clock := func() time.Time { return now }
		a := NewClient(t, r, foldersync.Options{DeleteMode: foldersync.DeleteCorroborate, Now: clock})
		a.Write(t, "d.md", "d\n")
		a.Round(t)
		a.Remove(t, "d.md")
		if res := a.Round(t); !slices.Contains(res.Pending, "d.md") || len(res.DeletedRemote) > 0 {
			t.Fatalf("first miss: %+v", res)
		}
		now = now.Add(10 * time.Second)
		if res := a.Round(t); !slices.Contains(res.Pending, "d.md") {
			t.Fatalf("second miss, too soon: %+v", res)
		}
		now = now.Add(foldersync.CorroborateAge)
		if res := a.Round(t); !slices.Contains(res.DeletedRemote, "d.md") {
			t.Fatalf("corroborated miss: %+v", res)
		}
		n := NewClient(t, r, foldersync.Options{DeleteMode: foldersync.DeleteNever})
		n.Write(t, "n.md", "n\n")
		n.Round(t)
		n.Remove(t, "n.md")
		n.Round(t)
		remoteHas(t, ctl, "n.md", "n\n")
		k := NewClient(t, r, foldersync.Options{KeepDeleted: true})
		k.Round(t)
		k.Remove(t, "n.md")
		if res := k.Round(t); !slices.Contains(res.Pulled, "n.md") {
			t.Fatalf("KeepDeleted did not bring the file back: %+v", res)
		}
		ctl.Remove(t, "n.md")
		k.Round(t)
		if got, ok := k.Read(t, "n.md"); !ok || got != "n\n" {
			t.Fatalf("KeepDeleted let a remote deletion through")
		}
	})
	t.Run("IdentityByEvidence", func(t *testing.T) {
		// A memory deleted and made again is a delete and a create, never
		// a replaced store.
		r, ctl := newRemote(t)
		a, b := NewClient(t, r, foldersync.Options{}), NewClient(t, r, foldersync.Options{})
		a.Write(t, "x.md", "x1\n")
		a.Write(t, "y.md", "y1\n")
		a.Round(t)
		b.Round(t)
		ctl.Remove(t, "y.md")
		ctl.Remove(t, "x.md")
		ctl.Write(t, "x.md", []byte("x2, made again\n"))
		res := b.Round(t)
		if res.BasisReset {
			t.Fatalf("a delete and a create were taken for a replaced store")
		}
		if !slices.Contains(res.DeletedLocal, "y.md") || !slices.Contains(res.Pulled, "x.md") || len(res.Pushed) > 0 {
			t.Fatalf("b's round: %+v", res)
		}
		if _, ok := ctl.Read(t, "y.md"); ok {
			t.Fatalf("y.md was pushed back")
		}
		remoteHas(t, ctl, "x.md", "x2, made again\n")
	})
	t.Run("RestoredRemote", func(t *testing.T) {
		r, ctl := newRemote(t)
		rs, ok := ctl.(Restorer)
		if !ok {
			t.Skip("this driver's Control cannot restore the remote from a backup")
		}
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "r.md", "r1\n")
		a.Write(t, "s.md", "s1\n")
		a.Round(t)
		restore := rs.Backup(t)
		a.Write(t, "r.md", "r2\n")
		a.Write(t, "t.md", "t1\n")
		a.Round(t)
		restore()
		ctl.Write(t, "s.md", []byte("s from the backup's world\n"))
		res := a.Round(t)
		if !res.BasisReset {
			t.Fatalf("a restored remote was not detected: %+v", res)
		}
		if len(res.DeletedLocal)+len(res.DeletedRemote) > 0 {
			t.Fatalf("a restored remote deleted: %+v", res)
		}
		remoteHas(t, ctl, "r.md", "r2\n")
		remoteHas(t, ctl, "t.md", "t1\n")
		kept := false
		for _, c := range res.Conflicts {
			if c.Path == "s.md" && c.LocalKept {
				if raw, _ := os.ReadFile(c.SavedAs); string(raw) == "s from the backup's world\n" {
					kept = true
				}
			}
		}
		if !kept {
			t.Fatalf("the remote's copy was not kept aside: %+v", res.Conflicts)
		}
		if res := a.Round(t); res.BasisReset || res.Changed() {
			t.Fatalf("the round after a reset: %+v", res)
		}
	})
	t.Run("ReplacedRemote", func(t *testing.T) {
		r, ctl := newRemote(t)
		rp, ok := ctl.(Replacer)
		if !ok {
			t.Skip("this driver's Control cannot replace the store")
		}
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "p.md", "p\n")
		a.Round(t)
		rp.Replace(t, map[string][]byte{"q.md": []byte("q\n")})
		res := a.Round(t)
		if !res.BasisReset || len(res.DeletedLocal)+len(res.DeletedRemote) > 0 || !slices.Contains(res.Pushed, "p.md") || !slices.Contains(res.Pulled, "q.md") {
			t.Fatalf("a replaced store: %+v", res)
		}
	})
	t.Run("OneBadFileNeverBlocks", func(t *testing.T) {
		r, ctl := newRemote(t)
		a, b := NewClient(t, r, foldersync.Options{}), NewClient(t, r, foldersync.Options{})
		a.Write(t, "latin1.md", "caf\xe9\n")
		a.Write(t, "nul.md", "a\x00b\n")
		a.Write(t, "cafe\u0301.md", "nfd name\n")
		a.Write(t, "good.md", "good\n")
		res := a.Round(t)
		for _, p := range []string{"latin1.md", "nul.md", "cafe\u0301.md"} {
			if skipped(res, p) == "" {
				t.Errorf("%q was not skipped: %+v", p, res)
			}
		}
		if !slices.Contains(res.Pushed, "good.md") || len(res.Pushed) != 1 {
			t.Fatalf("pushed %v", res.Pushed)
		}
		// A path clash: a file here where the remote has a folder.
		ctl.Write(t, "x.md/y.md", []byte("below\n"))
		b.Write(t, "x.md", "a file\n")
		res = b.Round(t)
		if !strings.HasPrefix(skipped(res, "x.md/y.md"), foldersync.SkipPathClash) || !slices.Contains(res.Pulled, "good.md") {
			t.Fatalf("the clash: %+v", res)
		}
		if got, _ := b.Read(t, "x.md"); got != "a file\n" {
			t.Fatalf("the author's file changed: %q", got)
		}
		// The refused file is never overwritten by the remote's version.
		ctl.Write(t, "latin1.md", []byte("someone else's\n"))
		res = a.Round(t)
		if got, _ := a.Read(t, "latin1.md"); got != "caf\xe9\n" {
			t.Fatalf("a refused file was overwritten: %q", got)
		}
	})
	t.Run("MismatchLooksAgain", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "race.md", "base\n")
		a.Round(t)
		a.Write(t, "race.md", "mine\n")
		racing := &racingRemote{Remote: r, before: func() { ctl.Write(t, "race.md", []byte("theirs\n")) }}
		e, err := foldersync.New(mustDir(t, a.Dir), a.Dir, racing, foldersync.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Round(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// The push met the teammate's write: the round looked again and
		// found both sides changed.
		if len(res.Conflicts) != 1 || slices.Contains(res.Pushed, "race.md") {
			t.Fatalf("after a mismatch: %+v", res)
		}
		remoteHas(t, ctl, "race.md", "theirs\n")
		if got, _ := a.Read(t, "race.md"); got != "theirs\n" {
			t.Fatalf("the file holds %q", got)
		}
		if saved, _ := os.ReadFile(res.Conflicts[0].SavedAs); string(saved) != "mine\n" {
			t.Fatalf("the local side was not kept: %q", saved)
		}
	})
	t.Run("CutRoundLosesNothing", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		for i := range 250 {
			a.Write(t, fmt.Sprintf("f%03d.md", i), fmt.Sprintf("file %d\n", i))
		}
		// Cut the push after 130 changes.
		cut := &cutRemote{Remote: r, applyLeft: 130, getLeft: 1 << 30}
		ca, err := foldersync.New(mustDir(t, a.Dir), a.Dir, cut, foldersync.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ca.Round(context.Background()); !errors.Is(err, errCut) {
			t.Fatalf("the cut round: %v", err)
		}
		res := a.Round(t)
		if len(res.Pushed) != 120 || len(res.Conflicts) > 0 {
			t.Fatalf("the next round pushed %d (want 120) with %d conflicts", len(res.Pushed), len(res.Conflicts))
		}
		// Cut a pull after its first batch.
		b := NewClient(t, r, foldersync.Options{})
		cb, err := foldersync.New(mustDir(t, b.Dir), b.Dir, &cutRemote{Remote: r, applyLeft: 1 << 30, getLeft: 1}, foldersync.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cb.Round(context.Background()); !errors.Is(err, errCut) {
			t.Fatalf("the cut pull: %v", err)
		}
		res = b.Round(t)
		if len(res.Pulled) != 150 || len(res.Conflicts) > 0 || len(res.Pushed) > 0 {
			t.Fatalf("after the cut pull: pulled %d (want 150), %d conflicts, pushed %v", len(res.Pulled), len(res.Conflicts), res.Pushed)
		}
		for i := range 250 {
			p := fmt.Sprintf("f%03d.md", i)
			if got, _ := b.Read(t, p); got != fmt.Sprintf("file %d\n", i) {
				t.Fatalf("%s holds %q", p, got)
			}
			remoteHas(t, ctl, p, fmt.Sprintf("file %d\n", i))
		}
		if res := b.Round(t); !res.Unchanged {
			t.Fatalf("a round after convergence: %+v", res)
		}
	})
	t.Run("LostReplyKeepsNewestEdit", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "f.md", "v1\n")
		a.Write(t, "gone.md", "v1\n")
		a.Round(t)
		// The push lands, its reply is lost.
		a.Write(t, "f.md", "v2\n")
		a.Write(t, "gone.md", "v2\n")
		lost, err := foldersync.New(mustDir(t, a.Dir), a.Dir, lostReply{r}, foldersync.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lost.Round(context.Background()); !errors.Is(err, errLostReply) {
			t.Fatalf("the round whose reply was lost: %v", err)
		}
		remoteHas(t, ctl, "f.md", "v2\n")
		// The user edits one file again and deletes the other.
		a.Write(t, "f.md", "v3\n")
		a.Remove(t, "gone.md")
		res := a.Round(t)
		if len(res.Conflicts) > 0 || !slices.Contains(res.Pushed, "f.md") || !slices.Contains(res.DeletedRemote, "gone.md") {
			t.Fatalf("after a lost reply: %+v", res)
		}
		if got, _ := a.Read(t, "f.md"); got != "v3\n" {
			t.Fatalf("the newest edit was put aside: the file holds %q", got)
		}
		remoteHas(t, ctl, "f.md", "v3\n")
		if _, ok := ctl.Read(t, "gone.md"); ok {
			t.Fatalf("the deletion was undone")
		}
		if _, ok := a.Read(t, "gone.md"); ok {
			t.Fatalf("the deleted file came back")
		}
	})
	t.Run("KilledPullKnowsItsOwn", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "f.md", "v1\n")
		a.Round(t)
		ctl.Write(t, "f.md", []byte("v2 teammate\n"))
		basis := filepath.Join(a.Dir, foldersync.DefaultBasisName)
		kill := &killAfterWrite{basis: basis}
		killed, err := foldersync.New(mustDir(t, a.Dir), a.Dir, r, foldersync.Options{History: kill})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := killed.Round(context.Background()); err != nil || !slices.Contains(res.Pulled, "f.md") {
			t.Fatalf("the pull: %+v %v", res, err)
		}
		if kill.kept == nil {
			t.Fatal("the pull wrote nothing through the gate")
		}
		if err := os.WriteFile(basis, kill.kept, 0o644); err != nil {
			t.Fatal(err)
		}
		// The teammate edits again: the file here is the teammate's
		// previous version, not an edit of the user's.
		ctl.Write(t, "f.md", []byte("v3 teammate\n"))
		res := a.Round(t)
		if len(res.Conflicts) > 0 || !slices.Contains(res.Pulled, "f.md") {
			t.Fatalf("a pull the killed run did not record: %+v", res)
		}
		if got, _ := a.Read(t, "f.md"); got != "v3 teammate\n" {
			t.Fatalf("the file holds %q", got)
		}
	})
	t.Run("NoBasisKeepsTheLocalFile", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		for _, p := range []string{"a.md", "b.md", "c.md"} {
			a.Write(t, p, "v1\n")
		}
		a.Round(t)
		// Pending edits, then the basis is lost.
		for _, p := range []string{"a.md", "b.md", "c.md"} {
			a.Write(t, p, "v2 mine\n")
		}
		for _, name := range []string{foldersync.DefaultBasisName, foldersync.DefaultBasisName + ".prev"} {
			if err := os.Remove(filepath.Join(a.Dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		res := a.Round(t)
		for _, p := range []string{"a.md", "b.md", "c.md"} {
			if got, _ := a.Read(t, p); got != "v2 mine\n" {
				t.Fatalf("%s holds %q after a lost basis: %+v", p, got, res)
			}
		}
		for _, c := range res.Conflicts {
			if !c.LocalKept {
				t.Fatalf("a local file was put aside: %+v", c)
			}
		}
		// Not known to be newer (written within a minute of the remote's
		// copy): left in place until edited again, then sent.
		for _, p := range []string{"a.md", "b.md", "c.md"} {
			if !slices.Contains(res.Pushed, p) {
				a.Write(t, p, "v3 mine\n")
			}
		}
		a.Round(t)
		for _, p := range []string{"a.md", "b.md", "c.md"} {
			got, _ := a.Read(t, p)
			remoteHas(t, ctl, p, got)
		}
		// A folder that already holds an older copy than the remote's:
		// the copy stays, the remote's goes aside, nothing is pushed.
		b := NewClient(t, r, foldersync.Options{})
		b.Write(t, "a.md", "an old copy\n")
		past := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(b.Dir, "a.md"), past, past); err != nil {
			t.Fatal(err)
		}
		res = b.Round(t)
		if got, _ := b.Read(t, "a.md"); got != "an old copy\n" {
			t.Fatalf("the local copy was replaced: %q", got)
		}
		if slices.Contains(res.Pushed, "a.md") && len(res.Conflicts) == 0 {
			t.Fatalf("pushed without keeping the remote's copy: %+v", res)
		}
		if !slices.Contains(res.Pushed, "a.md") {
			// The remote said its copy is newer: kept aside once, and
			// the next round neither copies it again nor pushes.
			if len(res.Conflicts) != 1 || !res.Conflicts[0].LocalKept {
				t.Fatalf("the remote's newer copy was not kept aside: %+v", res)
			}
			if again := b.Round(t); len(again.Conflicts) > 0 || len(again.Pushed) > 0 || skipped(again, "a.md") != foldersync.SkipDiverged {
				t.Fatalf("the round after: %+v", again)
			}
			before, _ := ctl.Read(t, "a.md")
			remoteHas(t, ctl, "a.md", string(before))
			// An edit sends it.
			b.Write(t, "a.md", "edited after\n")
			if res := b.Round(t); !slices.Contains(res.Pushed, "a.md") || len(res.Conflicts) > 0 {
				t.Fatalf("the edit after a divergence: %+v", res)
			}
			remoteHas(t, ctl, "a.md", "edited after\n")
		}
	})
	t.Run("DamagedBasisRebuilt", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := NewClient(t, r, foldersync.Options{})
		a.Write(t, "kept.md", "kept\n")
		a.Write(t, "edited.md", "v1\n")
		a.Write(t, "deleted-there.md", "v1\n")
		a.Round(t)
		a.Write(t, "edited.md", "v2 mine\n")
		ctl.Remove(t, "deleted-there.md")
		basis := filepath.Join(a.Dir, foldersync.DefaultBasisName)
		tear := func(path string) []byte {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			raw = raw[:len(raw)/2]
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			return raw
		}
		// The basis is torn: the save before it takes its place.
		torn := tear(basis)
		res := a.Round(t)
		if res.BasisDamaged == nil || !res.BasisDamaged.FromPrevious || !slices.Contains(res.Pushed, "edited.md") || len(res.Conflicts) > 0 || len(res.DeletedRemote) > 0 {
			t.Fatalf("a round on a torn basis: %+v", res)
		}
		if got, _ := a.Read(t, "edited.md"); got != "v2 mine\n" {
			t.Fatalf("the pending edit was displaced: %q", got)
		}
		remoteHas(t, ctl, "edited.md", "v2 mine\n")
		if kept, err := os.ReadFile(basis + ".damaged"); err != nil || !bytes.Equal(kept, torn) {
			t.Fatalf("the damaged basis was not kept aside: %v", err)
		}
		if res := a.Round(t); res.BasisDamaged != nil || len(res.Conflicts) > 0 || len(res.Pushed)+len(res.Pulled) > 0 {
			t.Fatalf("the round after the rebuild: %+v", res)
		}
		// Both torn: rebuilt from both sides; nothing deleted, the local
		// file stays where it is.
		a.Write(t, "edited.md", "v3 mine\n")
		ctl.Remove(t, "kept.md")
		tear(basis)
		tear(basis + ".prev")
		res = a.Round(t)
		if res.BasisDamaged == nil || res.BasisDamaged.FromPrevious || len(res.DeletedRemote) > 0 {
			t.Fatalf("a round on a basis torn twice: %+v", res)
		}
		for _, p := range res.DeletedLocal {
			// Only a copy older than the remote's deletion, moved aside.
			if !slices.ContainsFunc(res.Conflicts, func(c foldersync.Conflict) bool { return c.Path == p && c.Stale }) {
				t.Fatalf("a round on a basis torn twice deleted %s: %+v", p, res)
			}
		}
		for _, c := range res.Conflicts {
			if !c.LocalKept && !c.Stale {
				t.Fatalf("a local file was replaced: %+v", c)
			}
		}
		if got, _ := a.Read(t, "edited.md"); got != "v3 mine\n" {
			t.Fatalf("the pending edit was displaced: %q", got)
		}
		// A basis of a newer version is not this one's to rebuild.
		if err := os.WriteFile(basis, []byte(`{"v":99,"entries":{}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		var be *foldersync.BasisError
		if _, err := a.Engine.Round(context.Background()); !errors.As(err, &be) {
			t.Fatalf("a newer basis: %v", err)
		}
	})
	t.Run("BytesExactOrRefused", func(t *testing.T) {
		r, ctl := newRemote(t)
		a, b := NewClient(t, r, foldersync.Options{}), NewClient(t, r, foldersync.Options{})
		rng := rand.New(rand.NewPCG(35, 1))
		want := map[string]string{}
		for i := range 60 {
			p := randomName(rng, i)
			c := randomContent(rng)
			a.Write(t, p, c)
			want[p] = c
		}
		res := a.Round(t)
		b.Round(t)
		for p, c := range want {
			got, _ := a.Read(t, p)
			if got != c {
				t.Fatalf("the author's file %q changed", p)
			}
			on, ok := ctl.Read(t, p)
			theirs, got2 := b.Read(t, p)
			switch {
			case skipped(res, p) != "":
				if ok || got2 {
					t.Fatalf("%q was skipped but reached the remote or a teammate", p)
				}
			case !ok || string(on) != c || !got2 || theirs != c:
				t.Fatalf("%q: the remote holds %q, the teammate %q, want %q", p, on, theirs, c)
			}
		}
	})
}

func mustDir(t testing.TB, dir string) *memdir.Dir {
	t.Helper()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func randomName(rng *rand.Rand, i int) string {
	parts := []string{"plain", "with space", "ünï", "日本", "cafe\u0301", "a\x1bb", "deep/er"}
	return fmt.Sprintf("%s-%d.md", parts[rng.IntN(len(parts))], i)
}

func randomContent(rng *rand.Rand) string {
	n := rng.IntN(200)
	var buf bytes.Buffer
	switch rng.IntN(3) {
	case 0: // any bytes
		for range n {
			buf.WriteByte(byte(rng.IntN(256)))
		}
	case 1: // text with odd characters
		runes := []rune("abc \n\r\t—☃é日\u200b\ufeff\x00")
		for range n {
			buf.WriteRune(runes[rng.IntN(len(runes))])
		}
	default:
		for range n {
			buf.WriteByte(byte('a' + rng.IntN(26)))
		}
	}
	return buf.String()
}

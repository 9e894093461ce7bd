// Package remotetest is the conformance kit of foldersync drivers: Run
// checks that a Remote keeps the contract (conditional writes and
// deletions, evidence of deletion, identity and generation, exact bytes,
// Check), and RunEngine runs the engine's own tests (decisions, holds,
// identity, restore, stale copies, conflicts, a round cut short, exact
// bytes) through the driver, so every rule is tested once, in the engine,
// through every driver.
package remotetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// Control acts on the remote from outside the driver under test, as
// another client or an operator would.
type Control interface {
	// Write puts content at path: a new version, or a new memory.
	Write(t testing.TB, path string, content []byte)
	// Remove deletes path, leaving the remote's record of the deletion.
	Remove(t testing.TB, path string)
	// Read returns path's content as the remote holds it.
	Read(t testing.TB, path string) ([]byte, bool)
}

// Restorer is a Control that can put the remote back to an earlier state
// (restored from a backup, its generation going back with it).
type Restorer interface {
	// Backup copies the remote's state and returns the function that
	// restores it.
	Backup(t testing.TB) (restore func())
}

// Replacer is a Control that can put another store (another identity)
// in the remote's place, holding files.
type Replacer interface {
	Replace(t testing.TB, files map[string][]byte)
}

// Loser is a Control that can drop a path without any record of its
// deletion (a remote that lost it).
type Loser interface {
	Lose(t testing.TB, path string)
}

// Factory returns a fresh, empty remote and its Control.
type Factory func(t *testing.T) (foldersync.Remote, Control)

func list(t *testing.T, r foldersync.Remote) foldersync.Listing {
	t.Helper()
	l, err := r.List(context.Background(), foldersync.Listing{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if l.Unchanged {
		t.Fatalf("List with no previous listing answered Unchanged")
	}
	return l
}

func apply(t *testing.T, r foldersync.Remote, c ...foldersync.Change) map[string]foldersync.Outcome {
	t.Helper()
	outs, err := r.Apply(context.Background(), c)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	m := map[string]foldersync.Outcome{}
	for _, o := range outs {
		m[o.Path] = o
	}
	if len(m) != len(c) {
		t.Fatalf("Apply of %d changes answered %d outcomes: %+v", len(c), len(m), outs)
	}
	return m
}

func get(t *testing.T, r foldersync.Remote, paths ...string) map[string][]byte {
	t.Helper()
	m, err := r.Get(context.Background(), paths)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return m
}

// deletedEvidence reports whether the remote has evidence p was deleted,
// in the listing, through Deleted, or by a listing the remote vouches for
// (Listing.DeletesByAbsence: then any path it lacks counts).
func deletedEvidence(t *testing.T, r foldersync.Remote, l foldersync.Listing, p string) bool {
	t.Helper()
	if !l.Deleted[p].IsZero() {
		return true
	}
	if _, listed := l.Entries[p]; !listed && l.DeletesByAbsence && l.Store != "" && l.Generation > 0 {
		return true
	}
	ev, err := r.Deleted(context.Background(), []string{p})
	if err != nil {
		t.Fatalf("Deleted: %v", err)
	}
	return !ev[p].IsZero()
}

// Run checks the Remote contract on fresh remotes from newRemote.
func Run(t *testing.T, newRemote Factory) {
	t.Run("CreateGetExact", func(t *testing.T) {
		r, _ := newRemote(t)
		if l := list(t, r); len(l.Entries) != 0 {
			t.Fatalf("a fresh remote lists %d entries", len(l.Entries))
		}
		files := map[string][]byte{
			"a.md":                  []byte("# a\n\nplain\n"),
			"with space.md":         []byte("spaces in the name\r\nand CRLF\r\n"),
			"ünïcödé/日本語.md":        []byte("unicode: héllo — ☃\n"),
			"deep/er/still/file.md": []byte("nested\n"),
			"empty.md":              {},
		}
		var cs []foldersync.Change
		for p, c := range files {
			cs = append(cs, foldersync.Change{Path: p, Content: c})
		}
		outs := apply(t, r, cs...)
		for p, c := range files {
			o := outs[p]
			if o.Status != foldersync.Applied {
				t.Fatalf("create %q: %v %s", p, o.Status, o.Reason)
			}
			if o.Entry.Sum != "" && o.Entry.Sum != foldersync.Sum(c) {
				t.Errorf("create %q: outcome sum %s, want %s", p, o.Entry.Sum, foldersync.Sum(c))
			}
		}
		l := list(t, r)
		if len(l.Entries) != len(files) {
			t.Fatalf("listing has %d entries, want %d: %v", len(l.Entries), len(files), l.Entries)
		}
		var paths []string
		for p, c := range files {
			if l.Entries[p].Sum != foldersync.Sum(c) {
				t.Errorf("listing of %q: sum %q, want %q", p, l.Entries[p].Sum, foldersync.Sum(c))
			}
			paths = append(paths, p)
		}
		got := get(t, r, append(paths, "absent.md")...)
		for p, c := range files {
			if !bytes.Equal(got[p], c) {
				t.Errorf("Get %q = %q, want %q", p, got[p], c)
			}
		}
		if _, ok := got["absent.md"]; ok {
			t.Errorf("Get of an absent path answered it")
		}
	})
	t.Run("ConditionalWrites", func(t *testing.T) {
		r, ctl := newRemote(t)
		o := apply(t, r, foldersync.Change{Path: "x.md", Content: []byte("one\n")})["x.md"]
		if o.Status != foldersync.Applied {
			t.Fatalf("create: %v %s", o.Status, o.Reason)
		}
		first := list(t, r).Entries["x.md"]
		// Creating over an existing path is a mismatch.
		if o := apply(t, r, foldersync.Change{Path: "x.md", Content: []byte("other\n")})["x.md"]; o.Status != foldersync.Mismatch {
			t.Fatalf("create over an existing path: %v, want Mismatch", o.Status)
		}
		// An update expecting what the remote holds applies.
		if o := apply(t, r, foldersync.Change{Path: "x.md", Content: []byte("two\n"), Expect: first})["x.md"]; o.Status != foldersync.Applied {
			t.Fatalf("update: %v %s", o.Status, o.Reason)
		}
		// An update expecting the older version is a mismatch, and
		// changes nothing.
		if o := apply(t, r, foldersync.Change{Path: "x.md", Content: []byte("three\n"), Expect: first})["x.md"]; o.Status != foldersync.Mismatch {
			t.Fatalf("update on a stale expectation: %v, want Mismatch", o.Status)
		}
		if c, _ := ctl.Read(t, "x.md"); string(c) != "two\n" {
			t.Fatalf("after a mismatch the remote holds %q", c)
		}
		// Another client's write is seen, and makes the expectation stale.
		second := list(t, r).Entries["x.md"]
		ctl.Write(t, "x.md", []byte("theirs\n"))
		if o := apply(t, r, foldersync.Change{Path: "x.md", Delete: true, Expect: second})["x.md"]; o.Status != foldersync.Mismatch {
			t.Fatalf("delete on a stale expectation: %v, want Mismatch", o.Status)
		}
		third := list(t, r).Entries["x.md"]
		if third.Sum != foldersync.Sum([]byte("theirs\n")) {
			t.Fatalf("listing after another client's write: %+v", third)
		}
		if o := apply(t, r, foldersync.Change{Path: "x.md", Delete: true, Expect: third})["x.md"]; o.Status != foldersync.Applied {
			t.Fatalf("delete: %v %s", o.Status, o.Reason)
		}
		l := list(t, r)
		if _, ok := l.Entries["x.md"]; ok {
			t.Fatalf("a deleted path is still listed")
		}
		if !deletedEvidence(t, r, l, "x.md") {
			t.Fatalf("the remote has no evidence of a deletion it carried out")
		}
		if !l.DeletesByAbsence && deletedEvidence(t, r, l, "never.md") {
			t.Fatalf("the remote claims evidence of deleting a path it never held")
		}
	})
	t.Run("DeletedByAnother", func(t *testing.T) {
		r, ctl := newRemote(t)
		ctl.Write(t, "gone.md", []byte("soon gone\n"))
		ctl.Remove(t, "gone.md")
		l := list(t, r)
		if _, ok := l.Entries["gone.md"]; ok {
			t.Fatalf("a removed path is listed")
		}
		if !deletedEvidence(t, r, l, "gone.md") {
			t.Fatalf("no evidence of another client's deletion")
		}
		// Made again, it is a create: no evidence of deletion stands.
		ctl.Write(t, "gone.md", []byte("back\n"))
		l = list(t, r)
		if l.Entries["gone.md"].Sum != foldersync.Sum([]byte("back\n")) {
			t.Fatalf("a path made again is not listed: %+v", l.Entries)
		}
	})
	t.Run("IdentityAndGeneration", func(t *testing.T) {
		r, ctl := newRemote(t)
		a := list(t, r)
		ctl.Write(t, "g.md", []byte("g\n"))
		b := list(t, r)
		if a.Store != b.Store {
			t.Fatalf("the store's identity changed with a write: %q then %q", a.Store, b.Store)
		}
		if b.Generation < a.Generation || (a.Generation > 0 && b.Generation == a.Generation) {
			t.Fatalf("the generation did not move forward with a write: %d then %d", a.Generation, b.Generation)
		}
		// A listing against the previous one is either Unchanged or the
		// same entries.
		c, err := r.List(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Unchanged && len(c.Entries) != len(b.Entries) {
			t.Fatalf("an unchanged remote listed %d entries, before %d", len(c.Entries), len(b.Entries))
		}
		ctl.Write(t, "g.md", []byte("g2\n"))
		d, err := r.List(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if d.Unchanged || d.Entries["g.md"].Sum != foldersync.Sum([]byte("g2\n")) {
			t.Fatalf("a changed remote answered Unchanged or an old entry: %+v", d)
		}
	})
	t.Run("CheckRefuses", func(t *testing.T) {
		r, _ := newRemote(t)
		for _, c := range []struct {
			name    string
			path    string
			content []byte
		}{
			{"latin1", "l.md", []byte("caf\xe9\n")},
			{"surrogate", "s.md", []byte("\xed\xa0\x80\n")},
			{"binary", "b.md", []byte{0xff, 0xfe, 0x00, 0x01}},
			{"nul", "n.md", []byte("a\x00b\n")},
			{"control-name", "a\x1b]0;T\x07.md", []byte("x\n")},
			{"nfd-name", "cafe\u0301.md", []byte("x\n")},
		} {
			if r.Check(c.path, c.content) == "" {
				t.Errorf("%s: Check accepted what the protocol cannot carry exactly", c.name)
			}
		}
		for _, p := range []string{"ok.md", "with space.md", "ünï/日本.md"} {
			if reason := r.Check(p, []byte("fine — ☃\n")); reason != "" {
				t.Errorf("Check refused %q: %s", p, reason)
			}
		}
	})
}

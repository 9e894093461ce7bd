package foldersync_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
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

package foldersync_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/internal/memremote"
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

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestConflictOnALongNameKeepsBothVersions edits one memory whose name
// is 250 bytes (within the 255 a filesystem allows) on two sides, on both
// protocols: the round that finds the conflict exits 7, the file holds
// the server's version and the other one is kept aside (findable by its
// content), so neither edit is lost; the other files of the round sync.
// The copy's name is shortened to what a filesystem holds (it was
// <name>.<time>.md, over the limit: team sync never settled the conflict
// and store sync aborted the whole round).
func TestConflictOnALongNameKeepsBothVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, token := syncTokens(t, dir)
	url, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens, "--rate", "-1")
	createStore(t, url, token, "long-store")
	name := strings.Repeat("n", 247) + ".md"
	for _, proto := range []struct {
		name, stores, folder string
		round                []string
	}{
		{"team", "", "", []string{"team", "sync", "--server", url}},
		{"store", `[{"path":"/v1/code/memory/long-store","mount":"proj"}]`, "proj", []string{"store", "sync", "--server", url}},
	} {
		t.Run(proto.name, func(t *testing.T) {
			root := t.TempDir()
			ana, ben := newPerson(t, root, "ana", token, proto.stores), newPerson(t, root, "ben", token, proto.stores)
			anaDir, benDir := filepath.Join(ana.team, proto.folder), filepath.Join(ben.team, proto.folder)
			ana.ok(proto.round...)
			ben.ok(proto.round...)
			writeRaw(t, anaDir, name, []byte("first\n"))
			ana.ok(proto.round...)
			ben.ok(proto.round...)
			writeRaw(t, anaDir, name, []byte("ana's edit\n"))
			writeRaw(t, benDir, name, []byte("ben's edit\n"))
			writeRaw(t, anaDir, "other.md", []byte("another memory\n"))
			ana.ok(proto.round...)
			out, code := ben.run(proto.round...)
			t.Logf("ben: exit %d\n%s", code, out)
			assert.Equal(t, exitConflict, code, out)
			assert.Equal(t, "ana's edit\n", memoryFiles(t, benDir)[name], "the server's version takes the file")
			assert.Equal(t, "another memory\n", memoryFiles(t, benDir)["other.md"], "the rest of the round goes on")
			kept := false
			_ = filepath.WalkDir(ben.team, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if data, _ := os.ReadFile(p); string(data) == "ben's edit\n" {
						kept = true
					}
				}
				return nil
			})
			_ = filepath.WalkDir(filepath.Dir(filepath.Clean(ben.team)), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && strings.Contains(p, "conflicts") {
					if data, _ := os.ReadFile(p); string(data) == "ben's edit\n" {
						kept = true
					}
				}
				return nil
			})
			assert.True(t, kept, "Ben's edit is kept aside somewhere:\n%s", out)
		})
	}
}

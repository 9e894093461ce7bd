package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKilledPullThenTeammateEditsIsNoConflict runs, on both protocols
// through the built binary and server, a pull of 300 memories SIGKILLed
// part way (files written, not all of them recorded), then a teammate's
// new edit of every one: the next sync takes the teammate's versions and
// reports no conflict (the killed run's files were the teammate's
// earlier versions, never the user's edits).
func TestKilledPullThenTeammateEditsIsNoConflict(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := fixedServer(t, root)
	stores := storeMount(t, url, token, "pull-store")
	const files = 300
	for _, pr := range bothProtocols(url) {
		t.Run(pr.name, func(t *testing.T) {
			base := t.TempDir()
			ana := newPerson(t, base, "ana", token, stores)
			ben := newPerson(t, base, "ben", token, stores)
			ana.ok(pr.round...)
			ben.ok(pr.round...)
			for i := range files {
				writeRaw(t, ben.team, fmt.Sprintf("%sk%03d.md", pr.dir, i), []byte(fmt.Sprintf("ben's memory %d, v1\n%s", i, killContent(i, 1, "ben", 4000))))
			}
			ben.ok(pr.round...)
			folder := filepath.Join(ana.team, pr.dir)
			mid := killMidway(t, ana.project, ana.env, func() bool { return countFiles(folder) > files/2 }, pr.round...)
			t.Logf("%s: the pull was killed mid-round: %v (%d of %d files written)", pr.name, mid, countFiles(folder), files)
			for i := range files {
				writeRaw(t, ben.team, fmt.Sprintf("%sk%03d.md", pr.dir, i), []byte(fmt.Sprintf("ben's memory %d, v2\n", i)))
			}
			ben.ok(pr.round...)
			out, code := ana.run(pr.round...)
			require.Equal(t, exitOK, code, out)
			assert.NotContains(t, out, "conflict")
			got := memoryFiles(t, ana.team)
			for i := range files {
				k := fmt.Sprintf("%sk%03d.md", pr.dir, i)
				assert.Equal(t, fmt.Sprintf("ben's memory %d, v2\n", i), got[k], k)
			}
		})
	}
}

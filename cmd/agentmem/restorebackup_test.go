package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerRestoredFromABackupLosesNoClientsMemory runs a project with
// team sync and a store mount against `agentmem team serve` on SQLite:
// the database is copied (server stopped), both teammates write more on
// both protocols, then the old copy is put back and the server started.
// The first teammate's next rounds warn; no round deletes on its word
// and leave every file as it was; after them the server holds again
// everything the teammates had, on both protocols, and a new teammate
// gets it all.
func TestServerRestoredFromABackupLosesNoClientsMemory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srv, url, token := fixedServer(t, root)
	createStore(t, url, token, "team-store")
	const stores = `[{"path":"/v1/code/memory/team-store","mount":"proj"}]`
	ana := newPerson(t, root, "ana", token, stores)
	ben := newPerson(t, root, "ben", token, stores)
	teamRound := []string{"team", "sync", "--server", url}
	storeRound := []string{"store", "sync", "--server", url, "--delete-mode", "immediate"}
	both := func(p *person) {
		t.Helper()
		p.ok(storeRound...)
		p.ok(teamRound...)
	}
	both(ana)
	writeRaw(t, ana.team, "early.md", []byte("team, before the backup\n"))
	writeRaw(t, ana.team, "edited.md", []byte("team, first text\n"))
	writeRaw(t, ana.team, "proj/early.md", []byte("store, before the backup\n"))
	writeRaw(t, ana.team, "proj/edited.md", []byte("store, first text\n"))
	both(ana)
	both(ben)

	// The backup: stop the server, copy its file, start it again.
	srv.stop()
	backup := filepath.Join(root, "backup.db")
	copyFile(t, srv.db, backup)
	srv.start()

	writeRaw(t, ana.team, "late.md", []byte("team, after the backup\n"))
	writeRaw(t, ana.team, "edited.md", []byte("team, second text\n"))
	writeRaw(t, ana.team, "proj/late.md", []byte("store, after the backup\n"))
	writeRaw(t, ana.team, "proj/edited.md", []byte("store, second text\n"))
	writeRaw(t, ben.team, "bens.md", []byte("team, ben's after the backup\n"))
	writeRaw(t, ben.team, "proj/bens.md", []byte("store, ben's after the backup\n"))
	for range 2 {
		both(ana)
		both(ben)
	}
	had := memoryFiles(t, ana.team)
	require.Equal(t, had, memoryFiles(t, ben.team), "both teammates agree before the restore")
	require.Len(t, had, 8)

	// The restore: stop, put the old file back (no write-ahead log of the
	// newer one may stay), start.
	srv.stop()
	copyFile(t, backup, srv.db)
	for _, ext := range []string{"-wal", "-shm"} {
		_ = os.Remove(srv.db + ext)
	}
	srv.start()

	for _, p := range []*person{ben, ana} {
		for _, round := range [][]string{storeRound, teamRound} {
			out, code := p.run(round...)
			assert.Contains(t, []int{exitOK, exitConflict}, code, "%s %v after the restore:\n%s", p.name, round, out)
			if p == ben { // the first to come back; Ana's rounds find the server filled again
				assert.Contains(t, out, "warning", "%s %v says the server went back:\n%s", p.name, round, out)
			}
			assert.NotRegexp(t, `(?m)^(proj: )?(deleted|removed) `, out, "%s %v deleted on the restored server's word", p.name, round)
		}
		assert.Equal(t, had, memoryFiles(t, p.team), "%s's files after the first rounds on the restored server", p.name)
	}
	for range 2 {
		both(ana)
		both(ben)
	}
	for _, p := range []*person{ana, ben} {
		assert.Equal(t, had, memoryFiles(t, p.team), "%s's files", p.name)
	}
	assert.Equal(t, withoutPrefixes(had, "proj"), teamEntries(t, url, token), "the team repo holds what the teammates had")
	assert.Equal(t, under(had, "proj"), storeMemories(t, url, token, "team-store"), "the store holds what the teammates had")
	cy := newPerson(t, root, "cy", token, stores)
	both(cy)
	assert.Equal(t, had, memoryFiles(t, cy.team), "a new teammate gets everything")
}

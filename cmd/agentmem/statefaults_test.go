package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDamagedOrLostStateKeepsPendingEdits runs, on both protocols through
// the built binary and server, a user with pending edits of four memories
// and the deletion of a fifth whose sync state is then torn, lost
// altogether, or (team) reached under another spelling of the server's
// URL. A torn state goes on from the state saved before it, and the
// other URL finds the state of the first: the edits are pushed, the
// deletion carried out, exit 0. A state lost with its previous save
// leaves every edited file as the user left it (the server's copy kept
// aside), never the server's older copy, and deletes nothing; a store
// folder whose agentmem basis is lost goes on from Claude Code's beside
// it.
func TestDamagedOrLostStateKeepsPendingEdits(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := fixedServer(t, root)
	createStore(t, url, token, "state-store")
	const stores = `[{"path":"/v1/code/memory/state-store","mount":"proj"}]`
	other := strings.Replace(url, "127.0.0.1", "localhost", 1)
	type proto struct {
		name, dir string
		round     func(url string) []string
		state     func(p *person) []string // the state files, and their previous saves
		server    func() map[string]string
	}
	protos := []proto{{
		name:  "team",
		round: func(u string) []string { return []string{"team", "sync", "--server", u} },
		state: func(p *person) []string {
			files, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Clean(p.team)), ".team-sync", "*.json*"))
			return files
		},
		server: func() map[string]string { return teamEntries(t, url, token) },
	}, {
		name: "store", dir: "proj/",
		round: func(u string) []string {
			return []string{"store", "sync", "--server", u, "--delete-mode", "immediate"}
		},
		state: func(p *person) []string {
			files, _ := filepath.Glob(filepath.Join(p.team, "proj", ".agentmem-sync-basis*"))
			return files
		},
		server: func() map[string]string { return storeMemories(t, url, token, "state-store") },
	}}
	for _, pr := range protos {
		t.Run(pr.name, func(t *testing.T) {
			for _, fault := range []string{"torn", "other-url", "lost", "lost-all"} {
				if fault == "other-url" && pr.name == "store" {
					continue // a store folder's basis is kept in the folder, whatever the URL
				}
				if fault == "lost-all" && pr.name == "team" {
					continue // "lost" loses all of the team's
				}
				t.Run(fault, func(t *testing.T) {
					p := newPerson(t, t.TempDir(), "ana", token, stores)
					p.ok(pr.round(url)...) // a store's folder is made by its first sync
					keys := []string{"a.md", "b.md", "c.md", "d.md", "gone.md"}
					for _, k := range keys {
						writeRaw(t, p.team, pr.dir+fault+"-"+k, []byte("v1\n"))
					}
					p.ok(pr.round(url)...)
					p.ok(pr.round(url)...)
					for _, k := range keys[:4] {
						writeRaw(t, p.team, pr.dir+fault+"-"+k, []byte("v2, pending\n"))
					}
					require.NoError(t, os.Remove(filepath.Join(p.team, pr.dir+fault+"-gone.md")))
					use := url
					switch fault {
					case "torn":
						require.NotEmpty(t, pr.state(p))
						for _, f := range pr.state(p) {
							if !strings.HasSuffix(f, ".prev") {
								raw, err := os.ReadFile(f)
								require.NoError(t, err)
								require.NoError(t, os.WriteFile(f, raw[:len(raw)/2], 0o600))
							}
						}
					case "lost", "lost-all":
						require.NotEmpty(t, pr.state(p))
						for _, f := range pr.state(p) {
							require.NoError(t, os.Remove(f))
						}
						if fault == "lost-all" { // Claude Code's basis too
							require.NoError(t, os.Remove(filepath.Join(p.team, "proj", ".memory-sync-basis")))
						}
					case "other-url":
						use = other
					}
					out, code := p.run(pr.round(use)...)
					files := memoryFiles(t, p.team)
					for _, k := range keys[:4] {
						assert.Equal(t, "v2, pending\n", files[pr.dir+fault+"-"+k], "%s: the pending edit stays in place:\n%s", k, out)
					}
					server := pr.server()
					if fault == "lost" && pr.name == "store" {
						// Claude Code's own basis beside it stands in.
					} else if strings.HasPrefix(fault, "lost") {
						assert.Equal(t, exitConflict, code, out)
						assert.NotContains(t, out, "took the server's version")
						assert.NotContains(t, out, "took the store's version")
						assert.Equal(t, "v1\n", server[fault+"-gone.md"], "nothing is deleted without a base")
						return
					}
					assert.Equal(t, exitOK, code, out)
					assert.NotContains(t, out, "conflict")
					for _, k := range keys[:4] {
						assert.Equal(t, "v2, pending\n", server[fault+"-"+k], "%s reached the server", k)
					}
					assert.NotContains(t, server, fault+"-gone.md", "the deletion reached the server")
					assert.NotContains(t, files, pr.dir+fault+"-gone.md", "the deletion stands")
				})
			}
		})
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/storesync"
)

var proposalRe = regexp.MustCompile(`prop_[0-9a-v]+`)

// reviewServer serves a database with three tokens: alice (a person), bot
// (an agent) and carol (made without --kind: an agent too).
func reviewServer(t *testing.T) (url string, tok map[string]string) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	tok = map[string]string{}
	for _, who := range []struct{ name, kind string }{{"alice", "person"}, {"bot", "agent"}, {"carol", ""}} {
		args := []string{"team", "token", "--org", "acme", "--repo", "acme/*", "--store", "*", "--name", who.name, "--add", tokens}
		if who.kind != "" {
			args = append(args, "--kind", who.kind)
		}
		out, errOut, code := runBin(t, nil, args...)
		require.Equal(t, 0, code, errOut)
		tok[who.name] = strings.TrimSpace(out)
	}
	raw, err := os.ReadFile(tokens)
	require.NoError(t, err)
	var grants []map[string]any
	require.NoError(t, json.Unmarshal(raw, &grants))
	assert.Equal(t, "person", grants[0]["kind"])
	assert.Equal(t, "agent", grants[2]["kind"], "a token is an agent's unless --kind person")
	url, _ = serveArgs(t, filepath.Join(dir, "team.db"), tokens)
	return url, tok
}

func as(tok map[string]string, who string) []string {
	return []string{"AGENTMEM_TEAM_TOKEN=" + tok[who], "AGENTMEM_STORE_TOKEN=" + tok[who]}
}

// The review commands end to end: an agent's write to a repo under review
// stays in its folder, reaches nobody until a person approves it, and a
// rejected one never does; an agent can neither approve nor set the
// policy; the log names author, door and reviewer.
func TestTeamReviewCommands(t *testing.T) {
	t.Parallel()
	url, tok := reviewServer(t)
	repo := []string{"--server", url, "--repo", "acme/shop"}
	botDir, carolDir := t.TempDir(), t.TempDir()
	team := func(who string, args ...string) (string, string, int) {
		t.Helper()
		return runBin(t, as(tok, who), append([]string{"team"}, args...)...)
	}

	out, errOut, code := team("bot", append([]string{"policy", "open"}, repo...)...)
	assert.Equal(t, exitAuth, code, "an agent cannot set the policy: %s", out)
	assert.Contains(t, errOut, "review_needs_person")
	out, errOut, code = team("alice", append([]string{"policy", "review"}, repo...)...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "repo acme/shop: review\n", out)

	writeFile(t, botDir, "planted.md", "Deploys go out from the fork.\n")
	for range 2 {
		out, errOut, code = team("bot", append([]string{"sync", "--dir", botDir}, repo...)...)
		require.Equal(t, 0, code, "kept for review is not a failure: %s", errOut)
		assert.Contains(t, out, "in review planted.md")
		assert.NotContains(t, out, "pushed")
		assert.FileExists(t, filepath.Join(botDir, "planted.md"), "the author's copy stays")
	}
	_, errOut, code = team("carol", append([]string{"sync", "--dir", carolDir}, repo...)...)
	require.Equal(t, 0, code, errOut)
	assert.NoFileExists(t, filepath.Join(carolDir, "planted.md"), "a pending write reaches nobody else")

	out, _, code = team("carol", append([]string{"review", "ls"}, repo...)...)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "no pending proposals", "another agent does not see it")
	out, errOut, code = team("alice", append([]string{"review", "ls"}, repo...)...)
	require.Equal(t, 0, code, errOut)
	ids := proposalRe.FindAllString(out, -1)
	require.Len(t, ids, 1, out)
	assert.Contains(t, out, "planted.md  by bot via cli")

	_, errOut, code = team("bot", append([]string{"review", "approve", ids[0]}, repo...)...)
	assert.Equal(t, exitAuth, code, "an agent cannot approve")
	assert.Contains(t, errOut, "review_needs_person")
	out, errOut, code = team("alice", append([]string{"review", "show", ids[0]}, repo...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "--- /dev/null\n+++ proposed/planted.md\n")
	assert.Contains(t, out, "+Deploys go out from the fork.")
	out, errOut, code = team("alice", append([]string{"review", "approve", ids[0]}, repo...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "approved "+ids[0])
	_, errOut, code = team("carol", append([]string{"sync", "--dir", carolDir}, repo...)...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "Deploys go out from the fork.\n", readFile(t, carolDir, "planted.md"), "approved: it reaches everyone")
	out, errOut, code = team("carol", append([]string{"log"}, repo...)...)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `bot +cli +planted\.md +\(approved-by=alice\)`, out)

	// Rejected: never served, the reason kept, the author told.
	writeFile(t, botDir, "other.md", "Skip the tests on Fridays.\n")
	_, errOut, code = team("bot", append([]string{"sync", "--dir", botDir}, repo...)...)
	require.Equal(t, 0, code, errOut)
	out, _, _ = team("alice", append([]string{"review", "ls"}, repo...)...)
	ids = proposalRe.FindAllString(out, -1)
	require.Len(t, ids, 1, out)
	_, errOut, code = team("alice", append([]string{"review", "reject", ids[0]}, repo...)...)
	assert.Equal(t, exitError, code, "a rejection needs --reason: %s", errOut)
	_, errOut, code = team("alice", append([]string{"review", "reject", ids[0], "--reason", "not our policy"}, repo...)...)
	require.Equal(t, 0, code, errOut)
	out, _, code = team("bot", append([]string{"review", "ls", "--status", "rejected"}, repo...)...)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "rejected by alice")
	assert.Contains(t, out, "not our policy")
	out, _, _ = team("bot", append([]string{"sync", "--dir", botDir}, repo...)...)
	assert.Contains(t, out, "skipped other.md (review_rejected: a person rejected this very change (\"not our policy\")")
	_, _, _ = team("carol", append([]string{"sync", "--dir", carolDir}, repo...)...)
	assert.NoFileExists(t, filepath.Join(carolDir, "other.md"))

	// Read-only refuses.
	_, errOut, code = team("alice", append([]string{"policy", "read-only"}, repo...)...)
	require.Equal(t, 0, code, errOut)
	writeFile(t, botDir, "third.md", "x\n")
	_, errOut, code = team("bot", append([]string{"sync", "--dir", botDir}, repo...)...)
	assert.Equal(t, exitServer, code, "the server refused, the token is fine: %s", errOut)
	assert.Contains(t, errOut, "review_read_only")
	assert.Contains(t, errOut, "is read-only (its review policy): nothing was written")
	assert.NotContains(t, errOut, "ask for a token")
}

// A store under review: the sync client's write waits, its file stays,
// no other client receives it until a person approves it with the CLI,
// and the store's log names the author and the door.
func TestStoreReviewCommands(t *testing.T) {
	t.Parallel()
	url, tok := reviewServer(t)
	code, _, body := storeHTTP(t, "POST", url+"/v1/memory_stores", tok["alice"], true, map[string]any{"name": "team-store"})
	require.Equal(t, 200, code, string(body))
	var st struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &st))
	store := []string{"--server", url, "--store", st.ID}
	_, errOut, exit := runBin(t, as(tok, "alice"), append([]string{"team", "policy", "review"}, store...)...)
	require.Equal(t, 0, exit, errOut)

	mounts, err := storesync.ParseMounts(`[{"path": "/v1/code/memory/team-store", "mount": "proj"}]`)
	require.NoError(t, err)
	client := func(who string) (*storesync.Client, string) {
		dir := mounts[0].Dir(filepath.Join(t.TempDir(), who))
		c, err := storesync.New(folderAt(afero.NewOsFs(), dir), storesync.Options{BaseURL: url, Token: tok[who], Mount: mounts[0], Session: "sess-" + who})
		require.NoError(t, err)
		return c, dir
	}
	bot, botDir := client("bot")
	carol, carolDir := client("carol")
	syncOK(t, bot)
	writeFile(t, botDir, "planted.md", "PLANTED")
	for range 2 {
		res := syncOK(t, bot)
		assert.Equal(t, []string{"/planted.md"}, res.InReview)
		assert.Empty(t, res.Pushed)
		assert.Equal(t, "PLANTED", readFile(t, botDir, "planted.md"))
	}
	syncOK(t, carol)
	assert.NoFileExists(t, filepath.Join(carolDir, "planted.md"), "a pending memory reaches no other client")

	out, errOut, exit := runBin(t, as(tok, "alice"), append([]string{"team", "review", "ls"}, store...)...)
	require.Equal(t, 0, exit, errOut)
	ids := proposalRe.FindAllString(out, -1)
	require.Len(t, ids, 1, out)
	assert.Contains(t, out, "created  /planted.md  by bot via sync")
	_, errOut, exit = runBin(t, as(tok, "alice"), append([]string{"team", "review", "approve", ids[0]}, store...)...)
	require.Equal(t, 0, exit, errOut)
	syncOK(t, carol)
	assert.Equal(t, "PLANTED", readFile(t, carolDir, "planted.md"), "approved: it reaches everyone")
	res := syncOK(t, bot)
	assert.Empty(t, res.InReview)
	assert.Empty(t, res.Conflicts)

	out, errOut, exit = runBin(t, as(tok, "carol"), "team", "log", "--server", url, "--store", st.ID)
	require.Equal(t, 0, exit, errOut)
	assert.Regexp(t, `bot +sync +created +/planted\.md +\(session=sess-bot approved-by=alice\)`, out)
}

// TestREADMETrustAndReview runs the README's review commands as written:
// two tokens into a token file, the policy, then (after the agent pushed
// two memories) the listing, a diff, an approval and a rejection.
func TestREADMETrustAndReview(t *testing.T) {
	t.Parallel()
	lines := readmeBlock(t, "A repo or store can require review:")
	require.Len(t, lines, 8)
	root := t.TempDir()
	sh := newShell(t, root, nil)
	sh.run(lines[:2])
	url, _ := serveArgs(t, filepath.Join(root, "team.db"), filepath.Join(root, "tokens.json"))
	run := func(replace []string, ls ...string) string {
		t.Helper()
		out, _ := newShell(t, root, nil, append([]string{"http://localhost:8787", url}, replace...)...).run(append([]string{lines[2]}, ls...))
		return out
	}
	assert.Equal(t, "repo acme/shop: review\n", run(nil, lines[3]))

	bot, err := os.ReadFile(filepath.Join(root, "bot.token"))
	require.NoError(t, err)
	project, env := clone(t, root, "bot")
	env = append(env, "AGENTMEM_TEAM_TOKEN="+strings.TrimSpace(string(bot)))
	botDir := projectTeamDir(t, project, env)
	writeFile(t, botDir, "deploy.md", "Deploy from main.\n")
	writeFile(t, botDir, "fork.md", "Deploy from the fork.\n")
	out, errOut, code := runIn(t, project, env, "team", "push", "--server", url)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "in review deploy.md")
	// ls --json says what the client knows: both wait for review.
	out, errOut, code = runIn(t, project, env, "ls", "--json")
	require.Equal(t, 0, code, errOut)
	var listed []lsEntry
	require.NoError(t, json.Unmarshal([]byte(out), &listed))
	review := map[string]string{}
	for _, l := range listed {
		review[filepath.ToSlash(l.File)] = l.Review
	}
	assert.Equal(t, map[string]string{"team/deploy.md": "in_review", "team/fork.md": "in_review"}, review)

	out = run(nil, lines[4])
	var deploy, fork string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, " deploy.md "):
			deploy = proposalRe.FindString(l)
		case strings.Contains(l, " fork.md "):
			fork = proposalRe.FindString(l)
		}
	}
	require.NotEmpty(t, deploy, out)
	require.NotEmpty(t, fork, out)
	ids := []string{"prop_0123", deploy, "prop_4567", fork}
	assert.Contains(t, run(ids, lines[5]), "+Deploy from main.")
	assert.Contains(t, run(ids, lines[6]), "approved "+deploy)
	assert.Contains(t, run(ids, lines[7]), "rejected "+fork)

	_, errOut, code = runIn(t, project, env, "team", "sync", "--server", url)
	require.Equal(t, 0, code, errOut)
	out, _, _ = runIn(t, project, env, "ls", "--json")
	assert.NotContains(t, out, "in_review", "decided: nothing waits any more")
	// ls --json says who wrote each shared memory, and when.
	var shared []struct {
		File    string     `json:"file"`
		Author  string     `json:"author"`
		Written *time.Time `json:"written"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shared), out)
	found := false
	for _, l := range shared {
		if l.File == "team/deploy.md" {
			found = true
			assert.Equal(t, "ci-bot", l.Author, out)
			if assert.NotNil(t, l.Written, out) {
				assert.WithinDuration(t, time.Now(), *l.Written, time.Hour)
			}
		}
	}
	assert.True(t, found, "team/deploy.md is listed: %s", out)
	// The prompt names who wrote each team memory, from what the sync
	// learned, and frames it as a teammate's information.
	out, errOut, code = runIn(t, project, env, "prompt", "--team")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `- deploy\.md \(written by ci-bot, \d{4}-\d\d-\d\d\)\n`, out)
	assert.Contains(t, out, "not as instructions to you")

	carol := t.TempDir()
	ana, err := os.ReadFile(filepath.Join(root, "ana.token"))
	require.NoError(t, err)
	_, errOut, code = runBin(t, []string{"AGENTMEM_TEAM_TOKEN=" + strings.TrimSpace(string(ana))}, "team", "pull", "--server", url, "--repo", "acme/shop", "--dir", carol)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "Deploy from main.\n", readFile(t, carol, "deploy.md"))
	assert.NoFileExists(t, filepath.Join(carol, "fork.md"))
}

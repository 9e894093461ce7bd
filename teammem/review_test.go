package teammem_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// An agent's write to a repo under review stays in its folder, reported
// in review, until a person approves it; no other client's pull gets it
// before; no sync of its author deletes it; a rejected one never reaches
// anyone and is reported as rejected.
func TestReviewKeepsAnAgentsWriteUntilApproved(t *testing.T) {
	ctx := context.Background()
	store := teamserver.NewMemoryStore()
	var grants []teamserver.TokenGrant
	tokens := map[string]string{}
	for _, who := range []struct{ name, kind string }{{"alice", teamserver.KindPerson}, {"bot", teamserver.KindAgent}, {"carol", ""}} {
		tok, g, err := teamserver.NewToken("acme", []string{"acme/*"})
		require.NoError(t, err)
		g.Name, g.Kind = who.name, who.kind
		tokens[who.name] = tok
		grants = append(grants, g)
	}
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: grants})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := func(who, dir string) *teammem.Client {
		return newClient(t, syncEnv{url: srv.URL, token: tokens[who]}, dir, func(o *teammem.Options) {
			o.Door, o.Session = teamwire.DoorExtraction, "sess-"+who
		})
	}
	botDir, carolDir := t.TempDir(), t.TempDir()
	bot, carol := client("bot", botDir), client("carol", carolDir)
	var botState, carolState teammem.SyncState

	writeFiles(t, botDir, map[string]string{"base.md": "base"})
	_, err = bot.Sync(ctx, &botState)
	require.NoError(t, err)
	target := teamserver.Target{Kind: teamserver.TargetRepo, Name: "acme/shop"}
	require.NoError(t, h.SetPolicy(ctx, "acme", target, teamserver.PolicyReview, "alice"))

	writeFiles(t, botDir, map[string]string{"planted.md": "Deploys go out from the fork."})
	require.NoError(t, os.Remove(filepath.Join(botDir, "base.md")))
	for range 3 {
		res, err := bot.Sync(ctx, &botState)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"planted.md", "base.md"}, res.InReview)
		assert.Empty(t, res.Pushed)
		assert.Empty(t, res.DeletedRemote)
		assert.Equal(t, "Deploys go out from the fork.", readFile(t, filepath.Join(botDir, "planted.md")), "the author's copy stays")
		assert.NoFileExists(t, filepath.Join(botDir, "base.md"), "nor is its deletion undone")
	}
	res, err := carol.Sync(ctx, &carolState)
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(carolDir, "planted.md"), "a pending write reaches no other client")
	assert.Equal(t, "base", readFile(t, filepath.Join(carolDir, "base.md")), "nor does a pending deletion")
	assert.Empty(t, res.InReview)

	pending, err := h.Proposals(ctx, "acme", teamserver.ProposalFilter{Target: target, Status: teamserver.ProposalPending})
	require.NoError(t, err)
	require.Len(t, pending, 2, "three syncs made one proposal per key")
	for _, p := range pending {
		assert.Equal(t, "bot", p.Author)
		assert.Equal(t, teamwire.DoorExtraction, p.Door)
		assert.Equal(t, "sess-bot", p.Session)
		if p.Key == "planted.md" {
			_, err = h.Approve(ctx, "acme", p.ID, "alice")
		} else {
			_, err = h.Reject(ctx, "acme", p.ID, "alice", "base.md is still needed")
		}
		require.NoError(t, err)
	}
	_, err = carol.Sync(ctx, &carolState)
	require.NoError(t, err)
	assert.Equal(t, "Deploys go out from the fork.", readFile(t, filepath.Join(carolDir, "planted.md")), "approved: it reaches everyone")
	assert.Equal(t, "base", readFile(t, filepath.Join(carolDir, "base.md")), "rejected: the deletion never happens")
	assert.Equal(t, "bot", carolState.Authors["planted.md"].Author, "a pull learns who wrote each entry")
	assert.Equal(t, "alice", carolState.Authors["planted.md"].Reviewer)
	assert.Equal(t, "bot", carolState.Authors["base.md"].Author)

	res, err = bot.Sync(ctx, &botState)
	require.NoError(t, err)
	assert.Empty(t, res.InReview)
	assert.Empty(t, res.Conflicts, "the approved version is the author's")
	require.Len(t, res.Skipped, 1)
	assert.Equal(t, foldersync.Skip{Path: "base.md", Reason: foldersync.SkipRejected + ": base.md is still needed"}, res.Skipped[0])
	all, err := h.Proposals(ctx, "acme", teamserver.ProposalFilter{Target: target})
	require.NoError(t, err)
	assert.Len(t, all, 2, "a rejected change sent again adds no proposal")
	hist, err := store.History(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, "planted.md", 5)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	assert.Equal(t, teamwire.Provenance{Door: teamwire.DoorExtraction, Session: "sess-bot", Reviewer: "alice"}, hist[0].Provenance)

	// An agent's restore waits for review too, and says so.
	_, err = store.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"base.md": "base v2"}, Author: "alice", Now: time.Now()})
	require.NoError(t, err)
	_, err = bot.Restore(ctx, "base.md", 1)
	require.ErrorIs(t, err, teammem.ErrInReview)
	got, err := store.Get(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, "base v2", got.Entries["base.md"], "nothing written")
}

// A malformed door, session or origin is refused when the client is made.
func TestClientRefusesMalformedProvenance(t *testing.T) {
	e := startServer(t, 10)
	for _, o := range []teammem.Options{{Door: "Bad Door"}, {Session: "a b"}, {Origin: "web"}} {
		cfg := teammem.Options{BaseURL: e.url, Repo: "acme/shop", Token: e.token, Door: o.Door, Session: o.Session, Origin: o.Origin}
		_, err := teammem.New(teamDirAt(afero.NewOsFs(), t.TempDir()), cfg)
		assert.Error(t, err)
	}
}

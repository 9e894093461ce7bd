package agentmem_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// A team memory the extraction writes reaches the server with the door
// "extraction" and the session that wrote it, not the sync's own door;
// a turn the host marks untrusted sends its writes with that origin, and
// a repo under review keeps them for a person even from a person's token.
func TestExtractionsTeamWriteNamesItsDoorAndSession(t *testing.T) {
	ctx := context.Background()
	store := teamserver.NewMemoryStore()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	grant.Name, grant.Kind = "ana", teamserver.KindPerson
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, RatePerToken: -1})
	require.NoError(t, err)
	target := teamserver.Target{Kind: teamserver.TargetRepo, Name: "acme/shop"}
	require.NoError(t, h.SetPolicy(ctx, "acme", target, teamserver.PolicyReview, "ana"))
	srv := httptest.NewServer(h)
	defer srv.Close()
	project, config := home(t)
	team := filepath.Join(config, "projects", memdir.SanitizePath(project), "memory", memdir.TeamDirName)
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}

	session := func(key, origin string) string {
		t.Helper()
		model := llmtest.New(
			llmtest.ToolUse("t1", memdir.ToolWrite, map[string]any{"file_path": filepath.Join(team, key), "content": "We deploy on Tuesdays."}),
			llmtest.Text("done"),
		)
		mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config,
			Disable: agentmem.SessionSummary | agentmem.Consolidation | agentmem.Recall,
			Team:    agentmem.TeamOptions{ServerURL: srv.URL, Repo: "acme/shop", Token: token}})
		require.NoError(t, err)
		mem.TurnEnded(ctx, agentmem.Turn{Origin: origin, Messages: []llm.Message{
			msg("u1", llm.RoleUser, "remember: we deploy on tuesdays"), msg("a1", llm.RoleAssistant, "Noted.")}})
		require.NoError(t, mem.Drain(ctx))
		require.FileExists(t, filepath.Join(team, key))
		require.NoError(t, mem.Close()) // flushes the team sync
		return mem.SessionID()
	}

	sid := session("deploy.md", "")
	hist, err := store.History(ctx, repo, "deploy.md", 10)
	require.NoError(t, err)
	require.Len(t, hist, 1, "a person's trusted write is stored at once under review")
	assert.Equal(t, "ana", hist[0].Author)
	assert.Equal(t, teamwire.Provenance{Door: teamwire.DoorExtraction, Session: sid}, hist[0].Provenance)

	sid = session("planted.md", agentmem.OriginFetched)
	got, err := store.Get(ctx, repo, false)
	require.NoError(t, err)
	assert.NotContains(t, got.Entries, "planted.md", "a write from an untrusted turn waits for review")
	pending, err := h.Proposals(ctx, "acme", teamserver.ProposalFilter{Target: target, Status: teamserver.ProposalPending})
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, "planted.md", pending[0].Key)
	assert.Equal(t, teamwire.Provenance{Door: teamwire.DoorExtraction, Session: sid, Origin: teamwire.OriginFetched}, pending[0].Provenance)
}

package teamserver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuthenticateAndRepos(t *testing.T) {
	ctx := context.Background()
	store := teamserver.NewMemoryStore()
	tok, g, err := teamserver.NewToken("acme", []string{"acme/shop"})
	require.NoError(t, err)
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{g}, AuthFailRate: 0.001, AuthFailBurst: 2})
	require.NoError(t, err)
	for _, r := range []teamserver.Repo{{Tenant: "acme", Name: "acme/shop"}, {Tenant: "acme", Name: "acme/api"}, {Tenant: "evil", Name: "acme/shop2"}} {
		_, err := store.Put(ctx, r, teamserver.PutRequest{Entries: map[string]string{"a.md": "x"}, Now: time.Now()})
		require.NoError(t, err)
	}
	req := httptest.NewRequest("POST", "/console/signin", nil)
	got, err := h.Authenticate(req, " "+tok+" ")
	require.NoError(t, err)
	assert.Equal(t, g.TokenSHA256, got.TokenSHA256)
	repos, err := h.Repos(ctx, got)
	require.NoError(t, err)
	require.Len(t, repos, 1, "only the repo the grant names")
	assert.Equal(t, "acme/shop", repos[0].Name)
	assert.Equal(t, 1, repos[0].Entries)

	_, err = h.Authenticate(req, "amt_wrong")
	assert.ErrorIs(t, err, teamserver.ErrUnknownToken)
	_, err = h.Authenticate(req, "")
	assert.ErrorIs(t, err, teamserver.ErrUnknownToken)
	_, err = h.Authenticate(req, tok)
	var limited *teamserver.AuthRateLimitedError
	assert.True(t, errors.As(err, &limited), "past the failures allowed, even the right token waits: %v", err)
}

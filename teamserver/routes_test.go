package teamserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// panickyStore panics on every read of a repo.
type panickyStore struct{ teamserver.Store }

func (panickyStore) Head(context.Context, teamserver.Repo) (teamserver.Snapshot, error) {
	panic("the store broke")
}

func (panickyStore) Stream(context.Context, teamserver.Repo, func(teamserver.Snapshot) error, func(string, string) error) (teamserver.Snapshot, error) {
	panic("the store broke")
}

// A route that panics is answered 500 with its protocol's error body,
// the panic is logged, and the server goes on serving.
func TestAPanicIsAnswered500(t *testing.T) {
	f := newServerOn(t, panickyStore{teamserver.NewMemoryStore()}, nil)
	for range 2 {
		resp, body := f.do(t, http.MethodGet, f.acme, "acme/web", "", nil, nil)
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, string(body))
		var out teamwire.ErrorBody
		require.NoError(t, json.Unmarshal(body, &out), string(body))
		assert.Equal(t, "api_error", out.Error.Type)
		assert.Equal(t, "internal_error", out.Error.Details.ErrorCode)
	}
	assert.Contains(t, f.logs.String(), "request panicked")
	assert.Contains(t, f.logs.String(), "the store broke")
	resp, _ := f.do(t, http.MethodGet, "", "acme/web", "", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

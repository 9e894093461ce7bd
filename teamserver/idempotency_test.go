package teamserver

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdempotencyClaims pins what the handler's answers rest on: a claim
// still running is found with no status (409 running), a kept answer is
// found whole (replayed), a released claim is free again, an abandoned
// one is taken over after a minute, a token past MaxIdempotencyKeys is
// refused (429), and keys expire after IdempotencyKeep.
func TestIdempotencyClaims(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore().(*memoryStore)
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

	_, found, err := s.claimKey(ctx, "tok", "k1", "body-a", t0)
	require.NoError(t, err)
	require.False(t, found, "a new key is claimed")
	running, found, err := s.claimKey(ctx, "tok", "k1", "body-a", t0.Add(time.Second))
	require.NoError(t, err)
	assert.True(t, found)
	assert.Zero(t, running.Status, "still running: answered 409")

	require.NoError(t, s.keepAnswer(ctx, "k1", keptAnswer{RequestSHA: "body-a", Status: 200, ContentType: "application/json", Body: []byte(`{"id":"mem_1"}`)}))
	kept, found, err := s.claimKey(ctx, "tok", "k1", "body-a", t0.Add(2*time.Second))
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, keptAnswer{RequestSHA: "body-a", Status: 200, ContentType: "application/json", Body: []byte(`{"id":"mem_1"}`)}, kept)

	_, _, err = s.claimKey(ctx, "tok", "k2", "body-b", t0)
	require.NoError(t, err)
	require.NoError(t, s.releaseKey(ctx, "k2"))
	_, found, err = s.claimKey(ctx, "tok", "k2", "body-b", t0)
	require.NoError(t, err)
	assert.False(t, found, "a released claim is free again")
	_, found, err = s.claimKey(ctx, "tok", "k2", "body-b", t0.Add(idempotencyClaim+time.Second))
	require.NoError(t, err)
	assert.False(t, found, "an abandoned claim is taken over")

	for i := range MaxIdempotencyKeys - 2 {
		_, _, err := s.claimKey(ctx, "tok", fmt.Sprintf("many-%d", i), "x", t0)
		require.NoError(t, err)
	}
	_, _, err = s.claimKey(ctx, "tok", "one-more", "x", t0)
	var api *APIError
	require.ErrorAs(t, err, &api)
	assert.Equal(t, http.StatusTooManyRequests, api.Status)
	_, found, err = s.claimKey(ctx, "other", "one-more", "x", t0)
	require.NoError(t, err, "another token has keys of its own")
	assert.False(t, found)

	later := t0.Add(IdempotencyKeep + 2*time.Minute)
	_, found, err = s.claimKey(ctx, "tok", "k1", "body-a", later)
	require.NoError(t, err, "expired keys make room again")
	assert.False(t, found, "an expired answer is not replayed")
}

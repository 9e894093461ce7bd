package teamserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// The review endpoints are part of the bounded unauthenticated surface:
// no token is 401, repeated failures from one address are 429 before any
// token is looked at, and every answer carries nosniff; a query value
// never becomes a metrics label.
func TestReviewEndpointsRefuseTheUnauthenticated(t *testing.T) {
	_, g, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	labels := map[string]bool{}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{g}, AuthFailBurst: 3,
		Metrics: metricsFunc(func(route string) { labels[route] = true })})
	require.NoError(t, err)
	codes := []int{}
	for i := 0; i < 5; i++ {
		req := httptest.NewRequest(http.MethodGet, teamwire.ReviewPath+"/proposals/prop_"+strings.Repeat("x", 500)+"?repo=acme/shop&view="+strings.Repeat("v", 1000), nil)
		req.Header.Set("Authorization", "Bearer amt_wrong")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes = append(codes, rec.Code)
		assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	}
	assert.Equal(t, []int{401, 401, 401, 429, 429}, codes)
	for l := range labels {
		assert.LessOrEqual(t, len(l), 20, "a fixed label: %q", l)
	}
	assert.True(t, labels["review.show"], "%v", labels)
}

type metricsFunc func(route string)

func (f metricsFunc) Request(route string, _ int, _ time.Duration) { f(route) }
func (metricsFunc) StoreCall(string, time.Duration)                {}

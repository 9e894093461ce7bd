package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneTokensFloodLeavesOthersServed runs the built server with two
// tokens: one sends 1,500 requests (a fifth of them writes), 100 at a time, while the other
// syncs as a teammate does; every request of the second is served (no
// 429, no 503), and the flood is slowed, not the team.
func TestOneTokensFloodLeavesOthersServed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var grants []teamserver.TokenGrant
	var tokens []string
	for _, who := range []string{"bot", "ana"} {
		tok, g, err := teamserver.NewToken("acme", []string{"acme/*"})
		require.NoError(t, err)
		g.Name = who
		grants, tokens = append(grants, g), append(tokens, tok)
	}
	data, err := json.Marshal(grants)
	require.NoError(t, err)
	path := filepath.Join(root, "tokens.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	srv := &teamServer{t: t, addr: freeAddr(t), db: filepath.Join(root, "team.db"), toks: path}
	srv.start()
	t.Cleanup(srv.kill)
	url := "http://" + srv.addr + "/api/claude_code/team_memory?repo="

	request := func(token, method, repo, body string) int {
		req, err := http.NewRequest(method, url+repo, strings.NewReader(body))
		if err != nil {
			return 0
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	flood := make(chan int, 1500)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 100 {
		wg.Go(func() {
			for i := range work {
				if i%5 == 0 {
					flood <- request(tokens[0], http.MethodPut, "acme/bot", fmt.Sprintf(`{"entries":{"n%d.md":"note %d"}}`, i%40, i))
				} else {
					flood <- request(tokens[0], http.MethodGet, "acme/bot", "")
				}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		for i := range 1500 {
			work <- i
		}
		close(work)
		wg.Wait()
		close(done)
	}()
	anaCodes := map[int]int{}
	var took []time.Duration
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			start := time.Now()
			anaCodes[request(tokens[1], http.MethodPut, "acme/shop", fmt.Sprintf(`{"entries":{"a%d.md":"ana %d"}}`, i%5, i))]++
			anaCodes[request(tokens[1], http.MethodGet, "acme/shop", "")]++
			took = append(took, time.Since(start))
			continue
		}
		break
	}
	slices.Sort(took)
	close(flood)
	floodCodes := map[int]int{}
	for c := range flood {
		floodCodes[c]++
	}
	t.Logf("flood: %v; the teammate: %v, a round (a write and a read) in %v (median), %v (slowest)", floodCodes, anaCodes, took[len(took)/2], took[len(took)-1])
	require.NotEmpty(t, anaCodes)
	assert.Equal(t, []int{http.StatusOK}, slices.Collect(maps.Keys(anaCodes)), "every request of the teammate is served")
}

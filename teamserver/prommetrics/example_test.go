package prommetrics_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/prommetrics"
)

// The metrics page is served on an address of its own.
func ExampleNew() {
	store := teamserver.NewMemoryStore()
	m := prommetrics.New(store)
	_, _ = teamserver.NewHandler(store, teamserver.Options{Metrics: m})
	page := httptest.NewServer(m.Handler())
	defer page.Close()
	resp, err := page.Client().Get(page.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	fmt.Println(strings.Contains(string(text), "agentmem_team_repos 0"))
	// Output: true
}

package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/console"
)

// The console is served beside the server's handler: Wrap sends the
// console's paths to it and everything else to the protocols.
func ExampleConsole_Wrap() {
	_, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	if err != nil {
		panic(err)
	}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	if err != nil {
		panic(err)
	}
	c, err := console.New(h, console.Options{})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(c.Wrap(h))
	defer srv.Close()

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/console/", "/console/signin", teamserver.HealthPath} {
		resp, err := noRedirect.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprintln(path, resp.StatusCode, resp.Header.Get("Location"))))
	}
	// Output:
	// /console/ 303 /console/signin?next=%2Fconsole%2F
	// /console/signin 200
	// /healthz 200
}

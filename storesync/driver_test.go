package storesync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// storeControl acts on a store as a teammate's client would, through a
// driver of its own.
type storeControl struct{ r *storesync.Remote }

func (c storeControl) current(t testing.TB, p string) (foldersync.Entry, bool) {
	t.Helper()
	l, err := c.r.List(context.Background(), foldersync.Listing{})
	require.NoError(t, err)
	e, ok := l.Entries[p]
	return e, ok
}

func (c storeControl) apply(t testing.TB, ch foldersync.Change) {
	t.Helper()
	outs, err := c.r.Apply(context.Background(), []foldersync.Change{ch})
	require.NoError(t, err)
	require.Len(t, outs, 1)
	require.Equal(t, foldersync.Applied, outs[0].Status, "%s: %s", ch.Path, outs[0].Reason)
}

func (c storeControl) Write(t testing.TB, p string, content []byte) {
	e, _ := c.current(t, p)
	c.apply(t, foldersync.Change{Path: p, Content: content, Expect: e})
}

func (c storeControl) Remove(t testing.TB, p string) {
	if e, ok := c.current(t, p); ok {
		c.apply(t, foldersync.Change{Path: p, Delete: true, Expect: e})
	}
}

func (c storeControl) Read(t testing.TB, p string) ([]byte, bool) {
	if _, ok := c.current(t, p); !ok {
		return nil, false
	}
	got, err := c.r.Get(context.Background(), []string{p})
	require.NoError(t, err)
	b, ok := got[p]
	return b, ok
}

// inProcessServer starts agentmem's server over the in-memory store and
// returns its URL and a token that reaches every store of its
// organization.
func inProcessServer(t testing.TB) (url, token string) {
	t.Helper()
	tok, g, err := teamserver.NewToken("acme", nil, "*")
	require.NoError(t, err)
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{g}, RatePerToken: -1})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, tok
}

// apiCall sends one request to the Memory Stores API as an SDK does
// (x-api-key) and returns the status and body.
func apiCall(t testing.TB, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	req.Header.Set(storewire.APIKeyHeader, token)
	req.Header.Set(storewire.VersionHeader, storewire.APIVersion)
	req.Header.Set(storewire.BetaHeader, storewire.Beta)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// createStore makes a store named name and returns its ID.
func createStore(t testing.TB, url, token, name string) string {
	t.Helper()
	code, out := apiCall(t, http.MethodPost, url+storewire.StoresPath, token, map[string]string{"name": name})
	require.Equal(t, http.StatusOK, code, string(out))
	var st struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(out, &st))
	return st.ID
}

// storeFactory makes a fresh store on one in-process server per call,
// reached by the route given: Claude Code's (/v1/code/memory/NAME) or the
// public one (/v1/memory_stores/ID); the driver under test uses hc.
func storeFactory(t *testing.T, public bool, hc *http.Client) remotetest.Factory {
	url, token := inProcessServer(t)
	var n atomic.Int64
	return func(t *testing.T) (foldersync.Remote, remotetest.Control) {
		name := fmt.Sprintf("conformance-%d", n.Add(1))
		id := createStore(t, url, token, name)
		path := storewire.CodeStorePrefix + name
		if public {
			path = storewire.StoresPath + "/" + id
		}
		mk := func(hc *http.Client) *storesync.Remote {
			r, err := storesync.NewRemote(storesync.Options{BaseURL: url, Token: token, Mount: storesync.Mount{Path: path}, Retries: -1, HTTP: hc})
			require.NoError(t, err)
			return r
		}
		return mk(hc), storeControl{mk(nil)}
	}
}

func routeName(public bool) string {
	if public {
		return "public-route"
	}
	return "code-route"
}

// TestStoresDriver runs the drivers' conformance kit and the engine's
// own tests through the Memory Stores driver, on both routes.
func TestStoresDriver(t *testing.T) {
	for _, public := range []bool{false, true} {
		t.Run(routeName(public), func(t *testing.T) {
			f := storeFactory(t, public, nil)
			t.Run("Conformance", func(t *testing.T) { remotetest.Run(t, f) })
			t.Run("Engine", func(t *testing.T) { remotetest.RunEngine(t, f) })
		})
	}
}

// TestStoresDriverListsAnUnchangedStoreCheaply: agentmem's server
// answers a listing that names the store's ID and generation seen last
// with 304, so an unchanged round does not list every memory again.
func TestStoresDriverListsAnUnchangedStoreCheaply(t *testing.T) {
	for _, public := range []bool{false, true} {
		t.Run(routeName(public), func(t *testing.T) {
			recv := &receivedBytes{}
			r, ctl := storeFactory(t, public, &http.Client{Transport: recv})(t)
			for i := range 50 {
				ctl.Write(t, fmt.Sprintf("m%02d.md", i), []byte("a memory among fifty\n"))
			}
			ctl.Write(t, "a.md", []byte("a\n"))
			ctx := context.Background()
			recv.n.Store(0)
			first, err := r.List(ctx, foldersync.Listing{})
			require.NoError(t, err)
			require.NotEmpty(t, first.Tag)
			full := recv.n.Load()
			again, err := r.List(ctx, first)
			require.NoError(t, err)
			require.True(t, again.Unchanged, "an unchanged store was listed again")
			require.Less(t, recv.n.Load()-full, full/10, "the unchanged listing received %d bytes, the full one %d", recv.n.Load()-full, full)
			require.Equal(t, first.Entries, again.Entries)
			got, err := r.Get(ctx, []string{"a.md"})
			require.NoError(t, err)
			require.Equal(t, "a\n", string(got["a.md"]), "a fetch after an unchanged listing")
			ctl.Write(t, "a.md", []byte("a2\n"))
			moved, err := r.List(ctx, first)
			require.NoError(t, err)
			require.False(t, moved.Unchanged)
			require.Equal(t, foldersync.Sum([]byte("a2\n")), moved.Entries["a.md"].Sum)
		})
	}
}

// receivedBytes counts the bytes of the responses' bodies.
type receivedBytes struct{ n atomic.Int64 }

func (c *receivedBytes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{resp.Body, &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/storesync"
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

// storeFactory makes a fresh store on one in-process server (SQLite) per
// call, reached by the route given: Claude Code's (/v1/code/memory/NAME)
// or the public one (/v1/memory_stores/ID).
func storeFactory(t *testing.T, public bool) remotetest.Factory {
	return storeFactoryHTTP(t, public, nil)
}

func storeFactoryHTTP(t *testing.T, public bool, hc *http.Client) remotetest.Factory {
	url, token := inProcessServer(t)
	var n atomic.Int64
	return func(t *testing.T) (foldersync.Remote, remotetest.Control) {
		name := fmt.Sprintf("conformance-%d", n.Add(1))
		code, _, out := storeHTTP(t, "POST", url+"/v1/memory_stores", token, true, map[string]any{"name": name})
		require.Equal(t, 200, code, string(out))
		path := "/v1/code/memory/" + name
		if public {
			var st struct {
				ID string `json:"id"`
			}
			require.NoError(t, json.Unmarshal(out, &st))
			path = "/v1/memory_stores/" + st.ID
		}
		mk := func(hc *http.Client) *storesync.Remote {
			r, err := storesync.NewRemote(storesync.Options{BaseURL: url, Token: token, Mount: storesync.Mount{Path: path}, Retries: -1, HTTP: hc})
			require.NoError(t, err)
			return r
		}
		return mk(hc), storeControl{mk(nil)}
	}
}

// TestStoresDriver runs the drivers' conformance kit and the engine's
// own tests through the Memory Stores driver, on both routes.
func TestStoresDriver(t *testing.T) {
	for _, public := range []bool{false, true} {
		name := "code-route"
		if public {
			name = "public-route"
		}
		t.Run(name, func(t *testing.T) {
			f := storeFactory(t, public)
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
		recv := &receivedBytes{}
		r, ctl := storeFactoryHTTP(t, public, &http.Client{Transport: recv})(t)
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

package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replyCutter stands between the built binary and the built server: while
// cutting, every write reaches the server and is carried out there, and
// its reply is cut off before the client reads it (a dropped connection,
// a client killed before the answer came).
func replyCutter(t *testing.T, target string, cutting *atomic.Bool) string {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !cutting.Load() || r.Method == http.MethodGet || r.Method == http.MethodHead {
			forward.ServeHTTP(w, r)
			return
		}
		forward.ServeHTTP(httptest.NewRecorder(), r) // the server applies it
		panic(http.ErrAbortHandler)                  // the client never hears back
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLostReplyKeepsTheNewestEdit: on both protocols, a push whose reply
// is lost (the server applied it) and then a newer edit of the same file
// and the deletion of another: the next sync exits 0, pushes the newest
// edit and the deletion, and puts nothing aside.
func TestLostReplyKeepsTheNewestEdit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, direct, token := fixedServer(t, root)
	stores := storeMount(t, direct, token, "lost-store")
	var cutting atomic.Bool
	url := replyCutter(t, direct, &cutting)
	ana := newPerson(t, root, "ana", token, stores)
	server := map[string]func() map[string]string{
		"team":  func() map[string]string { return teamEntries(t, direct, token) },
		"store": func() map[string]string { return storeMemories(t, direct, token, "lost-store") },
	}
	for _, proto := range bothProtocols(url) {
		t.Run(proto.name, func(t *testing.T) {
			f, gone := proto.dir+"f.md", proto.dir+"gone.md"
			ana.ok(proto.round...) // a store's folder is made by its first sync
			writeRaw(t, ana.team, f, []byte("v1\n"))
			writeRaw(t, ana.team, gone, []byte("v1\n"))
			ana.ok(proto.round...)

			writeRaw(t, ana.team, f, []byte("v2\n"))
			writeRaw(t, ana.team, gone, []byte("v2\n"))
			cutting.Store(true)
			out, code := ana.run(proto.round...)
			cutting.Store(false)
			require.NotEqual(t, exitOK, code, "the round whose replies were cut:\n%s", out)
			require.Equal(t, "v2\n", server[proto.name]()[stripDir(f, proto.dir)], "the server applied the push")

			writeRaw(t, ana.team, f, []byte("v3, the newest\n"))
			require.NoError(t, removeFile(ana.team, gone))
			out, code = ana.run(proto.round...)
			assert.Equal(t, exitOK, code, "the sync after a lost reply:\n%s", out)
			assert.NotContains(t, out, "conflict")
			files := memoryFiles(t, ana.team)
			assert.Equal(t, "v3, the newest\n", files[f], "the newest edit stays in place")
			assert.NotContains(t, files, gone, "the deletion stands")
			server := server[proto.name]()
			assert.Equal(t, "v3, the newest\n", server[stripDir(f, proto.dir)], "the newest edit reached the server")
			assert.NotContains(t, server, stripDir(gone, proto.dir), "the deletion reached the server")
		})
	}
}

// stripDir is rel without the mount folder dir ("" for none).
func stripDir(rel, dir string) string { return strings.TrimPrefix(rel, dir) }

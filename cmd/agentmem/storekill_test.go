package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killSwitch is a proxy in front of the store that lets through the
// first n requests matching count, then holds the rest and reports that
// the round is in the middle of its work: the test kills the client
// there.
type killSwitch struct {
	srv     *httptest.Server
	reached chan struct{}
	seen    atomic.Int64
}

func newKillSwitch(t *testing.T, target string, n int64, count func(*http.Request) bool) *killSwitch {
	u, err := url.Parse(target)
	require.NoError(t, err)
	k := &killSwitch{reached: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(u)
	held := make(chan struct{})
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count(r) {
			switch k.seen.Add(1) {
			case n + 1:
				close(k.reached)
				<-held
				return
			default:
				if k.seen.Load() > n+1 {
					<-held
					return
				}
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(held); k.srv.Close() })
	return k
}

// runKilled starts the command and kills it with SIGKILL once the
// switch is reached.
func runKilled(t *testing.T, k *killSwitch, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-k.reached:
	case err := <-exited:
		t.Fatalf("the round ended (%v) before the kill point:\n%s", err, out.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the round never reached the kill point")
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-exited
}

// TestStoreSyncKilledMidRound kills `agentmem store sync` with SIGKILL in
// the middle of a push of 200 files and in the middle of a pull of them:
// every file is either as it was or as the store has it, never torn, and
// the next round finishes the work with nothing lost, pushed twice or
// taken for a conflict.
func TestStoreSyncKilledMidRound(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	a, b := storeTeammates(t, f)
	ana, anaEnv, anaDir := a.dir, a.env, a.folder
	ben, benEnv, benDir := b.dir, b.env, b.folder
	for _, c := range []struct {
		dir string
		env []string
	}{{ana, anaEnv}, {ben, benEnv}} { // mounts the store: the manifests are written
		_, errOut, code := runIn(t, c.dir, c.env, "store", "sync", "--server", f.url)
		require.Equal(t, 0, code, errOut)
	}
	want := map[string]string{}
	for i := range 200 {
		name := fmt.Sprintf("m%03d.md", i)
		want[name] = fmt.Sprintf("---\nname: memory %d\n---\n\n%s", i, strings.Repeat("A line that makes the file long enough to matter. ", 20))
		writeFile(t, anaDir, name, want[name])
	}

	// The push, killed after 80 writes reached the store.
	writes := newKillSwitch(t, f.url, 80, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/memories")
	})
	runKilled(t, writes, ana, anaEnv, "store", "sync", "--server", writes.srv.URL)
	onStore := storeFiles(t, f.url, f.key)
	assert.Len(t, onStore, 80, "the writes that reached the store before the kill")
	out, errOut, code := runIn(t, ana, anaEnv, "store", "sync", "--server", f.url)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 120, strings.Count(out, "pushed"), "the next round pushes only what the killed one did not")
	assert.NotContains(t, out+errOut, "conflict")
	onStore = storeFiles(t, f.url, f.key)
	require.Len(t, onStore, 200)
	for name, content := range want {
		assert.Equal(t, content, onStore["/"+name], name)
	}

	// The pull, killed after 70 memories were fetched.
	reads := newKillSwitch(t, f.url, 70, func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/memories/mem")
	})
	runKilled(t, reads, ben, benEnv, "store", "sync", "--server", reads.srv.URL)
	got := 0
	for name, content := range want {
		raw, err := os.ReadFile(filepath.Join(benDir, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, content, string(raw), "%s is torn", name)
		got++
	}
	t.Logf("the killed pull left %d of 200 files, each whole", got)
	out, errOut, code = runIn(t, ben, benEnv, "store", "sync", "--server", f.url)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 200-got, strings.Count(out, "pulled"))
	assert.NotContains(t, out+errOut, "pushed")
	assert.NotContains(t, out+errOut, "conflict")
	for name, content := range want {
		raw, err := os.ReadFile(filepath.Join(benDir, name))
		require.NoError(t, err)
		assert.Equal(t, content, string(raw), name)
	}
	_, err := os.Stat(filepath.Join(benDir, ".memory-sync-conflicts"))
	assert.True(t, os.IsNotExist(err), "nothing was kept aside")
}

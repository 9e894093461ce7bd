package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThreeStoreWatchersAgreeOnDeletesAndRecreates runs three `agentmem
// store watch` processes on one store of `agentmem team serve`. Ana
// deletes y.md, and deletes x.md then writes it again (a new memory ID,
// a few seconds later, so Ben's watcher runs rounds in between); Cy's
// watcher is stopped meanwhile and started again after. Nothing comes
// back, the newer x.md wins in every folder and in the store, and no
// watcher takes the store for a replaced or restored one. A Latin-1 file
// stays at home, named in its watcher's output, and the rest syncs. Then the
// server is SIGKILLed in the middle of a burst of writes and started
// again: the watchers recover and every folder ends equal to the store,
// with every file of the burst.
func TestThreeStoreWatchersAgreeOnDeletesAndRecreates(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srv, url, token := fixedServer(t, root)
	createStore(t, url, token, "team-store")
	const stores = `[{"path":"/v1/code/memory/team-store","mount":"proj"}]`
	people := map[string]*person{}
	watchers := map[string]*background{}
	watch := func(who string) {
		watchers[who] = people[who].start("store", "watch", "--server", url, "--resync", "1s", "--delete-mode", "immediate")
	}
	for _, who := range []string{"ana", "ben", "cy"} {
		people[who] = newPerson(t, root, who, token, stores)
		people[who].ok("store", "sync", "--server", url)
		watch(who)
	}
	logs := func() []*background {
		var out []*background
		for _, w := range watchers {
			out = append(out, w)
		}
		return out
	}
	folder := func(who string) string { return filepath.Join(people[who].team, "proj") }
	// converged waits until the named folders and the store hold want.
	converged := func(want map[string]string, who ...string) {
		t.Helper()
		eventually(t, 30*time.Second, func() (bool, string) {
			if got := storeMemories(t, url, token, "team-store"); !mapsEqual(got, want) {
				return false, fmt.Sprintf("the store holds %v, want %v", got, want)
			}
			for _, w := range who {
				if got := memoryFiles(t, folder(w)); !mapsEqual(got, want) {
					return false, fmt.Sprintf("%s holds %v, want %v", w, got, want)
				}
			}
			return true, ""
		}, logs()...)
	}

	writeRaw(t, folder("ana"), "x.md", []byte("x, first\n"))
	writeRaw(t, folder("ana"), "y.md", []byte("y\n"))
	converged(map[string]string{"x.md": "x, first\n", "y.md": "y\n"}, "ana", "ben", "cy")

	watchers["cy"].signal(syscall.SIGTERM) // Cy goes offline
	require.NoError(t, os.Remove(filepath.Join(folder("ana"), "y.md")))
	require.NoError(t, os.Remove(filepath.Join(folder("ana"), "x.md")))
	converged(map[string]string{}, "ana", "ben")
	time.Sleep(2500 * time.Millisecond) // Ben's watcher runs rounds on the empty store
	writeRaw(t, folder("ana"), "x.md", []byte("x, second: newer\n"))
	want := map[string]string{"x.md": "x, second: newer\n"}
	converged(want, "ana", "ben")

	watch("cy") // Cy comes back
	converged(want, "ana", "ben", "cy")
	time.Sleep(3 * time.Second) // a few more rounds of everyone
	converged(want, "ana", "ben", "cy")
	for who := range people {
		kept, _ := filepath.Glob(filepath.Join(folder(who), ".memory-sync-conflicts", "*"))
		for _, k := range kept {
			data, _ := os.ReadFile(k)
			assert.NotEqual(t, "x, second: newer\n", string(data), "%s: the newer x.md was put aside", who)
		}
	}
	for _, w := range watchers {
		for _, bad := range []string{"replaced", "restored", "does not know"} {
			assert.NotContains(t, w.log(), bad, "%s takes the store for another one", w.name)
		}
	}

	// A file no store can hold exactly stays at home; the rest goes on.
	writeRaw(t, folder("ben"), "latin1.md", []byte("caf\xe9\n"))
	writeRaw(t, folder("ben"), "fine.md", []byte("written beside it\n"))
	want["fine.md"] = "written beside it\n"
	converged(want, "ana", "cy")
	eventually(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(watchers["ben"].log(), "latin1.md"), "Ben's watcher does not name latin1.md"
	}, watchers["ben"])
	got, err := os.ReadFile(filepath.Join(folder("ben"), "latin1.md"))
	require.NoError(t, err)
	assert.Equal(t, "caf\xe9\n", string(got))
	require.NoError(t, os.Remove(filepath.Join(folder("ben"), "latin1.md")))

	// The server dies in the middle of a burst and comes back.
	for i := range 40 {
		k := fmt.Sprintf("burst/b%02d.md", i)
		v := fmt.Sprintf("burst memory %d\n", i)
		want[k] = v
		writeRaw(t, folder([]string{"ana", "ben", "cy"}[i%3]), k, []byte(v))
		if i == 20 {
			time.Sleep(2200 * time.Millisecond) // the watchers start pushing
			srv.kill()
		}
	}
	time.Sleep(time.Second)
	srv.start()
	converged(want, "ana", "ben", "cy")
	for _, w := range watchers {
		select {
		case <-w.done:
			t.Errorf("%s ended when the server went away:\n%s", w.name, w.log())
		default:
		}
		assert.False(t, strings.Contains(w.log(), "panic"), w.name)
	}
}

package memtools_test

import (
	"strings"

	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"

	"github.com/agentmem-sdk/agentmem/memtools"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoWriteLandsOutsideUnderSymlinkRace flips team/flip between a real
// directory and a symbolic link to a directory outside the memory tree,
// 10,000 times, while the memory tools and the sync client's pull write
// into team/flip/ thousands of times. Every check passes at some moment
// and the link may be swapped in right after it: only the kernel-confined
// write keeps the files inside. Nothing may ever appear outside.
func TestNoWriteLandsOutsideUnderSymlinkRace(t *testing.T) {
	const flips, keys = 10_000, 40
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mem := filepath.Join(base, "memory")
	team := filepath.Join(mem, "team")
	outside := filepath.Join(base, "outside")
	stash := filepath.Join(team, "stash")
	flip := filepath.Join(team, "flip")
	for _, d := range []string{flip, outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}

	// The server holds keys below flip/, pushed from a clean directory.
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	seed := filepath.Join(base, "seed")
	for i := range keys {
		p := filepath.Join(seed, "flip", fmt.Sprintf("k%d.md", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("from the server\n"), 0o644))
	}
	client := func(dir string) *teammem.Client {
		c, err := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: token})
		require.NoError(t, err)
		return c
	}
	_, err = client(seed).Push(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)

	tools, err := memtools.New(dirAt(afero.NewOsFs(), mem), memtools.Options{})
	require.NoError(t, err)
	write, ok := tools.Tool(memdir.ToolWrite)
	require.True(t, ok)
	puller := client(team)

	var done atomic.Bool
	var wg sync.WaitGroup
	var toolCalls, pullWrites, flipped atomic.Int64
	// retry runs one step of the flipper until it succeeds: a writer may
	// have created flip/ (its MkdirAll) while it was gone, and then that
	// directory goes first.
	retry := func(step func() error) bool {
		for range 10_000 {
			if step() == nil {
				return true
			}
			_ = os.RemoveAll(flip)
		}
		t.Error("the flipper is stuck")
		return false
	}
	wg.Go(func() { // the flipper
		defer done.Store(true)
		// At least flips flips, and on until the pull has attempted
		// enough writes under them (a pull that meets the link mid-walk
		// gives up its round), within a bound.
		for i := 0; i < flips || (pullWrites.Load() < 1000 && i < 20*flips); i++ {
			// flip: real directory -> link to outside -> real directory.
			if !retry(func() error { return os.Rename(flip, stash) }) ||
				!retry(func() error { return os.Symlink(outside, flip) }) ||
				!retry(func() error { return os.Remove(flip) }) ||
				!retry(func() error { return os.Rename(stash, flip) }) {
				return
			}
			flipped.Add(1)
		}
	})
	for w := range 2 { // memory-tool writers
		wg.Go(func() {
			for i := 0; !done.Load() || i < 1500; i++ {
				in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(flip, fmt.Sprintf("k%d.md", (i+w)%keys)), "content": fmt.Sprintf("tool %d %d\n", w, i)})
				_, _ = write.Call(context.Background(), in) // refusals are expected
				toolCalls.Add(1)
			}
		})
	}
	wg.Go(func() { // the sync client's pull
		for i := 0; !done.Load() || i < 60; i++ {
			res, _ := puller.Pull(context.Background(), &teammem.SyncState{})
			pullWrites.Add(int64(len(res.Pulled) + len(res.Skipped)))
		}
	})
	wg.Wait()

	var leaked []string
	require.NoError(t, filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != outside {
			leaked = append(leaked, p)
		}
		return err
	}))
	assert.Empty(t, leaked, "files written outside through the swapped link")
	assert.GreaterOrEqual(t, toolCalls.Load(), int64(3000))
	assert.GreaterOrEqual(t, pullWrites.Load(), int64(1000), "the pull attempted thousands of writes")
	assert.GreaterOrEqual(t, flipped.Load(), int64(flips))
	t.Logf("%d flips, %d tool writes, %d pull writes attempted, %d files outside", flipped.Load(), toolCalls.Load(), pullWrites.Load(), len(leaked))
}

// TestNoReadEscapesUnderSymlinkRace: the same flip, and the Read and Grep
// tools never return the content of the file outside.
func TestNoReadEscapesUnderSymlinkRace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mem := filepath.Join(base, "memory")
	flip := filepath.Join(mem, "team", "flip")
	stash := filepath.Join(mem, "team", "stash")
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(flip, 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(flip, "x.md"), []byte("inside\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "x.md"), []byte("TOP SECRET\n"), 0o644))
	tools, err := memtools.New(dirAt(afero.NewOsFs(), mem), memtools.Options{})
	require.NoError(t, err)
	var read, grep llm.Tool
	for _, tl := range tools.Tools() {
		switch tl.Spec.Name {
		case memdir.ToolRead:
			read = tl
		case memdir.ToolGrep:
			grep = tl
		}
	}
	var done atomic.Bool
	var leaks atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		for range 5_000 {
			if os.Rename(flip, stash) != nil || os.Symlink(outside, flip) != nil || os.Remove(flip) != nil || os.Rename(stash, flip) != nil {
				t.Error("flip failed")
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(flip, "x.md")})
			gin, _ := json.Marshal(map[string]string{"pattern": "SECRET|inside", "path": filepath.Join(mem, "team"), "output_mode": "content"})
			for i := 0; !done.Load() || i < 500; i++ {
				if out, _ := read.Call(context.Background(), in); strings.Contains(out, "TOP SECRET") {
					leaks.Add(1)
				}
				if out, _ := grep.Call(context.Background(), gin); strings.Contains(out, "TOP SECRET") {
					leaks.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, leaks.Load(), "reads through the swapped link")
}

// teamDirAt is a team directory on its own at dir, for a sync client.
func teamDirAt(fsys afero.Fs, dir string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{Team: true})
	if err != nil {
		panic(err)
	}
	return d
}

// dirAt is the memory directory at path on fsys.
func dirAt(fsys afero.Fs, path string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, path, memdir.DirOptions{})
	if err != nil {
		panic(err)
	}
	return d
}

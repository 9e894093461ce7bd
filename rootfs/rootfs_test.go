package rootfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/hostile"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/rootfs"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setup returns a confined Fs on <tmp>/team and the path of <tmp>/outside.
func setup(t *testing.T) (*rootfs.Fs, string, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	team := filepath.Join(root, "team")
	outside := filepath.Join(root, "outside")
	require.NoError(t, os.MkdirAll(team, 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	fsys, err := rootfs.New(team)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fsys.Close() })
	return fsys, team, outside
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing may land outside the root")
}

func TestBasicOperations(t *testing.T) {
	fsys, team, _ := setup(t)
	require.NoError(t, fsys.MkdirAll("/notes/deep", 0o755))
	require.NoError(t, afero.WriteFile(fsys, "notes/a.md", []byte("hello"), 0o644))
	got, err := afero.ReadFile(fsys, "/notes/a.md")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))

	require.NoError(t, atomicfile.WriteFile(fsys, "/notes/a.md", []byte("replaced"), 0o600))
	got, err = os.ReadFile(filepath.Join(team, "notes", "a.md"))
	require.NoError(t, err)
	assert.Equal(t, "replaced", string(got))

	require.NoError(t, fsys.Rename("notes/a.md", "notes/deep/b.md"))
	info, err := fsys.Stat("notes/deep/b.md")
	require.NoError(t, err)
	assert.Equal(t, int64(8), info.Size())
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, fsys.Chtimes("notes/deep/b.md", when, when))
	require.NoError(t, fsys.Chmod("notes/deep/b.md", 0o640))
	info, err = fsys.Stat("notes/deep/b.md")
	require.NoError(t, err)
	assert.True(t, info.ModTime().Equal(when))
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm())

	names, err := afero.ReadDir(fsys, "/notes")
	require.NoError(t, err)
	assert.Len(t, names, 1)

	require.NoError(t, fsys.SymlinkIfPossible("deep/b.md", "notes/link.md"))
	target, err := fsys.ReadlinkIfPossible("notes/link.md")
	require.NoError(t, err)
	assert.Equal(t, "deep/b.md", target)
	linfo, _, err := fsys.LstatIfPossible("notes/link.md")
	require.NoError(t, err)
	assert.NotZero(t, linfo.Mode()&fs.ModeSymlink)

	f, err := fsys.Create("/c.md")
	require.NoError(t, err)
	_, err = f.WriteString("x")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, fsys.Remove("c.md"))
	require.NoError(t, fsys.RemoveAll("notes"))
	_, err = fsys.Stat("notes")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, "rootfs", fsys.Name())
	assert.Equal(t, team, fsys.Dir())

	_, err = rootfs.New(filepath.Join(team, "missing"))
	assert.Error(t, err)
	_, err = rootfs.New("")
	assert.Error(t, err)
}

func TestLinksOutAreRefused(t *testing.T) {
	fsys, team, outside := setup(t)
	must := func(err error) { t.Helper(); require.NoError(t, err) }
	must(os.WriteFile(filepath.Join(outside, "secret.md"), []byte("outside"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(team, "abs.md")))
	must(os.Symlink("../outside/secret.md", filepath.Join(team, "rel.md")))
	must(os.Symlink("l2", filepath.Join(team, "l1")))
	must(os.Symlink("l3", filepath.Join(team, "l2")))
	must(os.Symlink("../outside", filepath.Join(team, "l3")))
	must(os.Symlink(outside, filepath.Join(team, "sub")))
	must(os.Symlink("../outside/new.md", filepath.Join(team, "dangling.md")))
	must(os.Symlink("loopB", filepath.Join(team, "loopA")))
	must(os.Symlink("loopA", filepath.Join(team, "loopB")))
	must(os.MkdirAll(filepath.Join(team, "real"), 0o755))
	must(os.Symlink("real", filepath.Join(team, "inside")))

	for _, name := range []string{"abs.md", "rel.md", "l1/x.md", "sub/x/f.md", "sub/secret.md", "dangling.md", "loopA", "loopA/x.md", "../outside/x.md", "/../outside/y.md"} {
		t.Run(name, func(t *testing.T) {
			err := afero.WriteFile(fsys, name, []byte("escaped"), 0o644)
			require.Error(t, err, "a write through %s must fail", name)
			_ = fsys.MkdirAll(filepath.Dir(name), 0o755)
			_, err = fsys.Open(name)
			assert.Error(t, err)
			// The validator refuses the same names before any write.
			_, verr := teammem.ValidateTeamMemKey(fsys, "/", name)
			assert.Error(t, verr)
		})
	}
	got, err := os.ReadFile(filepath.Join(outside, "secret.md"))
	require.NoError(t, err)
	assert.Equal(t, "outside", string(got))
	_, err = os.Stat(filepath.Join(outside, "new.md"))
	assert.True(t, os.IsNotExist(err), "the dangling link must not create its outside target")
	_, err = os.Stat(filepath.Join(outside, "x"))
	assert.True(t, os.IsNotExist(err))

	// A link that stays inside works, through the validator and the Fs.
	p, err := teammem.ValidateTeamMemKey(fsys, "/", "inside/ok.md")
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(fsys, p, []byte("in"), 0o644))
	got, err = os.ReadFile(filepath.Join(team, "real", "ok.md"))
	require.NoError(t, err)
	assert.Equal(t, "in", string(got))
}

func TestDanglingLinkInsideIsTheValidatorsJob(t *testing.T) {
	// os.Root follows an in-root dangling link on create; the validator
	// must be run in front to refuse it.
	fsys, team, _ := setup(t)
	require.NoError(t, os.Symlink("target.md", filepath.Join(team, "ptr.md")))
	_, err := teammem.ValidateTeamMemKey(fsys, "/", "ptr.md")
	var pte *teammem.PathTraversalError
	require.ErrorAs(t, err, &pte)
	assert.Equal(t, memdir.ReasonDangling, pte.Reason)
	require.NoError(t, afero.WriteFile(fsys, "ptr.md", []byte("x"), 0o644), "documented: os.Root allows it")
	_, err = os.Stat(filepath.Join(team, "target.md"))
	assert.NoError(t, err, "and the write stays inside the root")
}

func TestHostileKeysNeverLeaveTheRoot(t *testing.T) {
	fsys, team, outside := setup(t)
	keys, err := hostile.Keys()
	require.NoError(t, err)
	for _, k := range keys {
		_, verr := teammem.ValidateTeamMemKey(fsys, "/", k.Key)
		assert.Error(t, verr, "%q", k.Key)
		// Even without the validator, a raw write cannot escape.
		_ = fsys.MkdirAll(filepath.Dir(k.Key), 0o755)
		_ = afero.WriteFile(fsys, k.Key, []byte("x"), 0o644)
	}
	assertEmptyDir(t, outside)
	_, err = os.Stat(filepath.Join(filepath.Dir(team), "etc"))
	assert.True(t, os.IsNotExist(err))
}

func TestSwapRaceNeverWritesOutside(t *testing.T) {
	fsys, team, outside := setup(t)
	sub := filepath.Join(team, "sub")
	parked := filepath.Join(team, "parked")
	require.NoError(t, os.MkdirAll(sub, 0o755))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps, writes, refused atomic.Int64
	wg.Go(func() {
		// Swap sub between a real directory and a link to outside.
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := os.Rename(sub, parked); err == nil {
				_ = os.Symlink(outside, sub)
				_ = os.Remove(sub)
				_ = os.Rename(parked, sub)
				swaps.Add(1)
			}
		}
	})
	for w := 0; w < 2; w++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Check, then write: the swap can land in between, and the
				// confined Fs must still refuse.
				if _, err := teammem.ValidateTeamMemKey(fsys, "/", "sub/f.md"); err != nil {
					refused.Add(1)
					continue
				}
				if err := afero.WriteFile(fsys, "sub/f.md", []byte("payload"), 0o644); err != nil {
					refused.Add(1)
					continue
				}
				writes.Add(1)
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("swaps %d, writes %d, refused %d", swaps.Load(), writes.Load(), refused.Load())
	require.Greater(t, swaps.Load(), int64(10), "the race must actually run")
	require.Greater(t, writes.Load(), int64(0))
	assertEmptyDir(t, outside)
}

func TestOsFsWouldEscape(t *testing.T) {
	// The same write through afero's BasePathFs lands outside: the reason
	// this package exists.
	_, team, outside := setup(t)
	require.NoError(t, os.Symlink(outside, filepath.Join(team, "sub")))
	base := afero.NewBasePathFs(afero.NewOsFs(), team)
	require.NoError(t, afero.WriteFile(base, "sub/leak.md", []byte("x"), 0o644))
	_, err := os.Stat(filepath.Join(outside, "leak.md"))
	assert.NoError(t, err, "BasePathFs follows the link out")
	fsys, err := rootfs.New(team)
	require.NoError(t, err)
	defer fsys.Close()
	require.Error(t, afero.WriteFile(fsys, "sub/leak2.md", []byte("x"), 0o644))
	_, err = os.Stat(filepath.Join(outside, "leak2.md"))
	assert.True(t, os.IsNotExist(err), "rootfs refuses the same write")
}

package filelock

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLockExcludes: goroutines taking the lock never hold it at the same
// time, on the real disk (flock) and on afero.MemMapFs (whose exclusive
// create is not atomic: the in-process lock excludes there).
func TestLockExcludes(t *testing.T) {
	for name, fsys := range map[string]afero.Fs{"os": afero.NewOsFs(), "mem": afero.NewMemMapFs()} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, fsys.MkdirAll(dir, 0o755))
			target := filepath.Join(dir, "MEMORY.md")
			var inFlight, overlaps, total atomic.Int32
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 50 {
						unlock, err := Lock(context.Background(), fsys, target)
						if !assert.NoError(t, err) {
							return
						}
						if inFlight.Add(1) != 1 {
							overlaps.Add(1)
						}
						time.Sleep(10 * time.Microsecond)
						total.Add(1)
						inFlight.Add(-1)
						unlock()
					}
				})
			}
			wg.Wait()
			assert.Equal(t, int32(400), total.Load())
			assert.Zero(t, overlaps.Load(), "two holders at once")
		})
	}
}

// On a MemMapFs the in-process lock waits as long as ctx allows, no more.
func TestInProcessLockHonoursTheContext(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, fsys.MkdirAll("/m", 0o755))
	unlock, err := Lock(context.Background(), fsys, "/m/MEMORY.md")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = Lock(ctx, fsys, "/m/MEMORY.md")
	assert.ErrorIs(t, err, ErrTimeout)
	unlock()
	again, err := Lock(context.Background(), fsys, "/m/MEMORY.md")
	require.NoError(t, err)
	again()
	other, err := Lock(context.Background(), afero.NewMemMapFs(), "/m/MEMORY.md")
	require.NoError(t, err, "another filesystem has locks of its own")
	other()
}

func TestLockTimesOutAndBreaksStaleLocks(t *testing.T) {
	fsys := afero.NewMemMapFs()
	unlock, err := Lock(context.Background(), fsys, "/m/MEMORY.md")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = Lock(ctx, fsys, "/m/MEMORY.md")
	assert.ErrorIs(t, err, ErrTimeout)
	unlock()

	// A lock file left by a holder that died long ago is taken over.
	require.NoError(t, afero.WriteFile(fsys, Name("/m/MEMORY.md"), nil, 0o644))
	old := time.Now().Add(-2 * StaleAfter)
	require.NoError(t, fsys.Chtimes(Name("/m/MEMORY.md"), old, old))
	unlock, err = Lock(context.Background(), fsys, "/m/MEMORY.md")
	require.NoError(t, err)
	unlock()
	assert.Equal(t, "/m/.MEMORY.md.lock", Name("/m/MEMORY.md"))
}

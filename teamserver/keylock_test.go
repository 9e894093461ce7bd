package teamserver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyLocks lets one writer of a key in at a time, lets other keys
// through, gives up when the context ends, and forgets a key nobody
// holds or waits for.
func TestKeyLocks(t *testing.T) {
	var k keyLocks
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			unlock, err := k.lock(context.Background(), "a")
			if !assert.NoError(t, err) {
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, most.Load(), "one writer of a key at a time")

	unlockA, err := k.lock(context.Background(), "a")
	require.NoError(t, err)
	unlockB, err := k.lock(context.Background(), "b")
	require.NoError(t, err, "another key is not held up")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = k.lock(ctx, "a")
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a waiter gives up when its context ends")
	unlockA()
	unlockB()
	assert.Empty(t, k.byKey, "a key nobody holds or waits for is forgotten")
}

// TestStorageFaultClassification: the drivers' words for a full disk and
// a read-only database are told apart from any other failure.
func TestStorageFaultClassification(t *testing.T) {
	for msg, want := range map[string]error{
		"database or disk is full (13)":                            ErrStorageFull,
		"write /srv/team.db-wal: no space left on device":          ErrStorageFull,
		"ERROR: could not extend file (SQLSTATE 53100)":            ErrStorageFull,
		"attempt to write a readonly database (8)":                 ErrStoreReadOnly,
		"open /srv/team.db: read-only file system":                 ErrStoreReadOnly,
		"cannot execute INSERT in a read-only transaction (25006)": ErrStoreReadOnly,
		"database is locked (5) (SQLITE_BUSY)":                     ErrOverloaded,
	} {
		got := overloaded(errors.New(msg))
		assert.ErrorIs(t, got, want, msg)
	}
	assert.Nil(t, overloaded(nil))
	other := errors.New("syntax error")
	assert.Equal(t, other, overloaded(other))
}

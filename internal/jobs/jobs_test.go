package jobs

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type key struct{}

func TestOneAtATimeAndTheLatestHeldJobWins(t *testing.T) {
	r := New()
	defer r.Close()
	release := make(chan struct{})
	var mu sync.Mutex
	var ran []string
	job := func(name string, wait bool) Prepare {
		return func(held bool) func(context.Context) {
			return func(ctx context.Context) {
				if wait {
					<-release
				}
				mu.Lock()
				ran = append(ran, name)
				mu.Unlock()
			}
		}
	}
	assert.Equal(t, Started, r.Offer(context.Background(), job("first", true), nil))
	assert.True(t, r.Running())
	assert.Equal(t, Held, r.Offer(context.Background(), job("second", false), nil))
	assert.Equal(t, Held, r.Offer(context.Background(), job("third", false), nil))
	assert.Equal(t, Busy, r.Try(context.Background(), job("tried", false)))
	close(release)
	require.NoError(t, r.Drain(context.Background()))
	assert.Equal(t, []string{"first", "third"}, ran, "the held job is the latest offer")
	assert.False(t, r.Running())
}

func TestJobsKeepValuesNotCancellation(t *testing.T) {
	r := New()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	got := make(chan any, 1)
	r.Offer(ctx, func(bool) func(context.Context) {
		return func(ctx context.Context) {
			cancel() // the offering call ends
			time.Sleep(10 * time.Millisecond)
			got <- []any{ctx.Value(key{}), ctx.Err()}
		}
	}, nil)
	assert.Equal(t, []any{"v", nil}, <-got)
	r.Close()
}

func TestCloseCancelsDropsAndIsIdempotent(t *testing.T) {
	before := runtime.NumGoroutine()
	r := New()
	started := make(chan struct{})
	r.Offer(context.Background(), func(bool) func(context.Context) {
		return func(ctx context.Context) { close(started); <-ctx.Done() }
	}, nil)
	heldRan, heldSeen := false, false
	r.Offer(context.Background(), func(bool) func(context.Context) { return func(context.Context) { heldRan = true } }, func() { heldSeen = true })
	<-started
	r.Close()
	r.Close()
	assert.False(t, heldRan, "a held job is dropped by Close")
	assert.True(t, heldSeen, "onHeld is told")
	assert.Equal(t, Closed, r.Offer(context.Background(), func(bool) func(context.Context) { return func(context.Context) {} }, nil))
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "no goroutine left")
}

func TestSkippedAndDrainTimeout(t *testing.T) {
	r := New()
	defer r.Close()
	assert.Equal(t, Skipped, r.Offer(context.Background(), func(bool) func(context.Context) { return nil }, nil))
	require.NoError(t, r.Drain(context.Background()))
	block := make(chan struct{})
	r.Offer(context.Background(), func(bool) func(context.Context) { return func(context.Context) { <-block } }, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, r.Drain(ctx), context.DeadlineExceeded)
	close(block)
	require.NoError(t, r.Drain(context.Background()))
}

// Package storetest is the conformance suite every server.Store must
// pass: run it from the store's own tests with a constructor.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/teammem"
	"github.com/agentmem/agentmem/teammem/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)

// Run runs the suite; newStore returns a fresh, empty store.
func Run(t *testing.T, newStore func(t *testing.T) server.Store) {
	ctx := context.Background()
	repo := server.Repo{Tenant: "acme", Name: "acme/shop"}
	put := func(t *testing.T, s server.Store, req server.PutRequest) server.Snapshot {
		t.Helper()
		if req.Now.IsZero() {
			req.Now = t0
		}
		snap, err := s.Put(ctx, repo, req)
		require.NoError(t, err)
		return snap
	}

	t.Run("empty", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Get(ctx, repo, true)
		assert.ErrorIs(t, err, server.ErrNotFound)
	})

	t.Run("put and get", func(t *testing.T) {
		s := newStore(t)
		snap := put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "alpha", "team/日本.md": "ünïcode ✓"}})
		assert.Equal(t, int64(1), snap.Version)
		assert.Nil(t, snap.Entries)
		want := map[string]string{"a.md": teammem.EntryChecksum("alpha"), "team/日本.md": teammem.EntryChecksum("ünïcode ✓")}
		assert.Equal(t, want, snap.Checksums)
		assert.Equal(t, teammem.RepoChecksum(want), snap.Checksum)
		assert.True(t, snap.LastModified.Equal(t0))

		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a.md": "alpha", "team/日本.md": "ünïcode ✓"}, got.Entries)
		assert.Equal(t, snap.Checksum, got.Checksum)
		assert.Equal(t, int64(1), got.Version)
		hashes, err := s.Get(ctx, repo, false)
		require.NoError(t, err)
		assert.Nil(t, hashes.Entries)
		assert.Equal(t, want, hashes.Checksums)
	})

	t.Run("upsert keeps absent keys", func(t *testing.T) {
		s := newStore(t)
		put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "1", "b.md": "2"}})
		snap := put(t, s, server.PutRequest{Entries: map[string]string{"b.md": "two", "c.md": "3"}})
		assert.Equal(t, int64(2), snap.Version)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a.md": "1", "b.md": "two", "c.md": "3"}, got.Entries)
	})

	t.Run("if-match", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Put(ctx, repo, server.PutRequest{IfMatch: "sha256:abc", Entries: map[string]string{"a.md": "x"}, Now: t0})
		assert.ErrorIs(t, err, server.ErrPreconditionFailed, "If-Match on a repo without data")
		first := put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "1"}})
		second := put(t, s, server.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"a.md": "2"}})
		_, err = s.Put(ctx, repo, server.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"a.md": "3"}, Now: t0})
		assert.ErrorIs(t, err, server.ErrPreconditionFailed)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, "2", got.Entries["a.md"], "a refused write changes nothing")
		assert.Equal(t, second.Version, got.Version)
	})

	t.Run("same content keeps the checksum", func(t *testing.T) {
		// The ETag is a function of the content, not of the history.
		s := newStore(t)
		first := put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "x"}})
		again := put(t, s, server.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"a.md": "x"}})
		assert.Equal(t, first.Checksum, again.Checksum)
		assert.Equal(t, first.Version+1, again.Version)
	})

	t.Run("entry limit", func(t *testing.T) {
		s := newStore(t)
		put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "1", "b.md": "2"}, MaxEntries: 3})
		_, err := s.Put(ctx, repo, server.PutRequest{Entries: map[string]string{"c.md": "3", "d.md": "4"}, MaxEntries: 3, Now: t0})
		var tooMany *server.TooManyEntriesError
		require.ErrorAs(t, err, &tooMany)
		assert.Equal(t, 3, tooMany.Max)
		assert.Equal(t, 4, tooMany.Received)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Len(t, got.Entries, 2, "nothing of a refused write is kept")
		put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "updated", "c.md": "3"}, MaxEntries: 3})
	})

	t.Run("tombstones", func(t *testing.T) {
		s := newStore(t)
		put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "1", "b.md": "2"}})
		snap := put(t, s, server.PutRequest{Deletes: []string{"a.md", "never.md"}, Now: t0.Add(time.Minute)})
		assert.Equal(t, map[string]int64{"a.md": t0.Add(time.Minute).UnixMilli()}, snap.Tombstones)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"b.md": "2"}, got.Entries)
		assert.Equal(t, teammem.RepoChecksum(got.Checksums), got.Checksum)
		put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "back"}})
		got, err = s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Empty(t, got.Tombstones, "writing a key again clears its tombstone")
	})

	t.Run("tenants are separate", func(t *testing.T) {
		s := newStore(t)
		put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "acme"}})
		other := server.Repo{Tenant: "globex", Name: repo.Name}
		_, err := s.Get(ctx, other, true)
		assert.ErrorIs(t, err, server.ErrNotFound)
	})

	t.Run("concurrent conditional puts: one wins", func(t *testing.T) {
		s := newStore(t)
		base := put(t, s, server.PutRequest{Entries: map[string]string{"a.md": "0"}})
		const n = 8
		var wins, conflicts int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Go(func() {
				// Every value differs from the base: a write of the same
				// content would keep the checksum, and so the If-Match.
				_, err := s.Put(ctx, repo, server.PutRequest{IfMatch: base.Checksum, Entries: map[string]string{"a.md": fmt.Sprint("v", i)}, Now: t0})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, server.ErrPreconditionFailed):
					conflicts++
				default:
					t.Errorf("unexpected error: %v", err)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, wins)
		assert.Equal(t, n-1, conflicts)
	})

	t.Run("concurrent puts keep the checksum consistent", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Go(func() {
				for i := 0; i < 10; i++ {
					_, err := s.Put(ctx, repo, server.PutRequest{Entries: map[string]string{fmt.Sprintf("k%d.md", i%3): fmt.Sprintf("%d-%d", w, i)}, Now: t0})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, int64(40), got.Version, "every write counted once")
		sums := map[string]string{}
		for k, v := range got.Entries {
			sums[k] = teammem.EntryChecksum(v)
		}
		assert.Equal(t, sums, got.Checksums)
		assert.Equal(t, teammem.RepoChecksum(sums), got.Checksum)
	})
}

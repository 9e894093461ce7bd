// Package storetest is the conformance suite every teamserver.TeamStore
// must pass, and of the other protocols a store may have: run it from the
// store's own tests with a constructor.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)

// Run runs the suite; newStore returns a fresh, empty store.
func Run(t *testing.T, newStore func(t *testing.T) teamserver.TeamStore) {
	ctx := context.Background()
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	put := func(t *testing.T, s teamserver.TeamStore, req teamserver.PutRequest) teamserver.Snapshot {
		t.Helper()
		if req.Now.IsZero() {
			req.Now = t0
		}
		snap, err := s.Put(ctx, repo, req)
		require.NoError(t, err)
		return snap
	}

	t.Run("identity", func(t *testing.T) {
		a, b := newStore(t), newStore(t)
		require.NotEmpty(t, a.ID(), "a store has an identity from its creation")
		assert.Equal(t, a.ID(), a.ID(), "the identity never changes")
		put(t, a, teamserver.PutRequest{Entries: map[string]string{"a.md": "alpha"}})
		assert.Equal(t, a.ID(), a.ID(), "a write does not change the identity")
		assert.NotEqual(t, a.ID(), b.ID(), "two new stores have different identities")
	})

	t.Run("list repos", func(t *testing.T) {
		s := newStore(t)
		rl, ok := s.(teamserver.RepoLister)
		if !ok {
			return // listing is optional: the console needs it, sync does not
		}
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "alpha", "b.md": "beta"}})
		_, err := s.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/api"}, teamserver.PutRequest{Entries: map[string]string{"c.md": "gamma"}, Now: t0})
		require.NoError(t, err)
		_, err = s.Put(ctx, teamserver.Repo{Tenant: "other", Name: "acme/secret"}, teamserver.PutRequest{Entries: map[string]string{"d.md": "delta"}, Now: t0})
		require.NoError(t, err)
		repos, err := rl.ListRepos(ctx, "acme")
		require.NoError(t, err)
		require.Len(t, repos, 2, "another tenant's repo is not listed")
		assert.Equal(t, "acme/api", repos[0].Name)
		assert.Equal(t, 1, repos[0].Entries)
		assert.Equal(t, "acme/shop", repos[1].Name)
		assert.Equal(t, 2, repos[1].Entries)
		assert.Equal(t, int64(1), repos[1].Version)
		assert.True(t, repos[1].LastModified.Equal(t0))
	})

	t.Run("empty", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Get(ctx, repo, true)
		assert.ErrorIs(t, err, teamserver.ErrNotFound)
	})

	t.Run("put and get", func(t *testing.T) {
		s := newStore(t)
		snap := put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "alpha", "team/日本.md": "ünïcode ✓"}})
		assert.Equal(t, int64(1), snap.Version)
		assert.Nil(t, snap.Entries)
		want := map[string]string{"a.md": teamwire.EntryChecksum("alpha"), "team/日本.md": teamwire.EntryChecksum("ünïcode ✓")}
		assert.Equal(t, want, snap.Checksums)
		assert.Equal(t, teamwire.RepoChecksum(want), snap.Checksum)
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
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "1", "b.md": "2"}})
		snap := put(t, s, teamserver.PutRequest{Entries: map[string]string{"b.md": "two", "c.md": "3"}})
		assert.Equal(t, int64(2), snap.Version)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a.md": "1", "b.md": "two", "c.md": "3"}, got.Entries)
	})

	t.Run("if-match", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Put(ctx, repo, teamserver.PutRequest{IfMatch: "sha256:abc", Entries: map[string]string{"a.md": "x"}, Now: t0})
		assert.ErrorIs(t, err, teamserver.ErrPreconditionFailed, "If-Match on a repo without data")
		first := put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "1"}})
		second := put(t, s, teamserver.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"a.md": "2"}})
		_, err = s.Put(ctx, repo, teamserver.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"a.md": "3"}, Now: t0})
		assert.ErrorIs(t, err, teamserver.ErrPreconditionFailed)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, "2", got.Entries["a.md"], "a refused write changes nothing")
		assert.Equal(t, second.Version, got.Version)
	})

	t.Run("same content keeps the checksum", func(t *testing.T) {
		// The ETag is a function of the content, not of the history.
		s := newStore(t)
		first := put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "x"}})
		again := put(t, s, teamserver.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"a.md": "x"}})
		assert.Equal(t, first.Checksum, again.Checksum)
		assert.Equal(t, first.Version, again.Version, "a write that changes nothing records nothing")
	})

	t.Run("an empty put creates nothing", func(t *testing.T) {
		s := newStore(t)
		snap, err := s.Put(ctx, repo, teamserver.PutRequest{Now: t0})
		require.NoError(t, err)
		assert.Equal(t, int64(0), snap.Version)
		assert.Equal(t, teamwire.RepoChecksum(nil), snap.Checksum)
		_, err = s.Get(ctx, repo, false)
		assert.ErrorIs(t, err, teamserver.ErrNotFound)
		_, err = s.Put(ctx, repo, teamserver.PutRequest{Deletes: []string{"nothing.md"}, Now: t0})
		require.NoError(t, err)
		_, err = s.Head(ctx, repo)
		assert.ErrorIs(t, err, teamserver.ErrNotFound)
	})

	t.Run("head and stream", func(t *testing.T) {
		s := newStore(t)
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"b.md": "2", "a.md": "1", "c.md": "3"}})
		snap := put(t, s, teamserver.PutRequest{Deletes: []string{"c.md"}})
		head, err := s.Head(ctx, repo)
		require.NoError(t, err)
		assert.Equal(t, snap.Version, head.Version)
		assert.Equal(t, snap.Checksum, head.Checksum)
		var order []string
		var seenHead teamserver.Snapshot
		streamed, err := s.Stream(ctx, repo, func(h teamserver.Snapshot) error { seenHead = h; return nil }, func(k, v string) error {
			order = append(order, k+"="+v)
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, snap.Checksum, seenHead.Checksum)
		assert.Equal(t, []string{"a.md=1", "b.md=2"}, order, "key order")
		assert.Equal(t, snap.Checksums, streamed.Checksums)
		assert.Contains(t, streamed.Tombstones, "c.md")
		stop := errors.New("stop")
		_, err = s.Stream(ctx, repo, func(teamserver.Snapshot) error { return nil }, func(string, string) error { return stop })
		assert.ErrorIs(t, err, stop)
		_, err = s.Stream(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/none"}, func(teamserver.Snapshot) error { return nil }, func(string, string) error { return nil })
		assert.ErrorIs(t, err, teamserver.ErrNotFound)
	})

	t.Run("history, revisions and the log", func(t *testing.T) {
		s := newStore(t)
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"deploy.md": "Tuesdays"}, Author: "alice", Now: t0})
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"deploy.md": "Fridays!", "other.md": "x"}, Author: "bob", Now: t0.Add(time.Hour)})
		put(t, s, teamserver.PutRequest{Deletes: []string{"deploy.md"}, Author: "carol", Now: t0.Add(2 * time.Hour)})
		revs, err := s.History(ctx, repo, "deploy.md", 10)
		require.NoError(t, err)
		require.Len(t, revs, 3)
		assert.Equal(t, []int64{3, 2, 1}, []int64{revs[0].Version, revs[1].Version, revs[2].Version}, "newest first")
		assert.Equal(t, []string{"carol", "bob", "alice"}, []string{revs[0].Author, revs[1].Author, revs[2].Author})
		assert.True(t, revs[0].Deleted)
		assert.Empty(t, revs[0].Checksum)
		assert.Equal(t, teamwire.EntryChecksum("Tuesdays"), revs[2].Checksum)
		assert.True(t, revs[1].Time.Equal(t0.Add(time.Hour)))
		assert.Empty(t, revs[1].Content, "History lists, Revision reads")
		old, err := s.Revision(ctx, repo, "deploy.md", 1)
		require.NoError(t, err)
		assert.Equal(t, "Tuesdays", old.Content)
		assert.Equal(t, "alice", old.Author)
		_, err = s.Revision(ctx, repo, "deploy.md", 99)
		assert.ErrorIs(t, err, teamserver.ErrNoRevision)
		limited, err := s.History(ctx, repo, "deploy.md", 1)
		require.NoError(t, err)
		assert.Len(t, limited, 1)

		log, err := s.Log(ctx, repo, 0, 10)
		require.NoError(t, err)
		require.Len(t, log, 3)
		assert.Equal(t, teamserver.Change{Version: 2, Time: log[1].Time, Author: "bob", Keys: []string{"deploy.md", "other.md"},
			Ops: []string{teamserver.KeyChanged, teamserver.KeyCreated}}, log[1])
		assert.True(t, log[1].Time.Equal(t0.Add(time.Hour)))
		assert.Equal(t, []string{teamserver.KeyDeleted}, log[0].Ops)
		assert.Equal(t, []string{teamserver.KeyCreated}, log[2].Ops)
		since, err := s.Log(ctx, repo, 2, 10)
		require.NoError(t, err)
		require.Len(t, since, 1)
		assert.Equal(t, int64(3), since[0].Version)

		// A restore is an ordinary conditional put of the old content.
		head, err := s.Head(ctx, repo)
		require.NoError(t, err)
		restored, err := s.Put(ctx, repo, teamserver.PutRequest{IfMatch: head.Checksum, Entries: map[string]string{"deploy.md": old.Content}, Author: "alice", Now: t0.Add(3 * time.Hour)})
		require.NoError(t, err)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, "Tuesdays", got.Entries["deploy.md"])
		assert.Equal(t, restored.Checksum, got.Checksum)
	})

	t.Run("retention", func(t *testing.T) {
		s := newStore(t)
		r := teamserver.Retention{HistoryKeep: 2, TombstoneAge: 24 * time.Hour, MaxTombstones: 2}
		for i := range 4 {
			put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": fmt.Sprint(i)}, Retention: r, Now: t0.Add(time.Duration(i) * time.Minute)})
		}
		revs, err := s.History(ctx, repo, "a.md", 10)
		require.NoError(t, err)
		assert.Len(t, revs, 2, "the newest HistoryKeep revisions")
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"x.md": "1", "y.md": "2", "z.md": "3"}, Retention: r})
		put(t, s, teamserver.PutRequest{Deletes: []string{"x.md"}, Retention: r, Now: t0.Add(time.Hour)})
		put(t, s, teamserver.PutRequest{Deletes: []string{"y.md"}, Retention: r, Now: t0.Add(2 * time.Hour)})
		snap := put(t, s, teamserver.PutRequest{Deletes: []string{"z.md"}, Retention: r, Now: t0.Add(3 * time.Hour)})
		assert.Equal(t, []string{"y.md", "z.md"}, slices.Sorted(maps.Keys(snap.Tombstones)), "at most MaxTombstones, the newest")
		snap = put(t, s, teamserver.PutRequest{Entries: map[string]string{"later.md": "1"}, Retention: r, Now: t0.Add(48 * time.Hour)})
		assert.Empty(t, snap.Tombstones, "tombstones past their age are compacted")
		got, err := s.Get(ctx, repo, false)
		require.NoError(t, err)
		assert.Empty(t, got.Tombstones)
	})

	t.Run("repo limit", func(t *testing.T) {
		s := newStore(t)
		for i := range 2 {
			_, err := s.Put(ctx, teamserver.Repo{Tenant: "acme", Name: fmt.Sprintf("acme/r%d", i)}, teamserver.PutRequest{Entries: map[string]string{"a.md": "1"}, MaxRepos: 2, Now: t0})
			require.NoError(t, err)
		}
		_, err := s.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/r2"}, teamserver.PutRequest{Entries: map[string]string{"a.md": "1"}, MaxRepos: 2, Now: t0})
		assert.ErrorIs(t, err, teamserver.ErrTooManyRepos)
		_, err = s.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/r0"}, teamserver.PutRequest{Entries: map[string]string{"b.md": "1"}, MaxRepos: 2, Now: t0})
		assert.NoError(t, err, "an existing repo still takes writes")
		_, err = s.Put(ctx, teamserver.Repo{Tenant: "globex", Name: "globex/r0"}, teamserver.PutRequest{Entries: map[string]string{"a.md": "1"}, MaxRepos: 2, Now: t0})
		assert.NoError(t, err, "per tenant")
	})

	t.Run("reads are snapshots", func(t *testing.T) {
		s := newStore(t)
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "0", "b.md": "0"}})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := s.Put(ctx, repo, teamserver.PutRequest{Entries: map[string]string{"a.md": fmt.Sprint(i), "b.md": fmt.Sprint(i)}, Now: t0})
				if !assert.NoError(t, err) {
					return
				}
			}
		})
		for range 200 {
			got, err := s.Get(ctx, repo, true)
			require.NoError(t, err)
			sums := map[string]string{}
			for k, v := range got.Entries {
				sums[k] = teamwire.EntryChecksum(v)
			}
			if !assert.Equal(t, got.Checksum, teamwire.RepoChecksum(sums), "a torn read") {
				break
			}
			assert.Equal(t, got.Entries["a.md"], got.Entries["b.md"])
			var streamed []string
			snap, err := s.Stream(ctx, repo, func(teamserver.Snapshot) error { return nil }, func(k, v string) error { streamed = append(streamed, v); return nil })
			require.NoError(t, err)
			if assert.Len(t, streamed, 2) {
				assert.Equal(t, streamed[0], streamed[1], "a torn stream")
				assert.Equal(t, teamwire.RepoChecksum(snap.Checksums), snap.Checksum)
			}
		}
		close(stop)
		wg.Wait()
	})

	t.Run("entry limit", func(t *testing.T) {
		s := newStore(t)
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "1", "b.md": "2"}, MaxEntries: 3})
		_, err := s.Put(ctx, repo, teamserver.PutRequest{Entries: map[string]string{"c.md": "3", "d.md": "4"}, MaxEntries: 3, Now: t0})
		var tooMany *teamserver.TooManyEntriesError
		require.ErrorAs(t, err, &tooMany)
		assert.Equal(t, 3, tooMany.Max)
		assert.Equal(t, 4, tooMany.Received)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Len(t, got.Entries, 2, "nothing of a refused write is kept")
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "updated", "c.md": "3"}, MaxEntries: 3})
	})

	t.Run("tombstones", func(t *testing.T) {
		s := newStore(t)
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "1", "b.md": "2"}})
		snap := put(t, s, teamserver.PutRequest{Deletes: []string{"a.md", "never.md"}, Now: t0.Add(time.Minute)})
		assert.Equal(t, map[string]int64{"a.md": t0.Add(time.Minute).UnixMilli()}, snap.Tombstones)
		got, err := s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"b.md": "2"}, got.Entries)
		assert.Equal(t, teamwire.RepoChecksum(got.Checksums), got.Checksum)
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "back"}})
		got, err = s.Get(ctx, repo, true)
		require.NoError(t, err)
		assert.Empty(t, got.Tombstones, "writing a key again clears its tombstone")
	})

	t.Run("tenants are separate", func(t *testing.T) {
		s := newStore(t)
		put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "acme"}})
		other := teamserver.Repo{Tenant: "globex", Name: repo.Name}
		_, err := s.Get(ctx, other, true)
		assert.ErrorIs(t, err, teamserver.ErrNotFound)
	})

	t.Run("concurrent conditional puts: one wins", func(t *testing.T) {
		s := newStore(t)
		base := put(t, s, teamserver.PutRequest{Entries: map[string]string{"a.md": "0"}})
		const n = 8
		var wins, conflicts int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Go(func() {
				// Every value differs from the base: a write of the same
				// content would keep the checksum, and so the If-Match.
				_, err := s.Put(ctx, repo, teamserver.PutRequest{IfMatch: base.Checksum, Entries: map[string]string{"a.md": fmt.Sprint("v", i)}, Now: t0})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, teamserver.ErrPreconditionFailed):
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
					_, err := s.Put(ctx, repo, teamserver.PutRequest{Entries: map[string]string{fmt.Sprintf("k%d.md", i%3): fmt.Sprintf("%d-%d", w, i)}, Now: t0})
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
			sums[k] = teamwire.EntryChecksum(v)
		}
		assert.Equal(t, sums, got.Checksums)
		assert.Equal(t, teamwire.RepoChecksum(sums), got.Checksum)
	})
}

// handlerOver is a handler over s, without a rate limit, and a token of
// tenant acme for repos (nil: every repo) and every store.
func handlerOver(t *testing.T, s teamserver.TeamStore, repos []string) (*teamserver.Handler, string) {
	t.Helper()
	tok, g, err := teamserver.NewToken("acme", repos, "*")
	require.NoError(t, err)
	h, err := teamserver.NewHandler(s, teamserver.Options{Tokens: []teamserver.TokenGrant{g}, RatePerToken: -1})
	require.NoError(t, err)
	return h, tok
}

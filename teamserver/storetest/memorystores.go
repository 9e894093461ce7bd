package storetest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// apiStatus is the status and error type of a refusal (0 and "" for
// another error or none).
func apiStatus(err error) (int, string) {
	var api *teamserver.APIError
	if errors.As(err, &api) {
		return api.Status, api.Type
	}
	return 0, ""
}

// RunMemoryStores is the conformance suite of teamserver.MemoryStores,
// the store interface of the Memory Stores protocol: stores and their
// tenants, memories with their preconditions, path and folder conflicts,
// the generation, the versions and their redaction. newStores returns a
// fresh, empty store.
func RunMemoryStores(t *testing.T, newStores func(t *testing.T) teamserver.MemoryStores) {
	ctx := context.Background()
	by := teamserver.Actor{Type: "api_actor", ID: "alice"}
	text := func(s string) *string { return &s }
	var limits teamserver.StoreLimits

	t.Run("stores", func(t *testing.T) {
		s := newStores(t)
		a, err := s.CreateMemStore(ctx, "acme", teamserver.MemStore{Name: "notes", Metadata: map[string]string{"k": "v"}}, limits, t0)
		require.NoError(t, err)
		assert.Regexp(t, "^"+teamserver.StoreIDPrefix, a.ID)
		b, err := s.CreateMemStore(ctx, "acme", teamserver.MemStore{Name: "other"}, limits, t0.Add(time.Second))
		require.NoError(t, err)
		_, err = s.CreateMemStore(ctx, "globex", teamserver.MemStore{Name: "theirs"}, limits, t0)
		require.NoError(t, err)

		got, err := s.GetMemStore(ctx, "acme", a.ID)
		require.NoError(t, err)
		assert.Equal(t, "notes", got.Name)
		assert.Equal(t, map[string]string{"k": "v"}, got.Metadata)
		found, err := s.FindMemStore(ctx, "acme", "notes")
		require.NoError(t, err)
		assert.Equal(t, a.ID, found.ID, "a store is found by its name")
		_, err = s.GetMemStore(ctx, "globex", a.ID)
		status, _ := apiStatus(err)
		assert.Equal(t, http.StatusNotFound, status, "another tenant's store does not exist for it")

		all, err := s.ListMemStores(ctx, "acme")
		require.NoError(t, err)
		require.Len(t, all, 2, "a tenant lists its own stores")
		assert.Equal(t, b.ID, all[0].ID, "newest first")

		name := "renamed"
		up, err := s.UpdateMemStore(ctx, "acme", a.ID, teamserver.StorePatch{Name: &name}, t0.Add(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, "renamed", up.Name)
		assert.Equal(t, map[string]string{"k": "v"}, up.Metadata, "a patch keeps what it does not name")

		ar, err := s.ArchiveMemStore(ctx, "acme", a.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		assert.False(t, ar.Archived.IsZero())
		_, err = s.CreateMemory(ctx, "acme", a.ID, teamserver.MemoryWrite{Path: "/x.md", Content: text("x"), By: by}, limits, t0)
		status, _ = apiStatus(err)
		assert.Equal(t, http.StatusBadRequest, status, "an archived store takes no new memory")

		require.NoError(t, s.DeleteMemStore(ctx, "acme", b.ID))
		_, err = s.GetMemStore(ctx, "acme", b.ID)
		status, _ = apiStatus(err)
		assert.Equal(t, http.StatusNotFound, status, "a deleted store is gone")
	})

	t.Run("memories", func(t *testing.T) {
		s := newStores(t)
		st, err := s.CreateMemStore(ctx, "acme", teamserver.MemStore{Name: "notes"}, limits, t0)
		require.NoError(t, err)
		gen := st.Generation
		m, err := s.CreateMemory(ctx, "acme", st.ID, teamserver.MemoryWrite{Path: "/a.md", Content: text("alpha"), By: by}, limits, t0)
		require.NoError(t, err)
		assert.Regexp(t, "^mem_", m.ID)
		assert.Equal(t, hashOf("alpha"), m.SHA256)
		after, err := s.GetMemStore(ctx, "acme", st.ID)
		require.NoError(t, err)
		assert.Greater(t, after.Generation, gen, "a write moves the generation on")
		assert.EqualValues(t, 1, after.Memories)

		_, err = s.CreateMemory(ctx, "acme", st.ID, teamserver.MemoryWrite{Path: "/a.md", Content: text("again"), By: by}, limits, t0)
		_, typ := apiStatus(err)
		assert.Equal(t, storewire.PathConflictType, typ, "a path holds one memory")
		_, err = s.CreateMemory(ctx, "acme", st.ID, teamserver.MemoryWrite{Path: "/a.md/b.md", Content: text("below"), By: by}, limits, t0)
		_, typ = apiStatus(err)
		assert.Equal(t, storewire.FolderConflictType, typ, "a path below a memory's path is refused")

		_, err = s.UpdateMemory(ctx, "acme", st.ID, m.ID, teamserver.MemoryWrite{Content: text("beta"), IfSHA256: hashOf("stale"), By: by}, limits, t0)
		_, typ = apiStatus(err)
		assert.Equal(t, storewire.PreconditionFailedType, typ, "an update on a stale sha256 is refused")
		m2, err := s.UpdateMemory(ctx, "acme", st.ID, m.ID, teamserver.MemoryWrite{Content: text("beta"), IfSHA256: m.SHA256, By: by}, limits, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, hashOf("beta"), m2.SHA256)
		got, err := s.GetMemory(ctx, "acme", st.ID, m.ID)
		require.NoError(t, err)
		assert.Equal(t, "beta", got.Content)

		_, err = s.CreateMemory(ctx, "acme", st.ID, teamserver.MemoryWrite{Path: "/b.md", Content: text("bravo"), By: by}, limits, t0)
		require.NoError(t, err)
		var paths []string
		var head teamserver.MemStore
		require.NoError(t, s.EachMemory(ctx, "acme", st.ID, true, func(h teamserver.MemStore) error { head = h; return nil },
			func(m teamserver.Memory) error {
				paths = append(paths, m.Path)
				assert.Equal(t, hashOf(m.Content), m.SHA256, "content and its hash come from one read")
				return nil
			}))
		assert.ElementsMatch(t, []string{"/a.md", "/b.md"}, paths)
		assert.Equal(t, st.ID, head.ID)

		err = s.DeleteMemory(ctx, "acme", st.ID, m.ID, hashOf("stale"), by, t0)
		_, typ = apiStatus(err)
		assert.Equal(t, storewire.PreconditionFailedType, typ, "a delete on a stale sha256 is refused")
		require.NoError(t, s.DeleteMemory(ctx, "acme", st.ID, m.ID, m2.SHA256, by, t0.Add(2*time.Second)))
		_, err = s.GetMemory(ctx, "acme", st.ID, m.ID)
		status, _ := apiStatus(err)
		assert.Equal(t, http.StatusNotFound, status)
		_, err = s.GetMemory(ctx, "globex", st.ID, m.ID)
		status, _ = apiStatus(err)
		assert.Equal(t, http.StatusNotFound, status, "another tenant reads nothing")
	})

	t.Run("versions", func(t *testing.T) {
		s := newStores(t)
		st, err := s.CreateMemStore(ctx, "acme", teamserver.MemStore{Name: "notes"}, limits, t0)
		require.NoError(t, err)
		m, err := s.CreateMemory(ctx, "acme", st.ID, teamserver.MemoryWrite{Path: "/a.md", Content: text("one"), By: by}, limits, t0)
		require.NoError(t, err)
		_, err = s.UpdateMemory(ctx, "acme", st.ID, m.ID, teamserver.MemoryWrite{Content: text("two"), By: by}, limits, t0.Add(time.Second))
		require.NoError(t, err)
		require.NoError(t, s.DeleteMemory(ctx, "acme", st.ID, m.ID, "", by, t0.Add(2*time.Second)))
		vs, err := s.ListVersions(ctx, "acme", st.ID, teamserver.VersionFilter{MemoryID: m.ID, Limit: 10, Content: true})
		require.NoError(t, err)
		require.Len(t, vs, 3, "every change is kept, the delete too")
		assert.Equal(t, []string{teamserver.OpDeleted, teamserver.OpModified, teamserver.OpCreated}, []string{vs[0].Operation, vs[1].Operation, vs[2].Operation}, "newest first")
		assert.Equal(t, "one", vs[2].Content)
		assert.Equal(t, "alice", vs[2].By.ID)

		v, err := s.GetVersion(ctx, "acme", st.ID, vs[2].ID)
		require.NoError(t, err)
		assert.Equal(t, "one", v.Content)
		red, err := s.RedactVersion(ctx, "acme", st.ID, vs[2].ID, by, t0.Add(time.Hour))
		require.NoError(t, err)
		assert.False(t, red.Redacted.IsZero())
		again, err := s.GetVersion(ctx, "acme", st.ID, vs[2].ID)
		require.NoError(t, err)
		assert.Empty(t, again.Content, "a redacted version loses its content")
		assert.Empty(t, again.Path, "and its path")
	})
}

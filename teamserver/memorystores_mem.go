package teamserver

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"
)

// memStores holds memoryStore's memory stores (MemoryStores), under its
// lock: the same rules as sqlStore's, without a database.
type memStores struct {
	byID map[string]*memStoreRec
	seq  int64
}

type memStoreRec struct {
	st       MemStore
	memories map[string]Memory // by ID, with content
	versions []MemoryVersion   // oldest first
}

func (m *memStores) get(tenant, id string) (*memStoreRec, error) {
	r := m.byID[id]
	if r == nil || r.st.Tenant != tenant {
		return nil, notFound("memory store")
	}
	return r, nil
}

func (m *memStores) writable(tenant, id string) (*memStoreRec, error) {
	r, err := m.get(tenant, id)
	if err == nil && !r.st.Archived.IsZero() {
		return nil, errArchived
	}
	return r, err
}

// memory finds memory id of a store of tenant (in a store that is not
// archived, when writable).
func (m *memStores) memory(tenant, storeID, id string, writable bool) (*memStoreRec, Memory, error) {
	get := m.get
	if writable {
		get = m.writable
	}
	r, err := get(tenant, storeID)
	if err != nil {
		return nil, Memory{}, err
	}
	mem, ok := r.memories[id]
	if !ok {
		return nil, Memory{}, notFound("memory")
	}
	return r, mem, nil
}

// version finds version id of a store of tenant: its store and index.
func (m *memStores) version(tenant, storeID, id string) (*memStoreRec, int, error) {
	r, err := m.get(tenant, storeID)
	if err != nil {
		return nil, 0, err
	}
	i, err := r.version(id)
	return r, i, err
}

func copyStore(st MemStore) MemStore {
	st.Metadata = maps.Clone(st.Metadata)
	if st.Metadata == nil {
		st.Metadata = map[string]string{}
	}
	return st
}

// CreateMemStore implements MemoryStores.
func (s *memoryStore) CreateMemStore(_ context.Context, tenant string, st MemStore, limits StoreLimits, now time.Time) (MemStore, error) {
	if err := validateStoreFields(&st.Name, &st.Description, st.Metadata); err != nil {
		return MemStore{}, err
	}
	limits = limits.orDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stores.byID == nil {
		s.stores.byID = map[string]*memStoreRec{}
	}
	n := 0
	for _, r := range s.stores.byID {
		if r.st.Tenant == tenant {
			n++
		}
	}
	if n >= limits.MaxStores {
		return MemStore{}, invalid("this organization has reached its limit of %d memory stores", limits.MaxStores)
	}
	t := now.UTC().Truncate(time.Millisecond)
	s.stores.seq++
	st.ID, st.Tenant, st.Created, st.Updated, st.Archived, st.Seq = newID(StoreIDPrefix), tenant, t, t, time.Time{}, s.stores.seq
	st.Generation, st.Memories, st.Bytes = 0, 0, 0
	st = copyStore(st)
	s.stores.byID[st.ID] = &memStoreRec{st: st, memories: map[string]Memory{}}
	return copyStore(st), nil
}

// GetMemStore implements MemoryStores.
func (s *memoryStore) GetMemStore(_ context.Context, tenant, id string) (MemStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.stores.get(tenant, id)
	if err != nil {
		return MemStore{}, err
	}
	return copyStore(r.st), nil
}

// FindMemStore implements MemoryStores: a store ID, or else the name of
// one of tenant's stores (the oldest with that name).
func (s *memoryStore) FindMemStore(_ context.Context, tenant, idOrName string) (MemStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, err := s.stores.get(tenant, idOrName); err == nil {
		return copyStore(r.st), nil
	}
	var found *memStoreRec
	for _, r := range s.stores.byID {
		if r.st.Tenant == tenant && r.st.Name == idOrName && (found == nil || r.st.Seq < found.st.Seq) {
			found = r
		}
	}
	if found == nil {
		return MemStore{}, notFound("memory store")
	}
	return copyStore(found.st), nil
}

// ListMemStores implements MemoryStores: newest first.
func (s *memoryStore) ListMemStores(_ context.Context, tenant string) ([]MemStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MemStore
	for _, r := range s.stores.byID {
		if r.st.Tenant == tenant {
			out = append(out, copyStore(r.st))
		}
	}
	slices.SortFunc(out, func(a, b MemStore) int { return int(b.Seq - a.Seq) })
	return out, nil
}

// UpdateMemStore implements MemoryStores.
func (s *memoryStore) UpdateMemStore(_ context.Context, tenant, id string, p StorePatch, now time.Time) (MemStore, error) {
	if err := validateStoreFields(p.Name, p.Description, p.Metadata); err != nil {
		return MemStore{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.stores.writable(tenant, id)
	if err != nil {
		return MemStore{}, err
	}
	st := copyStore(r.st)
	if err := p.applyTo(&st); err != nil {
		return MemStore{}, err
	}
	st.Updated = now.UTC().Truncate(time.Millisecond)
	r.st = st
	return copyStore(st), nil
}

// ArchiveMemStore implements MemoryStores.
func (s *memoryStore) ArchiveMemStore(_ context.Context, tenant, id string, now time.Time) (MemStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.stores.get(tenant, id)
	if err != nil {
		return MemStore{}, err
	}
	if r.st.Archived.IsZero() {
		r.st.Archived = now.UTC().Truncate(time.Millisecond)
		r.st.Updated = r.st.Archived
	}
	return copyStore(r.st), nil
}

// DeleteMemStore implements MemoryStores.
func (s *memoryStore) DeleteMemStore(_ context.Context, tenant, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.stores.get(tenant, id); err != nil {
		return err
	}
	delete(s.stores.byID, id)
	return nil
}

// GetMemory implements MemoryStores.
func (s *memoryStore) GetMemory(_ context.Context, tenant, storeID, id string) (Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, m, err := s.stores.memory(tenant, storeID, id, false)
	return m, err
}

// EachMemory implements MemoryStores: one snapshot, in path order.
func (s *memoryStore) EachMemory(_ context.Context, tenant, storeID string, withContent bool, head func(MemStore) error, fn func(Memory) error) error {
	s.mu.Lock()
	r, err := s.stores.get(tenant, storeID)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	st := copyStore(r.st)
	all := slices.Collect(maps.Values(r.memories))
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b Memory) int { return strings.Compare(a.Path, b.Path) })
	if err := head(st); err != nil {
		return err
	}
	for _, m := range all {
		if !withContent {
			m.Content = ""
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// pathFree refuses p when another memory has it, or when a memory other
// than selfID has a folder of p as its path or lies below p as a folder
// (sqlStore.pathFree).
func (r *memStoreRec) pathFree(p, selfID string) error {
	for _, m := range r.memories {
		if m.Path == p {
			return pathConflict(m)
		}
	}
	for _, m := range r.memories {
		if m.ID != selfID && (strings.HasPrefix(p, m.Path+"/") || strings.HasPrefix(m.Path, p+"/")) {
			return folderConflict(m)
		}
	}
	return nil
}

// addVersion records m as written by op and returns the version's ID.
func (r *memStoreRec) addVersion(m Memory, op string, by Actor, t time.Time) string {
	seq := int64(1)
	if n := len(r.versions); n > 0 {
		seq = r.versions[n-1].Seq + 1
	}
	v := MemoryVersion{ID: newID(versionIDPrefix), StoreID: m.StoreID, MemoryID: m.ID, Seq: seq, Operation: op,
		Path: m.Path, Content: m.Content, SHA256: m.SHA256, Size: m.Size, Created: t, By: by}
	r.versions = append(r.versions, v)
	return v.ID
}

// changed moves the store's generation on and its counts.
func (r *memStoreRec) changed(memories, bytes int64) {
	r.st.Generation++
	r.st.Memories += memories
	r.st.Bytes += bytes
}

// CreateMemory implements MemoryStores.
func (s *memoryStore) CreateMemory(_ context.Context, tenant, storeID string, w MemoryWrite, limits StoreLimits, now time.Time) (Memory, error) {
	if err := w.check(true); err != nil {
		return Memory{}, err
	}
	limits = limits.orDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.stores.writable(tenant, storeID)
	if err != nil {
		return Memory{}, err
	}
	if err := r.pathFree(w.Path, ""); err != nil {
		return Memory{}, err
	}
	if err := checkRoom(r.st, 1, int64(len(*w.Content)), limits); err != nil {
		return Memory{}, err
	}
	t := now.UTC().Truncate(time.Millisecond)
	m := w.created(storeID, t)
	m.VersionID = r.addVersion(m, OpCreated, w.By, t)
	r.memories[m.ID] = m
	r.changed(1, m.Size)
	return m, nil
}

// UpdateMemory implements MemoryStores, as sqlStore.UpdateMemory.
func (s *memoryStore) UpdateMemory(_ context.Context, tenant, storeID, id string, w MemoryWrite, limits StoreLimits, now time.Time) (Memory, error) {
	if err := w.check(false); err != nil {
		return Memory{}, err
	}
	limits = limits.orDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, cur, err := s.stores.memory(tenant, storeID, id, true)
	if err != nil {
		return Memory{}, err
	}
	next, same, err := w.applyTo(cur)
	if err != nil {
		return Memory{}, err
	}
	if same {
		return cur, nil
	}
	if next.Path != cur.Path {
		if err := r.pathFree(next.Path, id); err != nil {
			return Memory{}, err
		}
	}
	if err := checkRoom(r.st, 0, next.Size-cur.Size, limits); err != nil {
		return Memory{}, err
	}
	next.Updated = now.UTC().Truncate(time.Millisecond)
	next.VersionID = r.addVersion(next, OpModified, w.By, next.Updated)
	r.memories[id] = next
	r.changed(0, next.Size-cur.Size)
	return next, nil
}

// DeleteMemory implements MemoryStores: an archived store's memories may
// still be deleted.
func (s *memoryStore) DeleteMemory(_ context.Context, tenant, storeID, id, ifSHA256 string, by Actor, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, cur, err := s.stores.memory(tenant, storeID, id, false)
	if err != nil {
		return err
	}
	if ifSHA256 != "" && ifSHA256 != cur.SHA256 {
		return preconditionFailed(cur)
	}
	gone := cur
	gone.Content = ""
	r.addVersion(gone, OpDeleted, by, now.UTC().Truncate(time.Millisecond))
	delete(r.memories, id)
	r.changed(-1, -cur.Size)
	return nil
}

// ListVersions implements MemoryStores: newest first.
func (s *memoryStore) ListVersions(_ context.Context, tenant, storeID string, f VersionFilter) ([]MemoryVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.stores.get(tenant, storeID)
	if err != nil {
		return nil, err
	}
	var out []MemoryVersion
	for i := len(r.versions) - 1; i >= 0 && len(out) < f.Limit; i-- {
		v := r.versions[i]
		if (f.MemoryID != "" && v.MemoryID != f.MemoryID) || (f.Operation != "" && v.Operation != f.Operation) ||
			(f.ActorID != "" && v.By.ID != f.ActorID) || (f.Session != "" && v.By.Session != f.Session) ||
			(!f.From.IsZero() && v.Created.Before(f.From)) || (!f.To.IsZero() && v.Created.After(f.To)) ||
			(f.BeforeSeq > 0 && v.Seq >= f.BeforeSeq) {
			continue
		}
		if !f.Content {
			v.Content = ""
		}
		out = append(out, v)
	}
	return out, nil
}

func (r *memStoreRec) version(id string) (int, error) {
	for i, v := range r.versions {
		if v.ID == id {
			return i, nil
		}
	}
	return 0, notFound("memory version")
}

// GetVersion implements MemoryStores.
func (s *memoryStore) GetVersion(_ context.Context, tenant, storeID, id string) (MemoryVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, i, err := s.stores.version(tenant, storeID, id)
	if err != nil {
		return MemoryVersion{}, err
	}
	return r.versions[i], nil
}

// RedactVersion implements MemoryStores, as sqlStore.RedactVersion: who
// redacted it is kept by type and name.
func (s *memoryStore) RedactVersion(_ context.Context, tenant, storeID, id string, by Actor, now time.Time) (MemoryVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, i, err := s.stores.version(tenant, storeID, id)
	if err != nil {
		return MemoryVersion{}, err
	}
	v := &r.versions[i]
	if v.Redacted.IsZero() {
		v.Path, v.Content, v.SHA256, v.Size = "", "", "", 0
		v.Redacted, v.RedactedBy = now.UTC().Truncate(time.Millisecond), Actor{Type: by.Type, ID: by.ID}
	}
	return *v, nil
}

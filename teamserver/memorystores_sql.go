package teamserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"
	"unicode/utf8"
)

// Memory stores in SQL: three tables beside the sync repos. Every write to
// a store runs in one write transaction that first takes the store's lock
// (SQLDialect.LockRepo with "memstore\n<id>"; SQLite's single writer
// already serialises), so a precondition checked is a precondition held.
// Every read is one read transaction.
const memStoreSchema = `
CREATE TABLE IF NOT EXISTS ms_stores (
	id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
	metadata TEXT NOT NULL, created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL, archived_ms BIGINT NOT NULL,
	generation BIGINT NOT NULL, memory_count BIGINT NOT NULL, total_bytes BIGINT NOT NULL, seq BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ms_stores_by_tenant ON ms_stores (tenant, created_ms);
CREATE TABLE IF NOT EXISTS ms_memories (
	store_id TEXT NOT NULL, id TEXT NOT NULL, path TEXT NOT NULL, content TEXT NOT NULL,
	sha TEXT NOT NULL, size BIGINT NOT NULL, created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL,
	version_id TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (store_id, id), UNIQUE (store_id, path));
CREATE TABLE IF NOT EXISTS ms_versions (
	store_id TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL, memory_id TEXT NOT NULL,
	operation TEXT NOT NULL, path TEXT NOT NULL, content TEXT NOT NULL, sha TEXT NOT NULL, size BIGINT NOT NULL,
	created_ms BIGINT NOT NULL, actor_type TEXT NOT NULL, actor_id TEXT NOT NULL,
	redacted_ms BIGINT NOT NULL, redactor_type TEXT NOT NULL, redactor_id TEXT NOT NULL,
	PRIMARY KEY (store_id, seq), UNIQUE (id));
`

// orEmpty is m, or an empty map for nil.
func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

// metadataJSON is a memory's metadata as its column holds it.
func metadataJSON(m map[string]string) string {
	raw, _ := json.Marshal(orEmpty(m)) // a map of strings always marshals
	return string(raw)
}

// StoreLimits bound what an organization and a store may hold.
type StoreLimits struct {
	MaxStores   int   // stores per organization (<= 0: DefaultMaxStores)
	MaxMemories int   // memories per store (<= 0: DefaultMaxStoreMemories)
	MaxBytes    int64 // content bytes per store (<= 0: DefaultMaxStoreBytes)
}

func (l StoreLimits) orDefaults() StoreLimits {
	l.MaxStores = positiveOr(l.MaxStores, DefaultMaxStores)
	l.MaxMemories = positiveOr(l.MaxMemories, DefaultMaxStoreMemories)
	l.MaxBytes = positiveOr(l.MaxBytes, DefaultMaxStoreBytes)
	return l
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// write runs fn in one write transaction holding the lock on key (again
// on a fresh connection when the one it got was broken).
func (s *sqlStore) write(ctx context.Context, key string, fn func(tx *sql.Tx) error) error {
	unlock, err := s.writers.lock(ctx, key)
	if err != nil {
		return overloaded(err)
	}
	defer unlock()
	return retryBadConn(ctx, func() error { return s.writeOnce(ctx, key, fn) })
}

func (s *sqlStore) writeOnce(ctx context.Context, key string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return overloaded(err)
	}
	defer tx.Rollback()
	if s.d.LockRepo != "" {
		if _, err := tx.ExecContext(ctx, s.d.LockRepo, key); err != nil {
			return overloaded(err)
		}
	}
	if err := fn(tx); err != nil {
		var api *APIError
		if errors.As(err, &api) {
			return err
		}
		return overloaded(err)
	}
	return overloaded(tx.Commit())
}

const storeColumns = `id, tenant, name, description, metadata, created_ms, updated_ms, archived_ms, generation, memory_count, total_bytes, seq`

func scanStore(row rowScanner) (MemStore, error) {
	var st MemStore
	var meta string
	var created, updated, archived int64
	if err := row.Scan(&st.ID, &st.Tenant, &st.Name, &st.Description, &meta, &created, &updated, &archived, &st.Generation, &st.Memories, &st.Bytes, &st.Seq); err != nil {
		return MemStore{}, err
	}
	st.Metadata = map[string]string{}
	if err := json.Unmarshal([]byte(meta), &st.Metadata); err != nil {
		return MemStore{}, fmt.Errorf("store %s: metadata: %w", st.ID, err)
	}
	st.Created, st.Updated, st.Archived = fromMS(created), fromMS(updated), fromMS(archived)
	return st, nil
}

// memStore reads a store of tenant; another tenant's store is not found.
func (s *sqlStore) memStore(ctx context.Context, q querier, tenant, id string) (MemStore, error) {
	st, err := scanStore(q.QueryRowContext(ctx, s.q(`SELECT `+storeColumns+` FROM ms_stores WHERE id = ? AND tenant = ?`), id, tenant))
	if errors.Is(err, sql.ErrNoRows) {
		return MemStore{}, notFound("memory store")
	}
	return st, err
}

// CreateMemStore makes a store for tenant, within limits.MaxStores.
func (s *sqlStore) CreateMemStore(ctx context.Context, tenant string, st MemStore, limits StoreLimits, now time.Time) (MemStore, error) {
	if err := validateStoreFields(&st.Name, &st.Description, st.Metadata); err != nil {
		return MemStore{}, err
	}
	limits = limits.orDefaults()
	st.ID, st.Tenant, st.Created, st.Updated, st.Archived = newID(StoreIDPrefix), tenant, now.UTC().Truncate(time.Millisecond), now.UTC().Truncate(time.Millisecond), time.Time{}
	if st.Metadata == nil {
		st.Metadata = map[string]string{}
	}
	meta, err := json.Marshal(st.Metadata)
	if err != nil {
		return MemStore{}, err
	}
	err = s.write(ctx, "memstores\n"+tenant, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*), COALESCE(MAX(seq), 0) + 1 FROM ms_stores WHERE tenant = ?`), tenant).Scan(&n, &st.Seq); err != nil {
			return err
		}
		if n >= limits.MaxStores {
			return invalid("this organization has reached its limit of %d memory stores", limits.MaxStores)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO ms_stores (`+storeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, ?)`),
			st.ID, tenant, st.Name, st.Description, string(meta), ms(st.Created), ms(st.Updated), st.Seq)
		return err
	})
	return st, err
}

// GetMemStore reads one store of tenant.
func (s *sqlStore) GetMemStore(ctx context.Context, tenant, id string) (MemStore, error) {
	var st MemStore
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		st, err = s.memStore(ctx, tx, tenant, id)
		return err
	})
	return st, err
}

// FindMemStore resolves Claude Code's store path: a store ID, or else the
// name of one of tenant's stores (the oldest with that name).
func (s *sqlStore) FindMemStore(ctx context.Context, tenant, idOrName string) (MemStore, error) {
	var st MemStore
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		st, err = s.memStore(ctx, tx, tenant, idOrName)
		var api *APIError
		if !errors.As(err, &api) {
			return err
		}
		st, err = scanStore(tx.QueryRowContext(ctx, s.q(`SELECT `+storeColumns+` FROM ms_stores WHERE tenant = ? AND name = ? ORDER BY seq LIMIT 1`), tenant, idOrName))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("memory store")
		}
		return err
	})
	return st, err
}

// ListMemStores lists tenant's stores, newest first (the order of the
// hosted service; Seq orders stores created in one millisecond).
func (s *sqlStore) ListMemStores(ctx context.Context, tenant string) ([]MemStore, error) {
	var out []MemStore
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		out, err = scanAll(ctx, tx, s.q(`SELECT `+storeColumns+` FROM ms_stores WHERE tenant = ? ORDER BY seq DESC`), scanStore, tenant)
		return err
	})
	return out, err
}

// StorePatch is an update of a store: nil fields stay; Metadata, when not
// nil, sets those keys (an empty value removes one).
type StorePatch struct {
	Name        *string
	Description *string
	Metadata    map[string]string
}

// applyTo changes st as the patch says; more than 16 metadata keys are
// refused.
func (p StorePatch) applyTo(st *MemStore) error {
	if p.Name != nil {
		st.Name = *p.Name
	}
	if p.Description != nil {
		st.Description = *p.Description
	}
	for k, v := range p.Metadata {
		if v == "" {
			delete(st.Metadata, k)
		} else {
			st.Metadata[k] = v
		}
	}
	if len(st.Metadata) > 16 {
		return invalid("metadata may hold at most 16 keys")
	}
	return nil
}

// UpdateMemStore changes a store's name, description or metadata. An
// archived store refuses.
func (s *sqlStore) UpdateMemStore(ctx context.Context, tenant, id string, p StorePatch, now time.Time) (MemStore, error) {
	if err := validateStoreFields(p.Name, p.Description, p.Metadata); err != nil {
		return MemStore{}, err
	}
	var st MemStore
	err := s.write(ctx, "memstore\n"+id, func(tx *sql.Tx) (err error) {
		if st, err = s.memStore(ctx, tx, tenant, id); err != nil {
			return err
		}
		if !st.Archived.IsZero() {
			return errArchived
		}
		if err := p.applyTo(&st); err != nil {
			return err
		}
		meta, _ := json.Marshal(st.Metadata)
		st.Updated = now.UTC().Truncate(time.Millisecond)
		_, err = tx.ExecContext(ctx, s.q(`UPDATE ms_stores SET name = ?, description = ?, metadata = ?, updated_ms = ? WHERE id = ?`),
			st.Name, st.Description, string(meta), ms(st.Updated), id)
		return err
	})
	return st, err
}

// ArchiveMemStore makes a store read-only for good. Archiving an archived
// store answers it as it is.
func (s *sqlStore) ArchiveMemStore(ctx context.Context, tenant, id string, now time.Time) (MemStore, error) {
	var st MemStore
	err := s.write(ctx, "memstore\n"+id, func(tx *sql.Tx) (err error) {
		if st, err = s.memStore(ctx, tx, tenant, id); err != nil || !st.Archived.IsZero() {
			return err
		}
		st.Archived = now.UTC().Truncate(time.Millisecond)
		st.Updated = st.Archived
		_, err = tx.ExecContext(ctx, s.q(`UPDATE ms_stores SET archived_ms = ?, updated_ms = ? WHERE id = ?`), ms(st.Archived), ms(st.Updated), id)
		return err
	})
	return st, err
}

// DeleteMemStore removes a store with its memories and versions.
func (s *sqlStore) DeleteMemStore(ctx context.Context, tenant, id string) error {
	return s.write(ctx, "memstore\n"+id, func(tx *sql.Tx) error {
		if _, err := s.memStore(ctx, tx, tenant, id); err != nil {
			return err
		}
		for _, q := range []string{`DELETE FROM ms_versions WHERE store_id = ?`, `DELETE FROM ms_memories WHERE store_id = ?`, `DELETE FROM ms_stores WHERE id = ?`} {
			if _, err := tx.ExecContext(ctx, s.q(q), id); err != nil {
				return err
			}
		}
		return nil
	})
}

const memoryColumns = `id, store_id, path, sha, size, created_ms, updated_ms, version_id, metadata`

func scanMemory(row rowScanner, withContent bool) (Memory, error) {
	var m Memory
	var created, updated int64
	var meta string
	dest := []any{&m.ID, &m.StoreID, &m.Path, &m.SHA256, &m.Size, &created, &updated, &m.VersionID, &meta}
	if withContent {
		dest = append(dest, &m.Content)
	}
	if err := row.Scan(dest...); err != nil {
		return Memory{}, err
	}
	m.Created, m.Updated = fromMS(created), fromMS(updated)
	m.Metadata = map[string]string{}
	if meta != "" { // "": a memory written before memories had metadata
		if err := json.Unmarshal([]byte(meta), &m.Metadata); err != nil {
			return Memory{}, fmt.Errorf("memory %s: metadata: %w", m.ID, err)
		}
	}
	return m, nil
}

// oneMemory reads the first memory query selects (ok false: none).
func (s *sqlStore) oneMemory(ctx context.Context, q querier, withContent bool, query string, args ...any) (m Memory, ok bool, err error) {
	m, err = scanMemory(q.QueryRowContext(ctx, s.q(query), args...), withContent)
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, false, nil
	}
	return m, err == nil, err
}

// memory reads memory id of a store, with its content.
func (s *sqlStore) memory(ctx context.Context, q querier, storeID, id string) (Memory, error) {
	m, ok, err := s.oneMemory(ctx, q, true, `SELECT `+memoryColumns+`, content FROM ms_memories WHERE store_id = ? AND id = ?`, storeID, id)
	if err == nil && !ok {
		err = notFound("memory")
	}
	return m, err
}

// pathFree refuses p when another memory of the store has it (a
// memory_path_conflict_error) or clashes with it as a folder
// (folderClash).
func (s *sqlStore) pathFree(ctx context.Context, q querier, storeID, p, selfID string) error {
	holder, taken, err := s.oneMemory(ctx, q, false, `SELECT `+memoryColumns+` FROM ms_memories WHERE store_id = ? AND path = ?`, storeID, p)
	if err != nil || taken {
		if err == nil {
			err = pathConflict(holder)
		}
		return err
	}
	holder, clash, err := s.folderClash(ctx, q, storeID, p, selfID)
	if err == nil && clash {
		err = folderConflict(holder)
	}
	return err
}

// folderClash finds a memory other than selfID that could not sit beside
// a memory at p on a disk: one whose path is a folder of p ("/a.md" for
// "/a.md/b.md"), or one below p as a folder ("/a.md/b.md" for "/a.md").
func (s *sqlStore) folderClash(ctx context.Context, q querier, storeID, p, selfID string) (Memory, bool, error) {
	var folders []any
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			folders = append(folders, p[:i])
		}
	}
	if len(folders) > 0 {
		in := strings.TrimSuffix(strings.Repeat("?, ", len(folders)), ", ")
		args := append([]any{storeID, selfID}, folders...)
		if m, ok, err := s.oneMemory(ctx, q, false, `SELECT `+memoryColumns+` FROM ms_memories WHERE store_id = ? AND id <> ? AND path IN (`+in+`) LIMIT 1`, args...); err != nil || ok {
			return m, ok, err
		}
	}
	below := p + "/"
	return s.oneMemory(ctx, q, false, `SELECT `+memoryColumns+` FROM ms_memories WHERE store_id = ? AND id <> ? AND substr(path, 1, ?) = ? LIMIT 1`,
		storeID, selfID, utf8.RuneCountInString(below), below)
}

// GetMemory reads one memory, with its content.
func (s *sqlStore) GetMemory(ctx context.Context, tenant, storeID, id string) (Memory, error) {
	var m Memory
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		if _, err = s.memStore(ctx, tx, tenant, storeID); err != nil {
			return err
		}
		m, err = s.memory(ctx, tx, storeID, id)
		return err
	})
	return m, err
}

// EachMemory calls fn for every memory of a store in one read (a
// consistent snapshot), ordered by path, with content when withContent.
// The store is passed to head first.
func (s *sqlStore) EachMemory(ctx context.Context, tenant, storeID string, withContent bool, head func(MemStore) error, fn func(Memory) error) error {
	return s.readStream(ctx, func(tx *sql.Tx, handOver func()) error {
		st, err := s.memStore(ctx, tx, tenant, storeID)
		if err != nil {
			return err
		}
		handOver()
		if err := head(st); err != nil {
			return err
		}
		cols := memoryColumns
		if withContent {
			cols += ", content"
		}
		rows, err := tx.QueryContext(ctx, s.q(`SELECT `+cols+` FROM ms_memories WHERE store_id = ? ORDER BY path`), storeID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMemory(rows, withContent)
			if err != nil {
				return err
			}
			if err := fn(m); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// MemoryWrite is a create or an update of one memory.
type MemoryWrite struct {
	// Path is the memory's path (create), or its new path (update; empty
	// keeps it).
	Path string
	// Content is the new content; nil on an update keeps it.
	Content *string
	// IfSHA256, when set, must equal the stored content's sha256 (update).
	IfSHA256 string
	// Metadata is the memory's metadata; nil on an update keeps it (an
	// empty map clears it).
	Metadata map[string]string
	By       Actor
}

// check refuses a write no store can hold: a path validateMemoryPath
// refuses, content validateContent refuses, and on a create a missing
// content. Every store and the handler call it, so they refuse alike.
func (w MemoryWrite) check(create bool) error {
	if err := validateMetadata(w.Metadata); err != nil {
		return err
	}
	if create || w.Path != "" {
		if err := validateMemoryPath(w.Path); err != nil {
			return err
		}
	}
	if w.Content == nil {
		if create {
			return invalid("content is required")
		}
		return nil
	}
	return validateContent(*w.Content)
}

// created is the memory a create w makes in storeID at t.
func (w MemoryWrite) created(storeID string, t time.Time) Memory {
	return Memory{ID: newID(memoryIDPrefix), StoreID: storeID, Path: w.Path, Content: *w.Content, SHA256: contentSHA256(*w.Content),
		Size: int64(len(*w.Content)), Created: t, Updated: t, Metadata: orEmpty(w.Metadata)}
}

// applyTo is cur as the update w leaves it; same reports that nothing
// changes. An IfSHA256 other than cur's is a
// memory_precondition_failed_error, unless nothing changes.
func (w MemoryWrite) applyTo(cur Memory) (next Memory, same bool, err error) {
	next = cur
	if w.Path != "" {
		next.Path = w.Path
	}
	if w.Content != nil {
		next.Content, next.SHA256, next.Size = *w.Content, contentSHA256(*w.Content), int64(len(*w.Content))
	}
	if w.Metadata != nil {
		next.Metadata = orEmpty(w.Metadata)
	}
	same = next.Path == cur.Path && next.SHA256 == cur.SHA256 && maps.Equal(next.Metadata, cur.Metadata)
	if w.IfSHA256 != "" && w.IfSHA256 != cur.SHA256 && !same {
		return Memory{}, false, preconditionFailed(cur)
	}
	return next, same, nil
}

// CreateMemory adds a memory at a path no memory of the store has (a
// taken path is a memory_path_conflict_error naming its holder).
func (s *sqlStore) CreateMemory(ctx context.Context, tenant, storeID string, w MemoryWrite, limits StoreLimits, now time.Time) (Memory, error) {
	if err := w.check(true); err != nil {
		return Memory{}, err
	}
	limits = limits.orDefaults()
	var m Memory
	err := s.write(ctx, "memstore\n"+storeID, func(tx *sql.Tx) error {
		st, err := s.writableStore(ctx, tx, tenant, storeID)
		if err != nil {
			return err
		}
		if err := s.pathFree(ctx, tx, storeID, w.Path, ""); err != nil {
			return err
		}
		if err := checkRoom(st, 1, int64(len(*w.Content)), limits); err != nil {
			return err
		}
		t := now.UTC().Truncate(time.Millisecond)
		m = w.created(storeID, t)
		v, err := s.addVersion(ctx, tx, m, OpCreated, w.By, t)
		if err != nil {
			return err
		}
		m.VersionID = v
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO ms_memories (`+memoryColumns+`, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			m.ID, storeID, m.Path, m.SHA256, m.Size, ms(t), ms(t), v, metadataJSON(m.Metadata), m.Content); err != nil {
			return err
		}
		return s.changed(ctx, tx, storeID, 1, m.Size)
	})
	return m, err
}

// UpdateMemory changes a memory's content, its path, or both. IfSHA256
// is checked against the stored content; a mismatch is a
// memory_precondition_failed_error, unless the memory already is exactly
// what was asked. A move onto another memory's path is a
// memory_path_conflict_error. A write that changes nothing adds no
// version.
func (s *sqlStore) UpdateMemory(ctx context.Context, tenant, storeID, id string, w MemoryWrite, limits StoreLimits, now time.Time) (Memory, error) {
	if err := w.check(false); err != nil {
		return Memory{}, err
	}
	limits = limits.orDefaults()
	var m Memory
	err := s.write(ctx, "memstore\n"+storeID, func(tx *sql.Tx) error {
		st, err := s.writableStore(ctx, tx, tenant, storeID)
		if err != nil {
			return err
		}
		cur, err := s.memory(ctx, tx, storeID, id)
		if err != nil {
			return err
		}
		next, same, err := w.applyTo(cur)
		if err != nil {
			return err
		}
		if same {
			m = cur
			return nil
		}
		if next.Path != cur.Path {
			if err := s.pathFree(ctx, tx, storeID, next.Path, id); err != nil {
				return err
			}
		}
		if err := checkRoom(st, 0, next.Size-cur.Size, limits); err != nil {
			return err
		}
		next.Updated = now.UTC().Truncate(time.Millisecond)
		v, err := s.addVersion(ctx, tx, next, OpModified, w.By, next.Updated)
		if err != nil {
			return err
		}
		next.VersionID = v
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE ms_memories SET path = ?, content = ?, sha = ?, size = ?, updated_ms = ?, version_id = ?, metadata = ? WHERE store_id = ? AND id = ?`),
			next.Path, next.Content, next.SHA256, next.Size, ms(next.Updated), v, metadataJSON(next.Metadata), storeID, id); err != nil {
			return err
		}
		m = next
		return s.changed(ctx, tx, storeID, 0, next.Size-cur.Size)
	})
	return m, err
}

// DeleteMemory removes a memory, keeping its versions and adding a
// "deleted" one. ifSHA256, when set, must match the stored content. An
// archived store's memories may still be deleted, as the hosted API
// allows: archiving stops writes, not clean-up.
func (s *sqlStore) DeleteMemory(ctx context.Context, tenant, storeID, id, ifSHA256 string, by Actor, now time.Time) error {
	return s.write(ctx, "memstore\n"+storeID, func(tx *sql.Tx) error {
		if _, err := s.memStore(ctx, tx, tenant, storeID); err != nil {
			return err
		}
		cur, err := s.memory(ctx, tx, storeID, id)
		if err != nil {
			return err
		}
		if ifSHA256 != "" && ifSHA256 != cur.SHA256 {
			return preconditionFailed(cur)
		}
		gone := cur
		gone.Content = ""
		if _, err := s.addVersion(ctx, tx, gone, OpDeleted, by, now.UTC().Truncate(time.Millisecond)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM ms_memories WHERE store_id = ? AND id = ?`), storeID, id); err != nil {
			return err
		}
		return s.changed(ctx, tx, storeID, -1, -cur.Size)
	})
}

func (s *sqlStore) writableStore(ctx context.Context, tx *sql.Tx, tenant, storeID string) (MemStore, error) {
	st, err := s.memStore(ctx, tx, tenant, storeID)
	if err != nil {
		return MemStore{}, err
	}
	if !st.Archived.IsZero() {
		return MemStore{}, errArchived
	}
	return st, nil
}

// changed records a change to a store's memories: its generation moves on
// (listings cached for the old one are stale) and its counts follow.
func (s *sqlStore) changed(ctx context.Context, tx *sql.Tx, storeID string, memories, bytes int64) error {
	_, err := tx.ExecContext(ctx, s.q(`UPDATE ms_stores SET generation = generation + 1, memory_count = memory_count + ?, total_bytes = total_bytes + ? WHERE id = ?`),
		memories, bytes, storeID)
	return err
}

// checkRoom refuses a write that would take the store past its limits.
func checkRoom(st MemStore, addMemories, addBytes int64, l StoreLimits) error {
	if addMemories > 0 && st.Memories+addMemories > int64(l.MaxMemories) {
		return invalid(msgStoreFullCount)
	}
	if addBytes > 0 && st.Bytes+addBytes > l.MaxBytes {
		return invalid(msgStoreFullBytes)
	}
	return nil
}

// addVersion records m as written by op and returns the version's ID.
func (s *sqlStore) addVersion(ctx context.Context, tx *sql.Tx, m Memory, op string, by Actor, t time.Time) (string, error) {
	var seq int64
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(seq), 0) + 1 FROM ms_versions WHERE store_id = ?`), m.StoreID).Scan(&seq); err != nil {
		return "", err
	}
	id := newID(versionIDPrefix)
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO ms_versions (store_id, seq, id, memory_id, operation, path, content, sha, size, created_ms, actor_type, actor_id, redacted_ms, redactor_type, redactor_id, `+provSelect+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '', '', ?, ?, ?, ?)`),
		m.StoreID, seq, id, m.ID, op, m.Path, m.Content, m.SHA256, m.Size, ms(t), by.Type, by.ID, by.Door, by.Session, by.Origin, by.Reviewer)
	return id, err
}

const versionColumns = `store_id, seq, id, memory_id, operation, path, sha, size, created_ms, actor_type, actor_id, redacted_ms, redactor_type, redactor_id, ` + provSelect

func scanVersion(row rowScanner, withContent bool) (MemoryVersion, error) {
	var v MemoryVersion
	var created, redacted int64
	dest := []any{&v.StoreID, &v.Seq, &v.ID, &v.MemoryID, &v.Operation, &v.Path, &v.SHA256, &v.Size, &created,
		&v.By.Type, &v.By.ID, &redacted, &v.RedactedBy.Type, &v.RedactedBy.ID, &v.By.Door, &v.By.Session, &v.By.Origin, &v.By.Reviewer}
	if withContent {
		dest = append(dest, &v.Content)
	}
	if err := row.Scan(dest...); err != nil {
		return MemoryVersion{}, err
	}
	v.Created, v.Redacted = fromMS(created), fromMS(redacted)
	return v, nil
}

// VersionFilter narrows a version listing. Zero fields match everything.
type VersionFilter struct {
	MemoryID  string
	Operation string
	ActorID   string // the api_key_id of the writer
	Session   string // the session the writer named
	From, To  time.Time
	// BeforeSeq lists only versions older than this one (paging; 0: from
	// the newest).
	BeforeSeq int64
	Limit     int
	Content   bool
}

// ListVersions lists a store's versions, newest first.
func (s *sqlStore) ListVersions(ctx context.Context, tenant, storeID string, f VersionFilter) ([]MemoryVersion, error) {
	var out []MemoryVersion
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		if _, err = s.memStore(ctx, tx, tenant, storeID); err != nil {
			return err
		}
		query := `SELECT ` + versionColumns
		if f.Content {
			query += `, content`
		}
		query += ` FROM ms_versions WHERE store_id = ?`
		args := []any{storeID}
		for _, c := range []struct {
			set  bool
			cond string
			arg  any
		}{
			{f.MemoryID != "", `memory_id = ?`, f.MemoryID},
			{f.Operation != "", `operation = ?`, f.Operation},
			{f.ActorID != "", `actor_id = ?`, f.ActorID},
			{f.Session != "", `prov_session = ?`, f.Session},
			{!f.From.IsZero(), `created_ms >= ?`, ms(f.From)},
			{!f.To.IsZero(), `created_ms <= ?`, ms(f.To)},
			{f.BeforeSeq > 0, `seq < ?`, f.BeforeSeq},
		} {
			if c.set {
				query += ` AND ` + c.cond
				args = append(args, c.arg)
			}
		}
		query += ` ORDER BY seq DESC LIMIT ?`
		args = append(args, f.Limit)
		out, err = scanAll(ctx, tx, s.q(query), func(row rowScanner) (MemoryVersion, error) { return scanVersion(row, f.Content) }, args...)
		return err
	})
	return out, err
}

func (s *sqlStore) version(ctx context.Context, q querier, storeID, id string) (MemoryVersion, error) {
	v, err := scanVersion(q.QueryRowContext(ctx, s.q(`SELECT `+versionColumns+`, content FROM ms_versions WHERE store_id = ? AND id = ?`), storeID, id), true)
	if errors.Is(err, sql.ErrNoRows) {
		return MemoryVersion{}, notFound("memory version")
	}
	return v, err
}

// GetVersion reads one version with its content.
func (s *sqlStore) GetVersion(ctx context.Context, tenant, storeID, id string) (MemoryVersion, error) {
	var v MemoryVersion
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		if _, err = s.memStore(ctx, tx, tenant, storeID); err != nil {
			return err
		}
		v, err = s.version(ctx, tx, storeID, id)
		return err
	})
	return v, err
}

// RedactVersion clears a version's path, content, sha256 and size, and
// records who redacted it and when; who wrote it and when stay. The
// memory itself is not changed, even when this is the version it is now
// (rewrite or delete the memory to take the content out of the store).
// Redacting a redacted version answers it as it is.
func (s *sqlStore) RedactVersion(ctx context.Context, tenant, storeID, id string, by Actor, now time.Time) (MemoryVersion, error) {
	var v MemoryVersion
	err := s.write(ctx, "memstore\n"+storeID, func(tx *sql.Tx) (err error) {
		if _, err = s.memStore(ctx, tx, tenant, storeID); err != nil {
			return err
		}
		if v, err = s.version(ctx, tx, storeID, id); err != nil || !v.Redacted.IsZero() {
			return err
		}
		t := now.UTC().Truncate(time.Millisecond)
		v.Path, v.Content, v.SHA256, v.Size, v.Redacted, v.RedactedBy = "", "", "", 0, t, by
		_, err = tx.ExecContext(ctx, s.q(`UPDATE ms_versions SET path = '', content = '', sha = '', size = 0, redacted_ms = ?, redactor_type = ?, redactor_id = ? WHERE store_id = ? AND id = ?`),
			ms(t), by.Type, by.ID, storeID, id)
		return err
	})
	return v, err
}

package memdir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/filelock"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/spf13/afero"
)

// Provenance says how a write into shared memory came: the door it came
// through ("extraction", "consolidation", "memory-tool", "mcp", ...: the
// doors of internal/teamwire), the session that made it, and the origin of
// its content when known ("tool-output" or "fetched" for untrusted
// input). The sync clients send it with the file (the X-Agentmem-Door,
// -Session and -Origin headers) instead of their own generic door.
type Provenance struct {
	Door    string `json:"door"`
	Session string `json:"session,omitempty"`
	Origin  string `json:"origin,omitempty"`
}

// UntrustedOrigin reports whether an origin says the content came from
// input nobody vouched for (a tool's output, fetched content).
func UntrustedOrigin(origin string) bool { return teamwire.UntrustedOrigin(origin) }

// LeastTrusted returns the less trusted of two origins: fetched content
// before a tool's output before anything else.
func LeastTrusted(a, b string) string {
	rank := func(o string) int {
		switch o {
		case teamwire.OriginFetched:
			return 3
		case teamwire.OriginToolOutput:
			return 2
		case teamwire.OriginOtherAgent:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// provenanceStateDir and provenanceFileName place the record of
// provenance a memory directory keeps: <memory dir>/.team-sync/
// provenance.json, in the folder of the team sync's state, outside every
// synced folder (a team directory's files, a store mount's files), and
// never synced itself.
const (
	provenanceStateDir = ".team-sync"
	provenanceFileName = "provenance.json"
)

// Bounds of the provenance record: an entry older than
// provenanceMaxAge, or past the newest provenanceMaxEntries, is dropped
// when a write rewrites the record (such a file, if not synced yet, then
// goes with the sync client's own door).
const (
	provenanceMaxEntries = 1000
	provenanceMaxAge     = 30 * 24 * time.Hour
)

// provenanceEntry is one file's record: how it was last written by a
// handle with a door, and the SHA-256 of what that write left, so a later
// change by anyone else (the user's editor, a pull) is not taken for it.
type provenanceEntry struct {
	Provenance
	SHA256 string `json:"sha256"`
	At     int64  `json:"at"` // Unix ms
}

type provenanceFile struct {
	Files map[string]provenanceEntry `json:"files"`
}

// provenanceState is what every handle of one directory shares: the
// origin a host marked the session's writes with (MarkUntrusted), and a
// cache of the records read.
type provenanceState struct {
	origin   atomic.Pointer[string]
	paused   atomic.Bool  // Dir.PauseWrites
	mainOnly atomic.Int32 // a MainAgentOnly: Dir.SharedWritesMainAgentOnly
	mu       sync.Mutex
	cache    map[string]cachedProvenance
	// sessionMarks are the session marks this process recorded
	// (MarkUntrusted), so marking again writes nothing.
	sessionMarks map[string]string
}

type cachedProvenance struct {
	mod   time.Time
	size  int64
	files map[string]provenanceEntry
}

// ProvenanceError reports a write refused because its provenance could
// not be recorded (the record's folder cannot be written or locked);
// nothing was written. Fix the permissions of the folder it names.
type ProvenanceError struct {
	Path string
	Err  error
}

func (e *ProvenanceError) Error() string {
	return "memdir: the write's provenance could not be recorded in " + e.Path + " (nothing was written): " + e.Err.Error()
}

func (e *ProvenanceError) Unwrap() error { return e.Err }

// WithProvenance returns a handle on the same directory (or view) whose
// writes into shared memory (the team directory, a store mount in it, or
// any file of a directory synced to an account) record p: the next sync
// sends such a file with p's door, session and origin rather than its
// own. A field p leaves empty keeps d's. Writes into private memory record
// nothing unless their origin is untrusted (UntrustedOrigin): that is
// kept, so what is later made from them carries it.
func (d *Dir) WithProvenance(p Provenance) *Dir {
	g := *d.gate
	if p.Door != "" {
		g.prov.Door = p.Door
	}
	if p.Session != "" {
		g.prov.Session = p.Session
	}
	if p.Origin != "" {
		g.prov.Origin = p.Origin
	}
	c := *d
	c.gate = &g
	return &c
}

// WithDoor returns d.WithProvenance(Provenance{Door: door}) when d has no
// door yet, and d otherwise: a layer names its own door without undoing
// the one its host chose.
func (d *Dir) WithDoor(door string) *Dir {
	if d.gate.prov.Door != "" {
		return d
	}
	return d.WithProvenance(Provenance{Door: door})
}

// Provenance returns how the write that left content in the file abs was
// made, as the handle that wrote it recorded it (WithProvenance), and
// false when nothing matching is recorded: the file was written by a
// handle without a door, changed since by someone else, or its record
// expired. A session marked untrusted (MarkUntrusted) reports its origin.
func (d *Dir) Provenance(abs string, content []byte) (Provenance, bool) {
	sum := sha256.Sum256(content)
	want := hex.EncodeToString(sum[:])
	clean := cleanDir(abs)
	for _, base := range d.provenanceBases() {
		rel, err := filepath.Rel(base, clean)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		files := d.gate.readProvenance(provenancePath(base))
		e, ok := files[filepath.ToSlash(rel)]
		switch {
		case ok && e.SHA256 == want:
			return e.Provenance, true
		case ok && UntrustedOrigin(e.Origin):
			// The file changed since an untrusted write with no write
			// recorded after it (a host's own tool wrote other bytes than
			// its check foresaw, an editor, a failed call): the mark
			// stays on the file, with no door or session to claim.
			return Provenance{Origin: e.Origin}, true
		}
	}
	return Provenance{}, false
}

// MarkUntrusted marks every later write into shared memory by any handle
// of this directory (every view and layer built from the same NewDir) as
// coming from untrusted input: origin ("tool-output" or "fetched") is
// recorded whatever the handle's own. A session that read a web page or
// a tool's output keeps it in its context, so the mark holds for the
// handle's life. "" does nothing.
//
// The mark is also recorded for the handle's session (its provenance's
// Session), so a consolidation run later, in another process, that
// reviews that session's transcript knows what it read
// (SessionOrigins). A mark is never lowered: "fetched" stays after a
// later "tool-output", and marking again with what holds already writes
// nothing.
func (d *Dir) MarkUntrusted(origin string) {
	if origin == "" {
		return
	}
	st := d.gate.provState
	st.mu.Lock()
	defer st.mu.Unlock()
	if prev := st.origin.Load(); prev != nil {
		origin = LeastTrusted(*prev, origin)
	}
	st.origin.Store(&origin)
	s := d.gate.prov.Session
	if s == "" || st.sessionMarks[s] == origin {
		return // no session to record, or recorded so already
	}
	if d.recordSessionOrigin(s, origin) == nil { // best effort: the writes carry the mark anyway
		if st.sessionMarks == nil {
			st.sessionMarks = map[string]string{}
		}
		st.sessionMarks[s] = origin
	}
}

// sessionsFileName is the record of the sessions marked untrusted, beside
// the provenance record.
const sessionsFileName = "sessions.json"

// maxMarkedSessions bounds that record: the newest are kept.
const maxMarkedSessions = 1000

type sessionMark struct {
	Origin string `json:"origin"`
	At     int64  `json:"at"` // Unix ms
}

// recordSessionOrigin notes that session read content of origin, as
// untrusted as it already was at least.
func (d *Dir) recordSessionOrigin(session, origin string) error {
	base := d.provenanceBases()[0]
	path := filepath.Join(base, provenanceStateDir, sessionsFileName)
	if err := d.fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), indexLockTimeout)
	unlock, err := filelock.Lock(ctx, d.fs, path)
	cancel()
	if err != nil {
		return err
	}
	defer unlock()
	marks := map[string]sessionMark{}
	if raw, err := afero.ReadFile(d.fs, path); err == nil {
		_ = json.Unmarshal(raw, &marks) // an unreadable record starts again
	}
	marks[session] = sessionMark{Origin: LeastTrusted(marks[session].Origin, origin), At: time.Now().UnixMilli()}
	for len(marks) > maxMarkedSessions {
		oldest := ""
		for k, m := range marks {
			if oldest == "" || m.At < marks[oldest].At {
				oldest = k
			}
		}
		delete(marks, oldest)
	}
	raw, err := json.Marshal(marks)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(d.fs, path, raw, 0o600)
}

// SessionOrigins returns the origin each session was marked with
// (MarkUntrusted on a handle of this directory naming that session), by
// session ID: one read of the record for every session a caller asks
// about. A session not in it was not marked (or not among the newest
// 1,000).
func (d *Dir) SessionOrigins() map[string]string {
	raw, err := afero.ReadFile(d.fs, filepath.Join(d.provenanceBases()[0], provenanceStateDir, sessionsFileName))
	if err != nil {
		return nil
	}
	var marks map[string]sessionMark
	if json.Unmarshal(raw, &marks) != nil {
		return nil
	}
	out := make(map[string]string, len(marks))
	for id, m := range marks {
		out[id] = m.Origin
	}
	return out
}

// provenanceBases are the memory directories whose record may hold a
// file of d: d's own (the parent of a team directory, or d itself), and
// for a store mount in a team directory the memory directory above it.
func (d *Dir) provenanceBases() []string {
	p := d.path
	if t, err := d.gate.CheckPath(filepath.Join(p, EntrypointName)); err == nil && t.Team && cleanDir(t.Root) == cleanDir(p) {
		return []string{filepath.Dir(p)}
	}
	if filepath.Base(filepath.Dir(p)) == TeamDirName {
		return []string{filepath.Dir(filepath.Dir(p))}
	}
	return []string{p}
}

// provenancePath is the record of the memory directory base.
func provenancePath(base string) string {
	return filepath.Join(base, provenanceStateDir, provenanceFileName)
}

// provenanceFor returns the provenance t's write records and where, or
// ok false when it records none: a write without a door, or a private
// one whose content came from no untrusted input (a private memory made
// from untrusted input keeps its origin, so what is later made from it,
// a consolidation into team memory, carries it on: UntrustedOrigin).
func (g *WriteGate) provenanceFor(t Target) (p Provenance, record, rel string, ok bool) {
	p = g.prov
	if o := g.provState.origin.Load(); o != nil {
		p.Origin = LeastTrusted(p.Origin, *o)
	}
	if p.Door == "" || !(t.Team || t.Synced || UntrustedOrigin(p.Origin)) {
		return Provenance{}, "", "", false
	}
	base := t.Root
	if t.Team {
		base = filepath.Dir(t.Root)
	}
	r, err := filepath.Rel(base, t.Path)
	if err != nil || strings.HasPrefix(r, "..") {
		return Provenance{}, "", "", false
	}
	return p, provenancePath(base), filepath.ToSlash(r), true
}

// recordProvenance records how t's write that leaves data was made,
// under the record's own lock (taken inside the root's lock, always in
// that order). With foreseen set the write is not made yet (a permission
// check records what the host's tool will write): the entry then keeps
// the least trusted origin the path's entry had, so a call that fails or
// writes other bytes leaves the file at least as marked as it was.
func (g *WriteGate) recordProvenance(ctx context.Context, t Target, data []byte, foreseen bool) error {
	p, record, rel, ok := g.provenanceFor(t)
	if !ok {
		return nil
	}
	p.Origin = g.proposedOrigin(ctx, t, p.Origin)
	if err := g.fs.MkdirAll(filepath.Dir(record), 0o755); err != nil {
		return &ProvenanceError{Path: record, Err: err}
	}
	lctx, cancel := context.WithTimeout(ctx, indexLockTimeout)
	unlock, err := filelock.Lock(lctx, g.fs, record)
	cancel()
	if err != nil {
		return &ProvenanceError{Path: record, Err: err}
	}
	defer unlock()
	var f provenanceFile
	if raw, err := afero.ReadFile(g.fs, record); err == nil {
		_ = json.Unmarshal(raw, &f) // an unreadable record starts again
	}
	if f.Files == nil {
		f.Files = map[string]provenanceEntry{}
	}
	sum := sha256.Sum256(data)
	now := time.Now()
	if prev, ok := f.Files[rel]; ok && foreseen {
		p.Origin = LeastTrusted(prev.Origin, p.Origin)
	}
	f.Files[rel] = provenanceEntry{Provenance: p, SHA256: hex.EncodeToString(sum[:]), At: now.UnixMilli()}
	pruneProvenance(f.Files, now)
	raw, err := json.Marshal(f)
	if err != nil {
		return &ProvenanceError{Path: record, Err: err}
	}
	if err := atomicfile.WriteFile(g.fs, record, raw, 0o600); err != nil {
		return &ProvenanceError{Path: record, Err: fmt.Errorf("write: %w", err)}
	}
	return nil
}

// pruneProvenance drops entries past provenanceMaxAge, then the oldest
// past provenanceMaxEntries.
func pruneProvenance(files map[string]provenanceEntry, now time.Time) {
	cut := now.Add(-provenanceMaxAge).UnixMilli()
	for k, e := range files {
		if e.At < cut {
			delete(files, k)
		}
	}
	if len(files) <= provenanceMaxEntries {
		return
	}
	keys := slices.Collect(maps.Keys(files))
	sort.Slice(keys, func(i, j int) bool { return files[keys[i]].At > files[keys[j]].At })
	for _, k := range keys[provenanceMaxEntries:] {
		delete(files, k)
	}
}

// readProvenance returns the record at path (empty when missing or
// unreadable), from the cache while the file is unchanged.
func (g *WriteGate) readProvenance(path string) map[string]provenanceEntry {
	info, err := g.fs.Stat(path)
	if err != nil {
		return nil
	}
	st := g.provState
	st.mu.Lock()
	defer st.mu.Unlock()
	if c, ok := st.cache[path]; ok && c.mod.Equal(info.ModTime()) && c.size == info.Size() {
		return c.files
	}
	raw, err := afero.ReadFile(g.fs, path)
	var f provenanceFile
	if err != nil || json.Unmarshal(raw, &f) != nil {
		return nil
	}
	if st.cache == nil {
		st.cache = map[string]cachedProvenance{}
	}
	st.cache[path] = cachedProvenance{mod: info.ModTime(), size: info.Size(), files: f.Files}
	return f.Files
}

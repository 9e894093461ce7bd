package transcript

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// Store keeps session transcripts. A host may bring its own; JSONLStore
// reads and writes Claude Code's layout.
type Store interface {
	// Append adds entries to a session; entries whose uuid the session
	// already holds are skipped. Appends may be buffered until Flush.
	Append(ctx context.Context, sessionID string, entries ...Entry) error
	// Flush writes buffered entries.
	Flush(ctx context.Context) error
	// Load returns every entry of a session in file order.
	Load(ctx context.Context, sessionID string) ([]Entry, error)
	// List describes the sessions, newest first.
	List(ctx context.Context) ([]Info, error)
	// Close flushes and re-appends each written session's metadata.
	Close() error
}

// Errors.
var (
	// ErrNoSession: no transcript with that session id.
	ErrNoSession = errors.New("transcript: no such session")
	// ErrInvalidSessionID: a session id must be a UUID.
	ErrInvalidSessionID = errors.New("transcript: a session id is a UUID")
)

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsSessionID reports whether id is a session ID: a UUID, as Claude Code
// names its sessions. It is the one rule for session IDs (transcripts,
// session summaries, the front door's Options.SessionID); listing takes
// only files so named.
func IsSessionID(id string) bool { return uuidRe.MatchString(id) }

// Options configures a JSONLStore.
type Options struct {
	// Stamp fills the session stamp of entries the store writes from
	// messages (see Recorder); SessionID is set per session.
	Stamp Stamp
	// BatchEntries and BatchBytes flush a session's buffer when reached
	// (defaults 64 entries, 1 MiB).
	BatchEntries int
	BatchBytes   int
}

// JSONLStore keeps transcripts as Claude Code does:
// <config home>/projects/<SanitizePath(project)>/<session id>.jsonl, one
// JSON object per line, files 0600 in directories 0700, a session's file
// created with its first user or assistant entry. Safe for concurrent
// use.
type JSONLStore struct {
	fs   afero.Fs
	dir  string // the project directory
	opts Options

	mu       sync.Mutex
	sessions map[string]*session
}

type session struct {
	path    string          // the transcript file
	seen    map[string]bool // uuids in the file or buffered
	loaded  bool            // seen holds the file's uuids
	pending []Entry
	bytes   int
	exists  bool // the file exists
	title   string
	tag     *string
	prompt  string
	leaf    string // the entry the session continues from
	written bool
}

// ProjectsDir is <configHome>/projects.
func ProjectsDir(configHome string) string { return filepath.Join(configHome, "projects") }

// ProjectDir returns the directory that holds a project's transcripts:
// <configHome>/projects/<SanitizePath(projectPath)>. projectPath is the
// canonical working directory (real path, NFC).
func ProjectDir(configHome, projectPath string) string {
	return filepath.Join(ProjectsDir(configHome), memdir.SanitizePath(projectPath))
}

// FindProjectDir returns the directory that holds a project's transcripts
// on fsys: the exact SanitizePath name, or, for a path whose sanitised
// name is over 200 characters, the first directory with the same
// 200-character prefix and "-" (written by a build that hashed the rest
// differently). ok is false when neither exists.
func FindProjectDir(fsys afero.Fs, configHome, projectPath string) (string, bool) {
	exact := ProjectDir(configHome, projectPath)
	if info, err := fsys.Stat(exact); err == nil && info.IsDir() {
		return exact, true
	}
	name := filepath.Base(exact)
	if len(name) <= 200 {
		return exact, false
	}
	prefix := name[:200] + "-"
	f, err := fsys.Open(ProjectsDir(configHome))
	if err != nil {
		return exact, false
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return filepath.Join(ProjectsDir(configHome), n), true
		}
	}
	return exact, false
}

// NewJSONLStore returns the store of the transcripts in dir (a project
// directory, see ProjectDir or FindProjectDir).
func NewJSONLStore(fsys afero.Fs, dir string, opts Options) (*JSONLStore, error) {
	if fsys == nil || dir == "" {
		return nil, errors.New("transcript: NewJSONLStore needs a filesystem and a directory")
	}
	defaults.IfUnset(&opts.BatchEntries, 64)
	defaults.IfUnset(&opts.BatchBytes, 1<<20)
	return &JSONLStore{fs: fsys, dir: filepath.Clean(dir), opts: opts, sessions: map[string]*session{}}, nil
}

// NewMemoryStore returns a JSONLStore over an in-memory filesystem: for
// tests and hosts that keep transcripts only for the process's life.
func NewMemoryStore() *JSONLStore {
	s, _ := NewJSONLStore(afero.NewMemMapFs(), "/transcripts", Options{})
	return s
}

// Dir returns the project directory.
func (s *JSONLStore) Dir() string { return s.dir }

// Path returns a session's transcript file.
func (s *JSONLStore) Path(sessionID string) string { return filepath.Join(s.dir, sessionID+".jsonl") }

// SubagentPath returns a sub-agent's transcript file:
// <dir>/<session id>/subagents/agent-<agent id>.jsonl.
func (s *JSONLStore) SubagentPath(sessionID, agentID string) string {
	return filepath.Join(s.dir, sessionID, "subagents", "agent-"+agentID+".jsonl")
}

// session returns the buffer of a transcript file (key: the session id,
// or "<session id>/<agent id>" for a sub-agent's).
func (s *JSONLStore) session(key, path string) *session {
	ss, ok := s.sessions[key]
	if !ok {
		ss = &session{path: path, seen: map[string]bool{}}
		s.sessions[key] = ss
	}
	return ss
}

// loadSeen fills the session's uuid set from its file, once.
func (s *JSONLStore) loadSeen(ss *session) {
	if ss.loaded {
		return
	}
	ss.loaded = true
	data, err := afero.ReadFile(s.fs, ss.path)
	if err != nil {
		return
	}
	ss.exists = true
	for _, e := range ParseAll(data) {
		if e.UUID != "" {
			ss.seen[e.UUID] = true
		}
	}
}

// Append implements Store. Entries are buffered per session; a session's
// file is created (0600, its directory 0700) only once a user or
// assistant entry arrives, so a session that never had a message leaves
// no file. Metadata entries (titles, tags) are remembered and written
// again at Close, so listing finds them in the file's last 64 KiB.
func (s *JSONLStore) Append(ctx context.Context, sessionID string, entries ...Entry) error {
	if !IsSessionID(sessionID) {
		return ErrInvalidSessionID
	}
	return s.append(sessionID, s.Path(sessionID), entries)
}

// AppendSubagent adds entries to a sub-agent's transcript
// (SubagentPath): its sidechain entries, deduplicated within that file.
// agentID must be letters, digits, "-" or "_".
func (s *JSONLStore) AppendSubagent(ctx context.Context, sessionID, agentID string, entries ...Entry) error {
	if !IsSessionID(sessionID) {
		return ErrInvalidSessionID
	}
	if !agentIDRe.MatchString(agentID) {
		return errors.New("transcript: an agent id is letters, digits, - or _")
	}
	return s.append(sessionID+"/"+agentID, s.SubagentPath(sessionID, agentID), entries)
}

var agentIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func (s *JSONLStore) append(key, path string, entries []Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.session(key, path)
	s.loadSeen(ss)
	for _, e := range entries {
		if len(e.Raw) == 0 {
			return errors.New("transcript: an entry to append needs its line (Raw); build it with MessageEntry.Encode or metadataEntry")
		}
		if e.UUID != "" {
			if ss.seen[e.UUID] {
				continue // never written twice
			}
			ss.seen[e.UUID] = true
		}
		switch e.Type {
		case TypeCustomTitle:
			ss.title = e.CustomTitle
		case TypeTag:
			ss.tag = e.Tag
		case TypeLastPrompt:
			if e.LeafUUID != "" {
				ss.leaf = e.LeafUUID
			}
			if e.LastPrompt != "" {
				ss.prompt = e.LastPrompt
			}
		}
		if e.IsMessage() && !e.IsSidechain {
			ss.leaf = e.UUID
			if p := promptText(&e); e.Type == TypeUser && p != "" {
				ss.prompt = p
			}
		}
		ss.pending = append(ss.pending, e)
		ss.bytes += len(e.Raw) + 1
	}
	if len(ss.pending) >= s.opts.BatchEntries || ss.bytes >= s.opts.BatchBytes {
		return s.flushLocked(key, ss)
	}
	return nil
}

// Flush implements Store.
func (s *JSONLStore) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, ss := range s.sessions {
		errs = append(errs, s.flushLocked(id, ss))
	}
	return errors.Join(errs...)
}

func (s *JSONLStore) flushLocked(id string, ss *session) error {
	if len(ss.pending) == 0 {
		return nil
	}
	if !ss.exists {
		hasMessage := false
		for _, e := range ss.pending {
			if e.Type == TypeUser || e.Type == TypeAssistant {
				hasMessage = true
				break
			}
		}
		if !hasMessage {
			return nil // no file before the first message
		}
	}
	var buf bytes.Buffer
	for _, e := range ss.pending {
		buf.Write(e.Raw)
		buf.WriteByte('\n')
	}
	if err := s.appendFile(ss.path, buf.Bytes()); err != nil {
		return fmt.Errorf("transcript: append to session %s: %w", id, err)
	}
	ss.exists, ss.written = true, true
	ss.pending, ss.bytes = nil, 0
	return nil
}

// appendFile appends data, creating the file 0600 and its directory 0700.
func (s *JSONLStore) appendFile(path string, data []byte) error {
	f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err := s.fs.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		f, err = s.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SetTitle writes a custom-title line for the session at once.
func (s *JSONLStore) SetTitle(ctx context.Context, sessionID, title string) error {
	if err := s.Append(ctx, sessionID, metadataEntry(TypeCustomTitle, sessionID, title)); err != nil {
		return err
	}
	return s.Flush(ctx)
}

// SetTag writes a tag line for the session at once ("" clears the tag).
func (s *JSONLStore) SetTag(ctx context.Context, sessionID, tag string) error {
	if err := s.Append(ctx, sessionID, metadataEntry(TypeTag, sessionID, tag)); err != nil {
		return err
	}
	return s.Flush(ctx)
}

// Close implements Store: it flushes, then re-appends each written
// session's last prompt (with the leaf it continues from), title and tag,
// as Claude Code does at exit, so they stay within the tail that listing
// reads.
func (s *JSONLStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, ss := range s.sessions {
		errs = append(errs, s.flushLocked(id, ss))
		if !ss.written {
			continue
		}
		var meta bytes.Buffer
		switch {
		case ss.leaf != "":
			meta.Write(lastPromptEntry(id, ss.prompt, ss.leaf).Raw)
			meta.WriteByte('\n')
		case ss.prompt != "":
			meta.Write(metadataEntry(TypeLastPrompt, id, ss.prompt).Raw)
			meta.WriteByte('\n')
		}
		if ss.title != "" {
			meta.Write(metadataEntry(TypeCustomTitle, id, ss.title).Raw)
			meta.WriteByte('\n')
		}
		if ss.tag != nil {
			meta.Write(metadataEntry(TypeTag, id, *ss.tag).Raw)
			meta.WriteByte('\n')
		}
		if meta.Len() > 0 && !strings.Contains(id, "/") {
			errs = append(errs, s.appendFile(ss.path, meta.Bytes()))
		}
		ss.written = false
	}
	return errors.Join(errs...)
}

// Load implements Store.
func (s *JSONLStore) Load(ctx context.Context, sessionID string) ([]Entry, error) {
	if !IsSessionID(sessionID) {
		return nil, ErrInvalidSessionID
	}
	if err := s.Flush(ctx); err != nil {
		return nil, err
	}
	data, err := afero.ReadFile(s.fs, s.Path(sessionID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: read session %s: %w", sessionID, err)
	}
	return ParseAll(data), nil
}

// Fork copies a session's resumed conversation under a new session id
// and returns it. Each user and assistant entry is copied with every field
// it has, whatever this package models, under a new uuid chained to the
// one before.
func (s *JSONLStore) Fork(ctx context.Context, sessionID string, stamp Stamp) (string, error) {
	entries, err := s.Load(ctx, sessionID) // with each line, unlike Resume
	if err != nil {
		return "", err
	}
	r := rebuild(sessionID, entries)
	id := NewUUID()
	stamp.SessionID = id
	stamp.Cwd = cmp.Or(stamp.Cwd, r.Cwd)
	parent := ""
	var out []Entry
	for _, e := range r.Messages {
		if e.Synthetic || e.Message == nil || (e.Type != TypeUser && e.Type != TypeAssistant) {
			continue
		}
		n, ok := rechain(e.Entry, id, parent)
		if !ok {
			n = MessageEntry{Type: e.Type, Parent: parent, Message: *e.Message, Time: e.Time(), IsMeta: e.IsMeta}.Encode(stamp)
		}
		parent = n.UUID
		out = append(out, n)
	}
	if err := s.Append(ctx, id, out...); err != nil {
		return "", err
	}
	return id, s.Flush(ctx)
}

// rechain returns a copy of a message entry's line under session id, with
// a new uuid and parent as its parentUuid, its other fields as they were;
// ok is false when the line does not hold those fields as expected.
func rechain(e Entry, sessionID, parent string) (Entry, bool) {
	raw := string(e.Raw)
	quote := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	oldParent := `"parentUuid":null`
	if e.ParentUUID != nil {
		oldParent = `"parentUuid":` + quote(*e.ParentUUID)
	}
	newParent := `"parentUuid":null`
	if parent != "" {
		newParent = `"parentUuid":` + quote(parent)
	}
	swaps := [][2]string{
		{oldParent, newParent},
		{`"uuid":` + quote(e.UUID), `"uuid":` + quote(NewUUID())},
		{`"sessionId":` + quote(e.SessionID), `"sessionId":` + quote(sessionID)},
	}
	for _, sw := range swaps {
		if strings.Count(raw, sw[0]) != 1 {
			return Entry{}, false
		}
		raw = strings.Replace(raw, sw[0], sw[1], 1)
	}
	n, ok := ParseLine([]byte(raw))
	return n, ok && n.SessionID == sessionID && n.Parent() == parent
}

// readWindows reads the first and last half of scratch's length of a file
// (the same bytes twice for a small file) into scratch, and returns them
// with the file's size and mtime.
func readWindows(fsys afero.Fs, path string, scratch []byte) (head, tail []byte, info fs.FileInfo, err error) {
	n := int64(len(scratch) / 2)
	f, err := fsys.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, nil, nil, err
	}
	size := info.Size()
	head = scratch[:min(size, n)]
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, nil, nil, err
	}
	if size <= n {
		return head, head, info, nil
	}
	tail = scratch[n : 2*n]
	if _, err := f.ReadAt(tail, size-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, nil, err
	}
	return head, tail, info, nil
}

package filehistory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/defaults"
)

// defaultMaxSnapshots is the default number of snapshots a Tracker keeps.
const defaultMaxSnapshots = 100

// entryType is the transcript entry type of a snapshot line.
const entryType = "file-history-snapshot"

// Errors.
var (
	// ErrInvalidHistoryName: a history is named by its session ID (or, for
	// a background job's history, by the job: "extract-runs"), and the
	// name is its backup directory, so it must be one path element of
	// letters, digits, '.', '_' or '-'.
	ErrInvalidHistoryName = errors.New("filehistory: invalid history name (a session ID, or a job's name of letters, digits, '.', '_' and '-')")
	// ErrRelativePath: tracked paths must be absolute, so that a backup
	// names one file whatever the working directory.
	ErrRelativePath = errors.New("filehistory: path is not absolute")
	// ErrNoSnapshot: TrackEdit came before the session's first
	// MakeSnapshot; take a snapshot before handling each prompt.
	ErrNoSnapshot = errors.New("filehistory: no snapshot yet; call MakeSnapshot before the turn's first edit")
	// ErrUnknownSnapshot: Rewind was given a message id no kept snapshot
	// has (never taken, or dropped past Options.MaxSnapshots).
	ErrUnknownSnapshot = errors.New("filehistory: no snapshot for that message id")
	// ErrNotRegularFile: only regular files are tracked.
	ErrNotRegularFile = errors.New("filehistory: not a regular file")
)

// Backup is one recorded version of a tracked file.
type Backup struct {
	// BackupFileName is the name of the copy in the backup directory, or
	// "" when the file did not exist at this version.
	BackupFileName string
	Version        int
	BackupTime     time.Time
}

// Existed reports whether the file existed at this version.
func (b Backup) Existed() bool { return b.BackupFileName != "" }

// Snapshot is the state of every tracked file when a message was handled.
type Snapshot struct {
	MessageID          string
	TrackedFileBackups map[string]Backup // by absolute path
	Timestamp          time.Time
}

// Options tunes a Tracker. The zero value means the documented defaults.
type Options struct {
	// MaxSnapshots caps the kept snapshots (default 100).
	MaxSnapshots int
	// MaxAge, when positive, also drops snapshots older than this (the
	// newest is always kept), with the backups only they named.
	MaxAge time.Duration
	// Journal, when set, receives each snapshot and each file a turn adds
	// to it as a transcript line (see the package comment). An error from
	// it is returned by the call that produced the line; the snapshot is
	// kept.
	Journal func(ctx context.Context, line []byte) error
	// SnapshotUpdates journals a file a turn adds to its snapshot as the
	// whole snapshot again ("isSnapshotUpdate": true), as Claude Code
	// 2.1.88 writes it, instead of one file-history-delta line (2.1.328).
	// Each such line is as long as the snapshot, so a turn that touches n
	// files journals O(n²) bytes; use it only for a reader that needs it.
	SnapshotUpdates bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Tracker records file versions for one session. It is safe for
// concurrent use.
type Tracker struct {
	fs        afero.Fs
	dir       string
	sessionID string
	opts      Options

	mu      sync.Mutex
	snaps   []Snapshot
	order   []string          // tracked paths, first tracked first
	first   map[string]Backup // each path's first version
	latest  map[string]Backup // each path's newest version
	version map[string]int    // each path's highest version number
	// stamps holds each path's stat when it last matched its newest
	// version, so an unchanged file is recognised without reading it.
	stamps map[string]stamp
	// compact, set by Open, rewrites the journal file with the given
	// lines; journalBytes is its size and compactAt the size at which
	// the next rewrite is due.
	compact                 func(data []byte) error
	journalBytes, compactAt int
}

// stamp is what a stat says of a file: when it still says the same, the
// file is taken as unchanged. A stamp is kept only for a file last
// modified more than racyWindow before it was taken, so a rewrite of the
// same size within one coarse mtime tick cannot go unseen (the "racy
// stamp" rule of version control systems).
type stamp struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

func stampOf(info fs.FileInfo) stamp {
	return stamp{size: info.Size(), mtime: info.ModTime(), mode: info.Mode()}
}

const racyWindow = 100 * time.Millisecond

// keepStamp remembers info as path's stamp unless it is too recent to
// trust.
func (t *Tracker) keepStamp(path string, info fs.FileInfo) {
	if time.Since(info.ModTime()) > racyWindow {
		t.stamps[path] = stampOf(info)
	} else {
		delete(t.stamps, path)
	}
}

var historyNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// backupDir returns where a session's backups live.
func backupDir(configHome, sessionID string) string {
	return filepath.Join(configHome, "file-history", sessionID)
}

// backupName returns the backup file name of version v of path.
func backupName(path string, v int) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:])[:16] + "@v" + strconv.Itoa(v)
}

// NewTracker returns an empty Tracker for a session whose backups go under
// configHome (Claude Code's config home, e.g. ~/.claude).
func NewTracker(fsys afero.Fs, configHome, sessionID string, opts Options) (*Tracker, error) {
	if fsys == nil {
		return nil, errors.New("filehistory: NewTracker needs a filesystem")
	}
	if configHome == "" || !filepath.IsAbs(configHome) {
		return nil, fmt.Errorf("filehistory: config home must be an absolute directory: %w", ErrRelativePath)
	}
	if !historyNameRe.MatchString(sessionID) || sessionID == "." || sessionID == ".." {
		return nil, ErrInvalidHistoryName
	}
	defaults.IfUnset(&opts.MaxSnapshots, defaultMaxSnapshots)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Tracker{
		fs: fsys, dir: backupDir(configHome, sessionID), sessionID: sessionID, opts: opts,
		first: map[string]Backup{}, latest: map[string]Backup{}, version: map[string]int{}, stamps: map[string]stamp{},
	}, nil
}

// Dir returns the session's backup directory.
func (t *Tracker) Dir() string { return t.dir }

// Snapshots returns the kept snapshots, oldest first.
func (t *Tracker) Snapshots() []Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Snapshot, len(t.snaps))
	for i, s := range t.snaps {
		out[i] = s.clone()
	}
	return out
}

// Tracked returns every tracked path, first tracked first.
func (t *Tracker) Tracked() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.order...)
}

// CanRewind reports whether a snapshot for messageID is kept.
func (t *Tracker) CanRewind(messageID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.find(messageID) >= 0
}

// SnapshotFileError is a tracked file MakeSnapshot could not back up (no
// longer a regular file, or unreadable): the snapshot was taken without
// it, and a rewind to it leaves that file as it is.
type SnapshotFileError struct {
	Path string
	Err  error
}

func (e *SnapshotFileError) Error() string {
	return fmt.Sprintf("filehistory: %s left out of the snapshot: %v", e.Path, e.Err)
}

func (e *SnapshotFileError) Unwrap() error { return e.Err }

// MakeSnapshot records the state of every tracked file before the message
// messageID is handled. Files unchanged since their newest version share
// it; changed ones get a new version. A file it cannot back up is left out
// with a *SnapshotFileError (the snapshot is taken all the same); any
// other error means no snapshot.
func (t *Tracker) MakeSnapshot(ctx context.Context, messageID string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	snap := Snapshot{MessageID: messageID, TrackedFileBackups: map[string]Backup{}, Timestamp: t.opts.Now()}
	var errs []error
	for _, p := range t.order {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := t.currentVersion(p)
		if err != nil {
			errs = append(errs, &SnapshotFileError{Path: p, Err: err})
			continue
		}
		snap.TrackedFileBackups[p] = b
	}
	t.snaps = append(t.snaps, snap)
	n := len(t.snaps) - t.opts.MaxSnapshots
	if t.opts.MaxAge > 0 {
		for n < len(t.snaps)-1 && snap.Timestamp.Sub(t.snaps[max(n, 0)].Timestamp) > t.opts.MaxAge {
			n = max(n, 0) + 1
		}
	}
	if n > 0 {
		dropped := t.snaps[:n]
		t.snaps = append([]Snapshot(nil), t.snaps[n:]...)
		t.removeUnreferenced(dropped)
	}
	if err := t.journal(ctx, snap, false); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// TrackEdit backs path up as it is now, unless the current turn already
// did. Call it before every write a tool makes to path.
func (t *Tracker) TrackEdit(ctx context.Context, path string) error {
	if !filepath.IsAbs(path) {
		return ErrRelativePath
	}
	path = filepath.Clean(path)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.snaps) == 0 {
		return ErrNoSnapshot
	}
	cur := &t.snaps[len(t.snaps)-1]
	if _, ok := cur.TrackedFileBackups[path]; ok {
		return nil
	}
	b, err := t.currentVersion(path)
	if err != nil {
		return err
	}
	if _, ok := t.first[path]; !ok {
		t.order = append(t.order, path)
		t.first[path] = b
	}
	cur.TrackedFileBackups[path] = b
	if t.opts.SnapshotUpdates {
		return t.journal(ctx, *cur, true)
	}
	return t.journalLine(ctx, encodeDelta(cur.MessageID, path, b))
}

// currentVersion returns the newest version of path when the file still
// matches it, else backs the file up as a new version.
func (t *Tracker) currentVersion(path string) (Backup, error) {
	if b, ok := t.latest[path]; ok {
		same, err := t.matches(path, b)
		if err != nil {
			return Backup{}, err
		}
		if same {
			return b, nil
		}
	}
	v := t.version[path] + 1
	b := Backup{Version: v, BackupTime: t.opts.Now()}
	info, err := t.fs.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Recorded as a version without a backup file.
	case err != nil:
		return Backup{}, fmt.Errorf("filehistory: stat tracked file: %w", err)
	case !info.Mode().IsRegular():
		return Backup{}, ErrNotRegularFile
	default:
		data, err := afero.ReadFile(t.fs, path)
		if err != nil {
			return Backup{}, fmt.Errorf("filehistory: read tracked file: %w", err)
		}
		if err := t.fs.MkdirAll(t.dir, 0o700); err != nil {
			return Backup{}, fmt.Errorf("filehistory: create backup directory: %w", err)
		}
		name := backupName(path, v)
		if err := atomicfile.WriteFileNoSync(t.fs, filepath.Join(t.dir, name), data, info.Mode().Perm()); err != nil {
			return Backup{}, fmt.Errorf("filehistory: write backup: %w", err)
		}
		b.BackupFileName = name
		t.keepStamp(path, info)
	}
	t.version[path] = v
	t.latest[path] = b
	return b, nil
}

// matches reports whether path is in the state backup b recorded:
// absent for a non-existence version, else same mode, size and bytes.
func (t *Tracker) matches(path string, b Backup) (bool, error) {
	info, err := t.fs.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return !b.Existed(), nil
	}
	if err != nil {
		return false, fmt.Errorf("filehistory: stat tracked file: %w", err)
	}
	if !b.Existed() {
		return false, nil
	}
	if st, ok := t.stamps[path]; ok && t.latest[path] == b && st == stampOf(info) {
		return true, nil
	}
	binfo, err := t.fs.Stat(filepath.Join(t.dir, b.BackupFileName))
	if err != nil {
		return false, fmt.Errorf("filehistory: backup %s is missing: %w", b.BackupFileName, err)
	}
	if info.Mode().Perm() != binfo.Mode().Perm() || info.Size() != binfo.Size() {
		return false, nil
	}
	cur, err := afero.ReadFile(t.fs, path)
	if err != nil {
		return false, fmt.Errorf("filehistory: read tracked file: %w", err)
	}
	old, err := afero.ReadFile(t.fs, filepath.Join(t.dir, b.BackupFileName))
	if err != nil {
		return false, fmt.Errorf("filehistory: read backup: %w", err)
	}
	same := bytes.Equal(cur, old)
	if same && t.latest[path] == b {
		t.keepStamp(path, info)
	}
	return same, nil
}

// removeUnreferenced deletes the backup files of dropped snapshots that
// no kept snapshot, first version or newest version still names.
func (t *Tracker) removeUnreferenced(dropped []Snapshot) {
	keep := map[string]bool{}
	for _, s := range t.snaps {
		for _, b := range s.TrackedFileBackups {
			keep[b.BackupFileName] = true
		}
	}
	for _, m := range []map[string]Backup{t.first, t.latest} {
		for _, b := range m {
			keep[b.BackupFileName] = true
		}
	}
	for _, s := range dropped {
		for _, b := range s.TrackedFileBackups {
			if b.Existed() && !keep[b.BackupFileName] {
				_ = t.fs.Remove(filepath.Join(t.dir, b.BackupFileName))
				keep[b.BackupFileName] = true // once
			}
		}
	}
}

func (t *Tracker) find(messageID string) int {
	for i := len(t.snaps) - 1; i >= 0; i-- {
		if t.snaps[i].MessageID == messageID {
			return i
		}
	}
	return -1
}

func (s Snapshot) clone() Snapshot {
	s.TrackedFileBackups = maps.Clone(s.TrackedFileBackups)
	return s
}

// journalTime is the timestamp format of Claude Code transcripts.
const journalTime = "2006-01-02T15:04:05.000Z"

type wireBackup struct {
	BackupFileName *string `json:"backupFileName"`
	Version        int     `json:"version"`
	BackupTime     string  `json:"backupTime"`
	// RealParentDir is the absolute real directory of the file, which
	// Claude Code 2.1.328 records beside a key relative to the project.
	RealParentDir string `json:"realParentDir,omitempty"`
}

type wireSnapshot struct {
	MessageID          string                `json:"messageId"`
	TrackedFileBackups map[string]wireBackup `json:"trackedFileBackups"`
	Timestamp          string                `json:"timestamp"`
}

type wireEntry struct {
	Type             string       `json:"type"`
	MessageID        string       `json:"messageId"`
	Snapshot         wireSnapshot `json:"snapshot"`
	IsSnapshotUpdate bool         `json:"isSnapshotUpdate"`
}

// deltaEntryType is the line Claude Code 2.1.328 writes when a turn first
// tracks a file: one file added to the prompt's snapshot.
const deltaEntryType = "file-history-delta"

type wireDelta struct {
	Type              string     `json:"type"`
	MessageID         string     `json:"messageId,omitempty"`
	SnapshotMessageID string     `json:"snapshotMessageId"`
	TrackingPath      string     `json:"trackingPath"`
	Backup            wireBackup `json:"backup"`
	Timestamp         string     `json:"timestamp,omitempty"`
}

// encodeEntry returns the transcript line for a snapshot (update when it
// changes one already journaled).
func encodeEntry(s Snapshot, update bool) []byte {
	ws := wireSnapshot{MessageID: s.MessageID, TrackedFileBackups: map[string]wireBackup{}, Timestamp: s.Timestamp.UTC().Format(journalTime)}
	for p, b := range s.TrackedFileBackups {
		ws.TrackedFileBackups[p] = toWire(b)
	}
	line, _ := json.Marshal(wireEntry{Type: entryType, MessageID: s.MessageID, Snapshot: ws, IsSnapshotUpdate: update})
	return line
}

// toWire is b as a journal line records it.
func toWire(b Backup) wireBackup {
	wb := wireBackup{Version: b.Version, BackupTime: b.BackupTime.UTC().Format(journalTime)}
	if b.Existed() {
		name := b.BackupFileName
		wb.BackupFileName = &name
	}
	return wb
}

// encodeDelta returns the file-history-delta line that adds path, at
// backup b, to the snapshot of messageID. The key is the absolute path,
// with its parent directory as realParentDir.
func encodeDelta(messageID, path string, b Backup) []byte {
	wb := toWire(b)
	wb.RealParentDir = filepath.Dir(path)
	line, _ := json.Marshal(wireDelta{Type: deltaEntryType, MessageID: messageID, SnapshotMessageID: messageID,
		TrackingPath: path, Backup: wb, Timestamp: b.BackupTime.UTC().Format(journalTime)})
	return line
}

// decodeEntry parses a snapshot line; ok is false for any other line.
func decodeEntry(line []byte) (s Snapshot, update, ok bool) {
	var we wireEntry
	if json.Unmarshal(line, &we) != nil || we.Type != entryType || we.Snapshot.MessageID == "" {
		return Snapshot{}, false, false
	}
	s = Snapshot{MessageID: we.Snapshot.MessageID, TrackedFileBackups: map[string]Backup{}}
	s.Timestamp, _ = time.Parse(time.RFC3339Nano, we.Snapshot.Timestamp)
	for p, wb := range we.Snapshot.TrackedFileBackups {
		if abs, b, ok := decodeBackup(p, wb); ok {
			s.TrackedFileBackups[abs] = b
		}
	}
	return s, we.IsSnapshotUpdate, true
}

// decodeBackup reads one tracked file: its key is an absolute path
// (agentmem, Claude Code 2.1.88) or, as Claude Code 2.1.328 writes it,
// relative to the project with the file's real parent directory beside
// it. ok is false for a key or backup name that cannot be trusted.
func decodeBackup(key string, wb wireBackup) (string, Backup, bool) {
	if wb.Version <= 0 {
		return "", Backup{}, false
	}
	abs := key
	if !filepath.IsAbs(key) {
		rel := filepath.Clean(filepath.FromSlash(key))
		if !filepath.IsAbs(wb.RealParentDir) || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", Backup{}, false
		}
		abs = filepath.Join(wb.RealParentDir, filepath.Base(rel))
	}
	b := Backup{Version: wb.Version}
	b.BackupTime, _ = time.Parse(time.RFC3339Nano, wb.BackupTime)
	if wb.BackupFileName != nil {
		if filepath.Base(*wb.BackupFileName) != *wb.BackupFileName || *wb.BackupFileName == ".." {
			return "", Backup{}, false // a name that would leave the backup directory
		}
		b.BackupFileName = *wb.BackupFileName
	}
	return filepath.Clean(abs), b, true
}

// decodeDelta parses a file-history-delta line: the snapshot it adds to,
// the file and its backup; ok is false for any other line.
func decodeDelta(line []byte) (snapshotID, path string, b Backup, ok bool) {
	var wd wireDelta
	if json.Unmarshal(line, &wd) != nil || wd.Type != deltaEntryType || wd.SnapshotMessageID == "" {
		return "", "", Backup{}, false
	}
	path, b, ok = decodeBackup(wd.TrackingPath, wd.Backup)
	return wd.SnapshotMessageID, path, b, ok
}

func (t *Tracker) journal(ctx context.Context, s Snapshot, update bool) error {
	return t.journalLine(ctx, encodeEntry(s, update))
}

// compactFloor is the journal size below which Open's file is never
// rewritten.
const compactFloor = 1 << 20

// journalLine hands line to the journal. A journal file that has grown
// to twice what the kept snapshots need (past compactFloor) is then
// rewritten with one line per kept snapshot, so a long-lived history
// reads back in time proportional to what it keeps, not to its age.
func (t *Tracker) journalLine(ctx context.Context, line []byte) error {
	if t.opts.Journal == nil {
		return nil
	}
	if err := t.opts.Journal(ctx, line); err != nil {
		return fmt.Errorf("filehistory: journal snapshot: %w", err)
	}
	if t.compact == nil {
		return nil
	}
	t.journalBytes += len(line) + 1
	if t.journalBytes < t.compactAt {
		return nil
	}
	data := t.encodeKept()
	if 2*len(data) > t.journalBytes {
		t.compactAt = 2 * len(data) // mostly what it keeps: not worth a rewrite yet
		return nil
	}
	if err := t.compact(data); err != nil {
		return fmt.Errorf("filehistory: compact journal: %w", err)
	}
	t.journalBytes, t.compactAt = len(data), max(compactFloor, 2*len(data))
	return nil
}

// encodeKept returns the journal of the kept snapshots: one line each.
func (t *Tracker) encodeKept() []byte {
	var buf bytes.Buffer
	for _, s := range t.snaps {
		buf.Write(encodeEntry(s, false))
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// Restore rebuilds the tracker from journaled lines in file order, as read
// back from a transcript after a restart; other lines are ignored. It
// replaces whatever the tracker held.
func (t *Tracker) Restore(lines [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.snaps, t.order = nil, nil
	t.first, t.latest, t.version, t.stamps = map[string]Backup{}, map[string]Backup{}, map[string]int{}, map[string]stamp{}
	for _, line := range lines {
		if !bytes.Contains(line, []byte(`"file-history-`)) {
			continue // most transcript lines: no need to decode them
		}
		if bytes.Contains(line, []byte(`"`+deltaEntryType+`"`)) {
			if id, p, b, ok := decodeDelta(line); ok {
				if i := t.find(id); i >= 0 {
					t.snaps[i].TrackedFileBackups[p] = b
				}
				continue
			}
		}
		s, update, ok := decodeEntry(line)
		if !ok {
			continue
		}
		if i := t.find(s.MessageID); update && i >= 0 {
			t.snaps[i] = s
		} else {
			t.snaps = append(t.snaps, s)
		}
	}
	if n := len(t.snaps) - t.opts.MaxSnapshots; n > 0 {
		t.snaps = append([]Snapshot(nil), t.snaps[n:]...)
	}
	for _, s := range t.snaps {
		for _, p := range slices.Sorted(maps.Keys(s.TrackedFileBackups)) { // a stable order
			b := s.TrackedFileBackups[p]
			if _, ok := t.first[p]; !ok {
				t.order = append(t.order, p)
				t.first[p] = b
			}
			if b.Version >= t.version[p] {
				t.version[p] = b.Version
				t.latest[p] = b
			}
		}
	}
}

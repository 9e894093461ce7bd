package filehistory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
)

// journalName is the file in a session's backup directory that Open keeps
// the snapshot lines in.
const journalName = "snapshots.jsonl"

// Open returns the Tracker of a session whose snapshots live in a journal
// file beside its backups (<backup dir>/snapshots.jsonl): what the file
// holds is restored, and new snapshots are appended to it, so the history
// survives the process and `agentmem history` and `agentmem rewind` can
// read it. A journal that has grown past twice what its kept snapshots
// need (and past 1 MiB) is rewritten with just those, atomically, by the
// tracker's next journaled line. Use it for trackers without a transcript, such as one per
// background job. One process at a time may write a session's journal.
// opts.Journal, when set, receives the lines instead of the file.
//
// A session that has no journal but a transcript of Claude Code's
// (<configHome>/projects/*/<sessionID>.jsonl) is read from the snapshot
// and file-history-delta lines of that transcript, in 2.1.88's layout
// (absolute keys) or 2.1.328's (keys relative to the project, with the
// file's real parent directory): its checkpoints list and rewind as
// agentmem's own. Such a tracker journals nowhere (opts.Journal aside):
// the transcript is Claude Code's to write.
func Open(fsys afero.Fs, configHome, sessionID string, opts Options) (*Tracker, error) {
	t, err := NewTracker(fsys, configHome, sessionID, opts)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(t.dir, journalName)
	data, err := afero.ReadFile(fsys, path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("filehistory: read journal: %w", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if transcript, ok := claudeTranscript(fsys, configHome, sessionID); ok {
			raw, err := afero.ReadFile(fsys, transcript)
			if err != nil {
				return nil, fmt.Errorf("filehistory: read the session's transcript: %w", err)
			}
			t.Restore(bytes.Split(raw, []byte("\n")))
			if t.opts.Journal == nil {
				t.opts.Journal = func(context.Context, []byte) error { return nil }
			}
			return t, nil
		}
	}
	var lines [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, l)
		}
	}
	t.Restore(lines)
	if t.opts.Journal == nil {
		// The journal is rewritten by a tracker that writes to it (at its
		// next line past compactAt), never by one that only reads it, so
		// `agentmem history` cannot drop a line a writer appends meanwhile.
		t.compact = func(data []byte) error { return atomicfile.WriteFile(fsys, path, data, 0o600) }
		t.journalBytes, t.compactAt = len(data), compactFloor
		t.opts.Journal = func(_ context.Context, line []byte) error {
			if err := fsys.MkdirAll(t.dir, 0o700); err != nil {
				return err
			}
			f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			_, werr := f.Write(append(bytes.Clone(line), '\n'))
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			return werr
		}
	}
	return t, nil
}

// Sessions lists the sessions with a journal under configHome.
func Sessions(fsys afero.Fs, configHome string) ([]string, error) {
	root := filepath.Join(configHome, "file-history")
	des, err := afero.ReadDir(fsys, root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		ok, _ := afero.Exists(fsys, filepath.Join(root, de.Name(), journalName))
		if !ok {
			_, ok = claudeTranscript(fsys, configHome, de.Name())
		}
		if ok {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

// claudeTranscript returns the transcript Claude Code keeps for a session
// (<configHome>/projects/<project>/<sessionID>.jsonl), if there is one.
func claudeTranscript(fsys afero.Fs, configHome, sessionID string) (string, bool) {
	projects := filepath.Join(configHome, "projects")
	des, err := afero.ReadDir(fsys, projects)
	if err != nil {
		return "", false
	}
	for _, de := range des {
		p := filepath.Join(projects, de.Name(), sessionID+".jsonl")
		if fi, err := fsys.Stat(p); de.IsDir() && err == nil && fi.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// Touched returns the files changed during the turn that followed the
// snapshot of messageID: those whose version differs in the next
// snapshot, or, after the newest snapshot, those that differ from it now.
func (t *Tracker) Touched(messageID string) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.find(messageID)
	if i < 0 {
		return nil, ErrUnknownSnapshot
	}
	return t.touchedLocked(i)
}

// touchedLocked is Touched for snapshot i, under t.mu.
func (t *Tracker) touchedLocked(i int) ([]string, error) {
	var out []string
	for _, p := range t.order {
		before, ok := t.snaps[i].TrackedFileBackups[p]
		if !ok {
			before = t.first[p]
		}
		if i+1 < len(t.snaps) {
			after, ok := t.snaps[i+1].TrackedFileBackups[p]
			if ok && after.Version != before.Version {
				out = append(out, p)
			}
			continue
		}
		same, err := t.matches(p, before)
		if err != nil {
			return out, err
		}
		if !same {
			out = append(out, p)
		}
	}
	return out, nil
}

// FileDiff is what the turn after a snapshot did to one file.
type FileDiff struct {
	Path string
	// Created and Deleted report a file that appeared or went away.
	Created, Deleted bool
	// Insertions and Deletions count the lines the turn added and removed.
	Insertions, Deletions int
	// Before and After are the file's content around the turn (nil when
	// it did not exist).
	Before, After []byte
}

// Diff returns, for each file Touched reports, its content before and
// after the turn that followed the snapshot of messageID and the line
// counts between them.
func (t *Tracker) Diff(messageID string) ([]FileDiff, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.find(messageID)
	if i < 0 {
		return nil, ErrUnknownSnapshot
	}
	paths, err := t.touchedLocked(i)
	if err != nil {
		return nil, err
	}
	var out []FileDiff
	for _, p := range paths {
		before, ok := t.snaps[i].TrackedFileBackups[p]
		if !ok {
			before = t.first[p]
		}
		fd := FileDiff{Path: p}
		var existedBefore, existsAfter bool
		if fd.Before, existedBefore, err = t.backupContent(before); err != nil {
			return out, err
		}
		if i+1 < len(t.snaps) {
			fd.After, existsAfter, err = t.backupContent(t.snaps[i+1].TrackedFileBackups[p])
		} else {
			fd.After, err = afero.ReadFile(t.fs, p)
			existsAfter = err == nil
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			return out, err
		}
		fd.Created, fd.Deleted = !existedBefore && existsAfter, existedBefore && !existsAfter
		fd.Insertions, fd.Deletions = lineDiff(fd.Before, fd.After)
		out = append(out, fd)
	}
	return out, nil
}

// backupContent returns what version b holds (exists false: no file).
func (t *Tracker) backupContent(b Backup) ([]byte, bool, error) {
	if !b.Existed() {
		return nil, false, nil
	}
	data, err := afero.ReadFile(t.fs, filepath.Join(t.dir, b.BackupFileName))
	if err != nil {
		return nil, false, fmt.Errorf("filehistory: read backup: %w", err)
	}
	return data, true, nil
}

// CheckpointID names the snapshot a background job takes before it
// writes: the job's name and the time, "extract-20261130T021305.955468168Z".
func CheckpointID(job string, at time.Time) string {
	return job + "-" + at.UTC().Format("20060102T150405.000000000Z")
}

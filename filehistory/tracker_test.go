package filehistory_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/transcript"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const session = "3f2b9a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"

type disk struct {
	t    *testing.T
	fs   afero.Fs
	home string
	work string
}

func newDisk(t *testing.T) disk {
	root := t.TempDir()
	d := disk{t: t, fs: afero.NewOsFs(), home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	require.NoError(t, os.MkdirAll(d.work, 0o755))
	return d
}

func (d disk) path(name string) string { return filepath.Join(d.work, name) }

func (d disk) write(name, content string, mode os.FileMode) {
	d.t.Helper()
	p := d.path(name)
	require.NoError(d.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(d.t, os.WriteFile(p, []byte(content), mode))
	require.NoError(d.t, os.Chmod(p, mode))
}

func (d disk) read(name string) (string, os.FileMode, bool) {
	d.t.Helper()
	p := d.path(name)
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return "", 0, false
	}
	require.NoError(d.t, err)
	info, err := os.Stat(p)
	require.NoError(d.t, err)
	return string(b), info.Mode().Perm(), true
}

// edit is what a host's Write tool does: track, then write.
func (d disk) edit(tr *filehistory.Tracker, name, content string, mode os.FileMode) {
	d.t.Helper()
	require.NoError(d.t, tr.TrackEdit(context.Background(), d.path(name)))
	d.write(name, content, mode)
}

func (d disk) remove(tr *filehistory.Tracker, name string) {
	d.t.Helper()
	require.NoError(d.t, tr.TrackEdit(context.Background(), d.path(name)))
	require.NoError(d.t, os.Remove(d.path(name)))
}

type state struct {
	content string
	mode    os.FileMode
	exists  bool
}

func (d disk) state(names ...string) map[string]state {
	out := map[string]state{}
	for _, n := range names {
		c, m, ok := d.read(n)
		out[n] = state{c, m, ok}
	}
	return out
}

// threeTurns runs edits, creates, a chmod and a delete over three turns
// and returns the state of the files before each turn.
// prompt, when set, records each turn's user message after its snapshot.
func threeTurns(t *testing.T, d disk, tr *filehistory.Tracker, prompt ...func(msgID string)) []map[string]state {
	ctx := context.Background()
	names := []string{"a.md", "sub/b.md", "c.md", "d.md"}
	d.write("a.md", "alpha\nbeta\n", 0o644)
	d.write("c.md", "keep me\n", 0o600)
	var before []map[string]state

	before = append(before, d.state(names...))
	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	for _, p := range prompt {
		p("m1")
	}
	d.edit(tr, "a.md", "alpha\nBETA\ngamma\n", 0o644)
	d.edit(tr, "a.md", "alpha\nBETA\ngamma\ndelta\n", 0o644) // second edit in the turn: no new backup
	d.edit(tr, "sub/b.md", "new file\n", 0o640)

	before = append(before, d.state(names...))
	require.NoError(t, tr.MakeSnapshot(ctx, "m2"))
	for _, p := range prompt {
		p("m2")
	}
	d.edit(tr, "a.md", "alpha\n", 0o600) // content and mode
	d.remove(tr, "c.md")

	before = append(before, d.state(names...))
	require.NoError(t, tr.MakeSnapshot(ctx, "m3"))
	for _, p := range prompt {
		p("m3")
	}
	d.edit(tr, "d.md", "late\n", 0o644) // tracked only in the last turn
	d.edit(tr, "sub/b.md", "changed\n", 0o644)
	return before
}

func TestRewindRestoresContentModesAndDeletions(t *testing.T) {
	ctx := context.Background()
	for i, msg := range []string{"m1", "m2", "m3"} {
		t.Run(msg, func(t *testing.T) {
			d := newDisk(t)
			tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
			require.NoError(t, err)
			before := threeTurns(t, d, tr)
			names := []string{"a.md", "sub/b.md", "c.md", "d.md"}

			dry, err := tr.Rewind(ctx, msg, filehistory.RewindOptions{DryRun: true})
			require.NoError(t, err)
			after := d.state(names...)
			st, err := tr.Rewind(ctx, msg, filehistory.RewindOptions{})
			require.NoError(t, err)
			assert.Equal(t, dry, st, "a dry run reports what the rewind then does")
			assert.NotEmpty(t, st.FilesChanged)

			assert.Equal(t, before[i], d.state(names...), "every file is as it was before turn %s", msg)
			// The dry run itself changed nothing.
			assert.NotEqual(t, after, before[i])

			again, err := tr.Rewind(ctx, msg, filehistory.RewindOptions{})
			require.NoError(t, err)
			assert.Empty(t, again.FilesChanged, "a second rewind has nothing left to do")
		})
	}
}

func TestRewindStats(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
	require.NoError(t, err)
	d.write("a.md", "one\ntwo\nthree\n", 0o644)
	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	d.edit(tr, "a.md", "one\n2\nthree\nfour\n", 0o644)
	d.edit(tr, "new.md", "x\ny\n", 0o644)

	st, err := tr.Rewind(ctx, "m1", filehistory.RewindOptions{DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, []string{d.path("a.md"), d.path("new.md")}, st.FilesChanged)
	// a.md: "2" and "four" go, "two" comes back; new.md: two lines go.
	assert.Equal(t, 1, st.Insertions)
	assert.Equal(t, 4, st.Deletions)
}

func TestSnapshotSurvivesRestartThroughTranscript(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	projects := filepath.Join(d.home, "projects", "-work")
	store, err := transcript.NewJSONLStore(d.fs, projects, transcript.Options{})
	require.NoError(t, err)
	journal := func(ctx context.Context, line []byte) error {
		e, ok := transcript.ParseLine(line)
		require.True(t, ok)
		return store.Append(ctx, session, e)
	}
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{Journal: journal})
	require.NoError(t, err)
	parent := ""
	before := threeTurns(t, d, tr, func(msgID string) {
		e := transcript.MessageEntry{Type: transcript.TypeUser, Parent: parent,
			Message: transcript.Message{Role: "user", Content: []byte(`"turn ` + msgID + `"`)}}.Encode(transcript.Stamp{SessionID: session})
		parent = e.UUID
		require.NoError(t, store.Append(ctx, session, e))
	})
	want := tr.Snapshots()
	require.NoError(t, store.Close())

	// A new process: a new store over the same directory and a new tracker.
	store2, err := transcript.NewJSONLStore(afero.NewOsFs(), projects, transcript.Options{})
	require.NoError(t, err)
	entries, err := store2.Load(ctx, session)
	require.NoError(t, err)
	var lines [][]byte
	for _, e := range entries {
		if e.Type == transcript.TypeFileHistorySnapshot || e.Type == transcript.TypeFileHistoryDelta {
			lines = append(lines, e.Raw)
		}
	}
	require.NotEmpty(t, lines)
	tr2, err := filehistory.NewTracker(afero.NewOsFs(), d.home, session, filehistory.Options{})
	require.NoError(t, err)
	tr2.Restore(lines)
	got := tr2.Snapshots()
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].MessageID, got[i].MessageID)
		assert.Equal(t, len(want[i].TrackedFileBackups), len(got[i].TrackedFileBackups))
		for p, b := range want[i].TrackedFileBackups {
			assert.Equal(t, b.BackupFileName, got[i].TrackedFileBackups[p].BackupFileName)
			assert.Equal(t, b.Version, got[i].TrackedFileBackups[p].Version)
		}
	}

	_, err = tr2.Rewind(ctx, "m1", filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, before[0], d.state("a.md", "sub/b.md", "c.md", "d.md"))

	// The restored tracker keeps numbering versions after the old ones.
	require.NoError(t, tr2.MakeSnapshot(ctx, "m4"))
	last := tr2.Snapshots()[len(tr2.Snapshots())-1]
	assert.Greater(t, last.TrackedFileBackups[d.path("a.md")].Version, 2)
}

func TestBackupLayout(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
	require.NoError(t, err)
	d.write("a.md", "x\n", 0o640)
	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	d.edit(tr, "a.md", "y\n", 0o640)
	d.edit(tr, "absent.md", "z\n", 0o644)

	snap := tr.Snapshots()[0]
	a := snap.TrackedFileBackups[d.path("a.md")]
	assert.Equal(t, filehistory.BackupName(d.path("a.md"), 1), a.BackupFileName)
	assert.Regexp(t, `^[0-9a-f]{16}@v1$`, a.BackupFileName)
	info, err := os.Stat(filepath.Join(d.home, "file-history", session, a.BackupFileName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the backup keeps the mode")
	absent := snap.TrackedFileBackups[d.path("absent.md")]
	assert.False(t, absent.Existed())
	assert.Equal(t, 1, absent.Version)

	line := filehistory.EncodeEntry(snap, true)
	assert.Contains(t, string(line), `"backupFileName":null`)
	assert.Contains(t, string(line), `"isSnapshotUpdate":true`)
	assert.Contains(t, string(line), `"type":"file-history-snapshot"`)
}

func TestLateTrackedFileRewindsToFirstVersion(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
	require.NoError(t, err)
	d.write("x.md", "original\n", 0o644)
	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	require.NoError(t, tr.MakeSnapshot(ctx, "m2"))
	d.edit(tr, "x.md", "edited\n", 0o644)
	_, err = tr.Rewind(ctx, "m1", filehistory.RewindOptions{})
	require.NoError(t, err)
	c, _, _ := d.read("x.md")
	assert.Equal(t, "original\n", c)
}

func TestSnapshotCapAndErrors(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	_, err := filehistory.NewTracker(d.fs, d.home, "../escape", filehistory.Options{})
	assert.ErrorIs(t, err, filehistory.ErrInvalidHistoryName)
	_, err = filehistory.NewTracker(d.fs, "relative", session, filehistory.Options{})
	assert.ErrorIs(t, err, filehistory.ErrRelativePath)

	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{MaxSnapshots: 3})
	require.NoError(t, err)
	assert.ErrorIs(t, tr.TrackEdit(ctx, d.path("a.md")), filehistory.ErrNoSnapshot)
	for _, m := range []string{"m1", "m2", "m3", "m4", "m5"} {
		require.NoError(t, tr.MakeSnapshot(ctx, m))
	}
	assert.Len(t, tr.Snapshots(), 3)
	assert.False(t, tr.CanRewind("m2"))
	assert.True(t, tr.CanRewind("m3"))
	_, err = tr.Rewind(ctx, "m1", filehistory.RewindOptions{})
	assert.ErrorIs(t, err, filehistory.ErrUnknownSnapshot)

	assert.ErrorIs(t, tr.TrackEdit(ctx, "relative.md"), filehistory.ErrRelativePath)
	require.NoError(t, os.MkdirAll(d.path("dir"), 0o755))
	assert.ErrorIs(t, tr.TrackEdit(ctx, d.path("dir")), filehistory.ErrNotRegularFile)
}

func TestDecodeEntryRefusesEscapingBackupNames(t *testing.T) {
	line := []byte(`{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{"/w/a":{"backupFileName":"../../etc/passwd","version":1,"backupTime":"2026-03-01T10:00:00.000Z"},"/w/b":{"backupFileName":"0123456789abcdef@v1","version":1,"backupTime":"2026-03-01T10:00:00.000Z"},"rel":{"backupFileName":null,"version":1,"backupTime":"2026-03-01T10:00:00.000Z"}},"timestamp":"2026-03-01T10:00:00.000Z"},"isSnapshotUpdate":false}`)
	s, update, ok := filehistory.DecodeEntry(line)
	require.True(t, ok)
	assert.False(t, update)
	assert.Len(t, s.TrackedFileBackups, 1)
	assert.Contains(t, s.TrackedFileBackups, "/w/b")

	_, _, ok = filehistory.DecodeEntry([]byte(`{"type":"user"}`))
	assert.False(t, ok)
	_, _, ok = filehistory.DecodeEntry([]byte(`not json`))
	assert.False(t, ok)
}

func TestDecodeEntryReadsClaudeCodeTranscript(t *testing.T) {
	data, err := os.ReadFile("../testdata/transcripts/projects/-work-shop/11111111-1111-4111-8111-111111111111.jsonl")
	require.NoError(t, err)
	var n int
	for _, e := range transcript.ParseAll(data) {
		if e.Type == transcript.TypeFileHistorySnapshot {
			s, _, ok := filehistory.DecodeEntry(e.Raw)
			require.True(t, ok)
			assert.NotEmpty(t, s.MessageID)
			assert.False(t, s.Timestamp.IsZero())
			n++
		}
	}
	assert.Positive(t, n)
}

func TestConcurrentTrackAndSnapshot(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
	require.NoError(t, err)
	require.NoError(t, tr.MakeSnapshot(ctx, "m0"))
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 20 {
				name := filepath.Join(d.work, "w"+string(rune('a'+w))+".md")
				assert.NoError(t, tr.TrackEdit(ctx, name))
				assert.NoError(t, os.WriteFile(name, []byte{byte(i)}, 0o644))
			}
		}()
	}
	go func() {
		defer func() { done <- struct{}{} }()
		for i := range 20 {
			assert.NoError(t, tr.MakeSnapshot(ctx, "s"+string(rune('a'+i))))
		}
	}()
	for range 5 {
		<-done
	}
	_, err = tr.Rewind(ctx, "m0", filehistory.RewindOptions{})
	require.NoError(t, err)
	for w := range 4 {
		_, _, ok := d.read("w" + string(rune('a'+w)) + ".md")
		assert.False(t, ok, "files created after m0 are gone after rewinding to it")
	}
}

// TestSameSizeRewriteIsSeen: a rewrite of the same size right after a
// snapshot (within one mtime tick) still gets its own version.
func TestSameSizeRewriteIsSeen(t *testing.T) {
	ctx := context.Background()
	for range 20 {
		d := newDisk(t)
		tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
		require.NoError(t, err)
		tick := time.Now() // a coarse clock gives both writes one mtime
		require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
		d.edit(tr, "a.md", "aaaa", 0o644)
		require.NoError(t, os.Chtimes(d.path("a.md"), tick, tick))
		require.NoError(t, tr.MakeSnapshot(ctx, "m2"))
		d.write("a.md", "bbbb", 0o644) // untracked, same size, same tick
		require.NoError(t, os.Chtimes(d.path("a.md"), tick, tick))
		require.NoError(t, tr.MakeSnapshot(ctx, "m3"))
		d.write("a.md", "cccc", 0o644)
		_, err = tr.Rewind(ctx, "m3", filehistory.RewindOptions{})
		require.NoError(t, err)
		c, _, _ := d.read("a.md")
		require.Equal(t, "bbbb", c)
		_, err = tr.Rewind(ctx, "m2", filehistory.RewindOptions{})
		require.NoError(t, err)
		c, _, _ = d.read("a.md")
		require.Equal(t, "aaaa", c)
	}
}

// TestOldUnchangedFilesAreNotReread: files unchanged since long ago are
// recognised by their stat; a change to one is still seen.
func TestOldUnchangedFilesAreNotReread(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
	require.NoError(t, err)
	d.write("a.md", "old\n", 0o644)
	past := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(d.path("a.md"), past, past))
	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	require.NoError(t, tr.TrackEdit(ctx, d.path("a.md")))
	require.NoError(t, tr.MakeSnapshot(ctx, "m2"))
	assert.Equal(t, 1, tr.Snapshots()[1].TrackedFileBackups[d.path("a.md")].Version)
	d.write("a.md", "new\n", 0o644)
	require.NoError(t, os.Chtimes(d.path("a.md"), past.Add(time.Second), past.Add(time.Second)))
	require.NoError(t, tr.MakeSnapshot(ctx, "m3"))
	assert.Equal(t, 2, tr.Snapshots()[2].TrackedFileBackups[d.path("a.md")].Version)
}

// TestDroppedSnapshotsFreeTheirBackups: past MaxSnapshots the backups
// only dropped snapshots named are deleted; first versions stay, so a
// rewind to any kept snapshot still works.
func TestDroppedSnapshotsFreeTheirBackups(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{MaxSnapshots: 3})
	require.NoError(t, err)
	d.write("a.md", "v0\n", 0o644)
	for i := range 10 {
		require.NoError(t, tr.MakeSnapshot(ctx, "m"+strconv.Itoa(i)))
		d.edit(tr, "a.md", "v"+strconv.Itoa(i+1)+"\n", 0o644)
	}
	des, err := os.ReadDir(tr.Dir())
	require.NoError(t, err)
	assert.LessOrEqual(t, len(des), 5, "3 kept snapshots' versions plus the first version")
	_, err = tr.Rewind(ctx, "m7", filehistory.RewindOptions{})
	require.NoError(t, err)
	c, _, _ := d.read("a.md")
	assert.Equal(t, "v7\n", c)
}

func TestMaxAgeDropsOldSnapshots(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{MaxAge: 48 * time.Hour, Now: func() time.Time { return now }})
	require.NoError(t, err)
	d.write("a.md", "v0\n", 0o644)
	for i := range 5 {
		require.NoError(t, tr.MakeSnapshot(ctx, "day"+strconv.Itoa(i)))
		d.edit(tr, "a.md", "v"+strconv.Itoa(i+1)+"\n", 0o644)
		now = now.Add(24 * time.Hour)
	}
	var ids []string
	for _, s := range tr.Snapshots() {
		ids = append(ids, s.MessageID)
	}
	assert.Equal(t, []string{"day2", "day3", "day4"}, ids, "two days back from the newest")
	_, err = tr.Rewind(ctx, "day2", filehistory.RewindOptions{})
	require.NoError(t, err)
	c, _, _ := d.read("a.md")
	assert.Equal(t, "v2\n", c)

	now = now.Add(30 * 24 * time.Hour)
	require.NoError(t, tr.MakeSnapshot(ctx, "later"))
	assert.Len(t, tr.Snapshots(), 1, "the newest is always kept")
}

// TestRewindRestoresAModeOnlyChange: same content, another mode, is a
// change a rewind undoes.
func TestRewindRestoresAModeOnlyChange(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.NewTracker(d.fs, d.home, session, filehistory.Options{})
	require.NoError(t, err)
	d.write("a.md", "same\n", 0o644)
	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	d.edit(tr, "a.md", "same\n", 0o600)
	st, err := tr.Rewind(ctx, "m1", filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{d.path("a.md")}, st.FilesChanged)
	_, mode, _ := d.read("a.md")
	assert.Equal(t, os.FileMode(0o644), mode)
}

func TestRelativeKeysNeedTheirRealParentDir(t *testing.T) {
	name := "0123456789abcdef@v1"
	cases := map[string]struct {
		key, parent string
		want        string
	}{
		"2.1.328 key":               {"sub/deep.txt", "/p/sub", "/p/sub/deep.txt"},
		"2.1.88 absolute key":       {"/p/fh.txt", "", "/p/fh.txt"},
		"relative without a parent": {"fh.txt", "", ""},
		"a parent that is relative": {"fh.txt", "p", ""},
		"a key that climbs":         {"../etc/passwd", "/p", ""},
		"a key that is the project": {".", "/p", ""},
	}
	for label, c := range cases {
		line := []byte(`{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{"` + c.key + `":{"backupFileName":"` + name + `","version":1,"backupTime":"2026-12-01T19:02:17.192Z","realParentDir":"` + c.parent + `"}},"timestamp":"2026-12-01T19:02:17.192Z"}}`)
		s, _, ok := filehistory.DecodeEntry(line)
		require.True(t, ok, label)
		if c.want == "" {
			assert.Empty(t, s.TrackedFileBackups, label)
			continue
		}
		assert.Contains(t, s.TrackedFileBackups, c.want, label)
	}
}

func TestOpenKeepsHistoryAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	tr, err := filehistory.Open(d.fs, d.home, "extract-runs", filehistory.Options{})
	require.NoError(t, err)
	before := threeTurns(t, d, tr)

	// Another process (the CLI) opens the same history.
	again, err := filehistory.Open(afero.NewOsFs(), d.home, "extract-runs", filehistory.Options{})
	require.NoError(t, err)
	require.Len(t, again.Snapshots(), 3)
	sessions, err := filehistory.Sessions(d.fs, d.home)
	require.NoError(t, err)
	assert.Equal(t, []string{"extract-runs"}, sessions)

	touched, err := again.Touched("m1")
	require.NoError(t, err)
	assert.Equal(t, []string{d.path("a.md"), d.path("sub/b.md")}, touched)
	touched, err = again.Touched("m2")
	require.NoError(t, err)
	assert.Equal(t, []string{d.path("a.md"), d.path("c.md")}, touched)
	touched, err = again.Touched("m3")
	require.NoError(t, err)
	assert.Equal(t, []string{d.path("sub/b.md"), d.path("d.md")}, touched)
	_, err = again.Touched("nope")
	assert.ErrorIs(t, err, filehistory.ErrUnknownSnapshot)

	_, err = again.Rewind(ctx, "m2", filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, before[1], d.state("a.md", "sub/b.md", "c.md", "d.md"))

	// The first process goes on: its next snapshot sees the rewound files.
	require.NoError(t, tr.MakeSnapshot(ctx, "m4"))
	_, err = tr.Rewind(ctx, "m1", filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, before[0], d.state("a.md", "sub/b.md", "c.md", "d.md"))
}

func TestDiffShowsEachTurn(t *testing.T) {
	d := newDisk(t)
	tr, err := filehistory.Open(d.fs, d.home, "runs", filehistory.Options{})
	require.NoError(t, err)
	threeTurns(t, d, tr)
	diffs, err := tr.Diff("m1")
	require.NoError(t, err)
	require.Len(t, diffs, 2)
	assert.Equal(t, d.path("a.md"), diffs[0].Path)
	assert.Equal(t, "alpha\nbeta\n", string(diffs[0].Before))
	assert.Equal(t, "alpha\nBETA\ngamma\ndelta\n", string(diffs[0].After))
	assert.Equal(t, 3, diffs[0].Insertions)
	assert.Equal(t, 1, diffs[0].Deletions)
	assert.True(t, diffs[1].Created)

	diffs, err = tr.Diff("m2")
	require.NoError(t, err)
	require.Len(t, diffs, 2)
	assert.True(t, diffs[1].Deleted, "c.md was removed in turn 2")
	assert.Equal(t, 1, diffs[1].Deletions)

	diffs, err = tr.Diff("m3") // the newest: compared with the disk
	require.NoError(t, err)
	require.Len(t, diffs, 2)
	assert.Equal(t, "changed\n", string(diffs[0].After))
	assert.True(t, diffs[1].Created)
}

// journalSize is the size of a history's journal file.
func journalSize(t *testing.T, d disk, session string) int {
	t.Helper()
	info, err := os.Stat(filepath.Join(filehistory.BackupDir(d.home, session), filehistory.JournalName))
	require.NoError(t, err)
	return int(info.Size())
}

// A turn that writes n files journals one line per file, not the whole
// snapshot again for each: a pull of a thousand memories must not write
// a thousand-squared journal.
func TestJournalGrowsLinearlyWithTheFilesOfATurn(t *testing.T) {
	ctx := context.Background()
	size := func(n int, opts filehistory.Options) int {
		d := newDisk(t)
		tr, err := filehistory.Open(d.fs, d.home, "pull", opts)
		require.NoError(t, err)
		require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
		for i := range n {
			name := fmt.Sprintf("f%04d.md", i)
			require.NoError(t, tr.TrackEdit(ctx, d.path(name)))
			d.write(name, "x\n", 0o644)
		}
		again, err := filehistory.Open(d.fs, d.home, "pull", filehistory.Options{})
		require.NoError(t, err)
		require.Len(t, again.Snapshots(), 1)
		require.Len(t, again.Snapshots()[0].TrackedFileBackups, n, "every file the turn tracked reads back")
		return journalSize(t, d, "pull")
	}
	small, large := size(100, filehistory.Options{}), size(400, filehistory.Options{})
	assert.Less(t, float64(large)/float64(small), 4.5, "4x the files, about 4x the journal (%d B, %d B)", small, large)
	oldSmall, oldLarge := size(50, filehistory.Options{SnapshotUpdates: true}), size(100, filehistory.Options{SnapshotUpdates: true})
	assert.Greater(t, float64(oldLarge)/float64(oldSmall), 3.5, "2.1.88's whole-snapshot updates grow with the square (%d B, %d B)", oldSmall, oldLarge)
}

// A history used for a long time keeps a journal the size of what it
// keeps: once it holds twice that (past 1 MiB) it is rewritten, and what
// reads back is the same.
func TestJournalIsCompacted(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	opts := filehistory.Options{MaxSnapshots: 5}
	tr, err := filehistory.Open(d.fs, d.home, "watch", opts)
	require.NoError(t, err)
	deep := strings.Repeat("a-directory-with-a-rather-long-name/", 14)
	peak, rewrites, last := 0, 0, 0
	for turn := range 100 {
		require.NoError(t, tr.MakeSnapshot(ctx, fmt.Sprintf("m%d", turn)))
		for i := range 20 {
			name := fmt.Sprintf("%s/f%02d.md", deep, i)
			require.NoError(t, tr.TrackEdit(ctx, d.path(name)))
			d.write(name, fmt.Sprintf("turn %d\n", turn), 0o644)
		}
		size := journalSize(t, d, "watch")
		if size < last {
			rewrites++
		}
		peak, last = max(peak, size), size
	}
	assert.Positive(t, rewrites)
	assert.Less(t, peak, 2<<20, "the journal never grows far past the 1 MiB floor")

	again, err := filehistory.Open(d.fs, d.home, "watch", opts)
	require.NoError(t, err)
	want, got := tr.Snapshots(), again.Snapshots()
	require.Len(t, got, 5)
	for i := range want {
		assert.Equal(t, want[i].MessageID, got[i].MessageID)
		assert.Equal(t, len(want[i].TrackedFileBackups), len(got[i].TrackedFileBackups))
	}
	_, err = again.Rewind(ctx, "m96", filehistory.RewindOptions{})
	require.NoError(t, err)
	content, _, _ := d.read(deep + "/f07.md")
	assert.Equal(t, "turn 95\n", content, "the oldest kept checkpoint still rewinds")
}

// An old journal, long past what it keeps, is left alone by a tracker
// that only reads it, and rewritten by the next one that writes.
func TestTheNextWriteCompactsAnOldJournal(t *testing.T) {
	ctx := context.Background()
	d := newDisk(t)
	var journal []byte
	collect := func(_ context.Context, line []byte) error {
		journal = append(append(journal, line...), '\n')
		return nil
	}
	tr, err := filehistory.NewTracker(d.fs, d.home, "old", filehistory.Options{MaxSnapshots: 2, SnapshotUpdates: true, Journal: collect})
	require.NoError(t, err)
	for turn := range 12 {
		require.NoError(t, tr.MakeSnapshot(ctx, fmt.Sprintf("m%d", turn)))
		for i := range 30 {
			require.NoError(t, tr.TrackEdit(ctx, d.path(fmt.Sprintf("turn-%02d-file-%02d.md", turn, i))))
		}
	}
	require.Greater(t, len(journal), 2<<20)
	path := filepath.Join(filehistory.BackupDir(d.home, "old"), filehistory.JournalName)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, journal, 0o600))

	again, err := filehistory.Open(d.fs, d.home, "old", filehistory.Options{MaxSnapshots: 2})
	require.NoError(t, err)
	require.Len(t, again.Snapshots(), 2)
	assert.Equal(t, "m10", again.Snapshots()[0].MessageID)
	assert.Len(t, again.Snapshots()[1].TrackedFileBackups, 12*30)
	assert.Equal(t, len(journal), journalSize(t, d, "old"), "opening it to read changes nothing")
	require.NoError(t, again.MakeSnapshot(ctx, "m12"))
	after := journalSize(t, d, "old")
	assert.Less(t, after, len(journal)/10, "the journal went from %d B to %d B", len(journal), after)
	third, err := filehistory.Open(d.fs, d.home, "old", filehistory.Options{MaxSnapshots: 2})
	require.NoError(t, err)
	require.Len(t, third.Snapshots(), 2)
	assert.Equal(t, []string{"m11", "m12"}, []string{third.Snapshots()[0].MessageID, third.Snapshots()[1].MessageID}, "the rewritten journal reads back the same")
}

func TestReadStateRules(t *testing.T) {
	r := filehistory.NewReadState(filehistory.ReadStateOptions{})
	assert.NoError(t, r.CheckWrite("/m/new.md", nil, false, true), "creating a file needs no read")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("x"), true, false), filehistory.ErrNotRead)

	r.RecordRead("/m/a.md", []byte("x"), filehistory.View{Offset: 2, Limit: 1, Partial: true})
	assert.NoError(t, r.CheckWrite("/m/a.md", []byte("x"), true, false), "an edit needs any read")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("x"), true, true), filehistory.ErrNotRead, "a Write needs a whole read")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("y"), true, false), filehistory.ErrModifiedSinceRead)

	r.RecordWrite("/m/a.md", []byte("z"))
	assert.NoError(t, r.CheckWrite("/m/a.md", []byte("z"), true, true))
	r.Forget("/m/a.md")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("z"), true, true), filehistory.ErrNotRead)
}

func TestReadStateBounds(t *testing.T) {
	r := filehistory.NewReadState(filehistory.ReadStateOptions{MaxFiles: 3, MaxBytes: 10})
	for i := range 4 {
		r.RecordRead("/m/"+strconv.Itoa(i), []byte("ab"), filehistory.View{})
	}
	assert.ErrorIs(t, r.CheckWrite("/m/0", []byte("ab"), true, true), filehistory.ErrNotRead, "the least recently used file is forgotten")
	assert.NoError(t, r.CheckWrite("/m/3", []byte("ab"), true, true))

	r.RecordRead("/m/big", []byte("0123456789"), filehistory.View{}) // all 10 bytes
	for _, p := range []string{"/m/1", "/m/2", "/m/3"} {
		assert.ErrorIs(t, r.CheckWrite(p, []byte("ab"), true, true), filehistory.ErrNotRead, "bytes bound: %s", p)
	}
	r.RecordRead("/m/huge", make([]byte, 11), filehistory.View{})
	assert.ErrorIs(t, r.CheckWrite("/m/huge", make([]byte, 11), true, true), filehistory.ErrNotRead, "a file over the bound is never remembered")
}

func TestReadStateChanges(t *testing.T) {
	r := filehistory.NewReadState(filehistory.ReadStateOptions{})
	disk := map[string]string{"/m/a": "mine", "/m/b": "mine", "/m/c": "read only"}
	r.RecordWrite("/m/a", []byte("mine"))
	r.RecordWrite("/m/b", []byte("mine"))
	r.RecordRead("/m/c", []byte("read only"), filehistory.View{})
	read := func(p string) ([]byte, error) {
		s, ok := disk[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	assert.Empty(t, r.Changes(read))
	disk["/m/a"] = "theirs"
	delete(disk, "/m/b")
	disk["/m/c"] = "changed, but never written by the agent"
	ch := r.Changes(read)
	assert.ElementsMatch(t, []filehistory.Change{{Path: "/m/a", Content: []byte("theirs")}, {Path: "/m/b", Deleted: true}}, ch)
	assert.Empty(t, r.Changes(read))
	assert.Empty(t, r.Changes(func(string) ([]byte, error) { return nil, errors.New("io") }), "an unreadable file is not a change")
}

// lateWriter is a filesystem on which another writer gets in just before
// the first lock the gate takes: it writes race into target then, once.
type lateWriter struct {
	afero.Fs
	once   sync.Once
	target string
	race   []byte
}

func (l *lateWriter) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if strings.HasSuffix(name, ".lock") {
		l.once.Do(func() { _ = afero.WriteFile(l.Fs, l.target, l.race, 0o644) })
	}
	return l.Fs.OpenFile(name, flag, perm)
}

// TestRewindThroughTheDir: a rewind given the memory directory writes
// through its gate: a change that lands after the rewind's check and
// before its write is not overwritten (the check is made again under the
// write's lock), and the rest is put back; a tracked file outside the
// directory is not touched.
func TestRewindThroughTheDir(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	mem, other := filepath.Join(root, "memory"), filepath.Join(root, "elsewhere")
	require.NoError(t, os.MkdirAll(mem, 0o755))
	require.NoError(t, os.MkdirAll(other, 0o755))
	a, b, out := filepath.Join(mem, "a.md"), filepath.Join(mem, "b.md"), filepath.Join(other, "out.md")
	for _, p := range []string{a, b, out} {
		require.NoError(t, os.WriteFile(p, []byte("v1\n"), 0o644))
	}
	tr, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(root, "home"), session, filehistory.Options{})
	require.NoError(t, err)
	require.NoError(t, tr.MakeSnapshot(ctx, "before"))
	for _, p := range []string{a, b, out} {
		require.NoError(t, tr.TrackEdit(ctx, p))
		require.NoError(t, os.WriteFile(p, []byte("v2, the change to undo\n"), 0o644))
	}
	require.NoError(t, tr.MakeSnapshot(ctx, "after"))

	fsys := &lateWriter{Fs: afero.NewOsFs(), target: a, race: []byte("v3, written during the rewind\n")}
	d, err := memdir.NewDir(fsys, mem, memdir.DirOptions{})
	require.NoError(t, err)
	_, err = tr.Rewind(ctx, "before", filehistory.RewindOptions{IfUnchangedSince: "after", Dir: d})
	var changed *filehistory.ChangedSinceError
	require.True(t, errors.As(err, &changed), "%v", err)
	assert.Equal(t, []string{a}, changed.Paths)
	got, _ := os.ReadFile(a)
	assert.Equal(t, "v3, written during the rewind\n", string(got), "the late change stands")
	got, _ = os.ReadFile(b)
	assert.Equal(t, "v1\n", string(got), "the rest is put back")
	got, _ = os.ReadFile(out)
	assert.Equal(t, "v2, the change to undo\n", string(got), "a file outside the directory is not touched")
	var pte *memdir.PathTraversalError
	assert.True(t, errors.As(err, &pte), "the file outside is refused: %v", err)
}

// BenchmarkCheckpointBeforeJob: a 2,000-file memory directory whose
// earlier jobs touched 50 files; each iteration is one more job that
// checkpoints and then changes 5 files. The floor is what any checkpoint
// must at least do: a stat walk of the directory plus copying the 5 files
// the job changes. Reported as x-floor (target: at most 1.5).
func BenchmarkCheckpointBeforeJob(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	dir := filepath.Join(root, "memory")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("a line of memory text that is long enough to matter\n", 40)
	var paths []string
	for i := range 2000 {
		p := filepath.Join(dir, fmt.Sprintf("memory_%04d.md", i))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	tr, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(root, "config"), "bench", filehistory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	job := func(n int, files []string) {
		if err := tr.MakeSnapshot(ctx, fmt.Sprintf("job-%d", n)); err != nil {
			b.Fatal(err)
		}
		for _, p := range files {
			if err := tr.TrackEdit(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	change := func(files []string, n int) {
		for _, p := range files {
			if err := os.WriteFile(p, []byte(body+fmt.Sprintf("change %d\n", n)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for n := range 10 { // earlier jobs: 50 tracked files
		files := paths[n*5 : n*5+5]
		job(n, files)
		change(files, n)
	}
	floorDir := filepath.Join(root, "floor")
	if err := os.MkdirAll(floorDir, 0o700); err != nil {
		b.Fatal(err)
	}
	var ours, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		files := paths[1000+(i%190)*5 : 1000+(i%190)*5+5]
		start := time.Now()
		job(100+i, files)
		ours += time.Since(start)
		b.StopTimer()
		change(files, 100+i)

		start = time.Now()
		n := 0
		err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if _, err := d.Info(); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil || n < 2000 {
			b.Fatal(err, n)
		}
		for j, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(floorDir, fmt.Sprintf("%d-%d", i, j)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		floor += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(ours)/float64(floor), "x-floor")
}

package filehistory_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/transcript"
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

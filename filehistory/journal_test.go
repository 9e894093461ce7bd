package filehistory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
)

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

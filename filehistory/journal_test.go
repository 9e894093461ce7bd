package filehistory_test

import (
	"context"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem/agentmem/filehistory"
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

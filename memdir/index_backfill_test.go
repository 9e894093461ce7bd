package memdir

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackfillIndex(t *testing.T) {
	fsys := afero.NewMemMapFs()
	dir := "/m"
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	write := func(name, desc string, age time.Duration) {
		content := "---\nname: " + strings.TrimSuffix(filepath.Base(name), ".md") + "\n"
		if desc != "" {
			content += "description: " + desc + "\n"
		}
		content += "type: user\n---\nbody\n"
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, fsys.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, afero.WriteFile(fsys, p, []byte(content), 0o644))
		require.NoError(t, fsys.Chtimes(p, now.Add(-age), now.Add(-age)))
	}
	write("user_role.md", strings.Repeat("very long description ", 12), time.Hour)
	write("notes/deploy.md", "deploys on Tuesdays", 2*time.Hour)
	write("bare.md", "", 3*time.Hour)
	write("odd[1].md", "skipped: brackets", 0)
	write("team/ci.md", "the team's own index covers it", 0)
	d, err := NewDir(fsys, dir, DirOptions{})
	require.NoError(t, err)
	n, err := d.BackfillIndex(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	got, err := afero.ReadFile(fsys, filepath.Join(dir, "MEMORY.md"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.True(t, strings.HasPrefix(lines[0], "- [user_role](user_role.md) — very long description very"), "newest first")
	assert.True(t, strings.HasSuffix(lines[0], "…"))
	assert.Equal(t, backfillLineMax, utf8.RuneCountInString(lines[0]))
	assert.Equal(t, "- [deploy](notes/deploy.md) — deploys on Tuesdays", lines[1])
	assert.Equal(t, "- [bare](bare.md)", lines[2], "no description, no dash")

	// An index that exists is never replaced, even an empty one.
	require.NoError(t, afero.WriteFile(fsys, filepath.Join(dir, "MEMORY.md"), []byte(""), 0o644))
	n, err = d.BackfillIndex(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n)
	got, _ = afero.ReadFile(fsys, filepath.Join(dir, "MEMORY.md"))
	assert.Empty(t, got)
}

func TestBackfillStopsAtSeventyPercent(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for i := range 300 {
		require.NoError(t, afero.WriteFile(fsys, fmt.Sprintf("/m/f%03d.md", i), []byte("---\nname: f\ndescription: d\n---\n"), 0o644))
	}
	d, err := NewDir(fsys, "/m", DirOptions{})
	require.NoError(t, err)
	n, err := d.BackfillIndex(context.Background())
	require.NoError(t, err)
	assert.Equal(t, backfillMaxLines, n)

	empty, err := NewDir(afero.NewMemMapFs(), "/none", DirOptions{})
	require.NoError(t, err)
	n, err = empty.BackfillIndex(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "nothing to point to: no index is created")
}

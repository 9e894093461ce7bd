package teammem

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/memdir"

	"github.com/agentmem-sdk/agentmem/internal/hostile"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reasonNames maps the reason names of testdata/hostile/keys.txt.
var reasonNames = map[string]memdir.TraversalReason{
	"escapes": memdir.ReasonEscapes, "absolute": memdir.ReasonAbsolute, "nul": memdir.ReasonNUL, "encoded": memdir.ReasonEncoded,
	"backslash": memdir.ReasonBackslash, "unicode": memdir.ReasonUnicode, "too-long": memdir.ReasonTooLong,
}

type hostileKey struct {
	key    string
	reason memdir.TraversalReason
}

// loadHostileKeys returns the shared hostile table plus generated long keys.
func loadHostileKeys(tb testing.TB) []hostileKey {
	tb.Helper()
	keys, err := hostile.Keys()
	require.NoError(tb, err)
	var out []hostileKey
	for _, k := range keys {
		r, ok := reasonNames[k.Reason]
		require.True(tb, ok, "unknown reason %q", k.Reason)
		out = append(out, hostileKey{k.Key, r})
	}
	return append(out,
		hostileKey{strings.Repeat("a/", 600) + "x.md", memdir.ReasonTooLong},
		hostileKey{strings.Repeat("n", 256) + ".md", memdir.ReasonTooLong},
	)
}

func TestValidateTeamMemKeyHostile(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for _, c := range loadHostileKeys(t) {
		t.Run(c.key[:min(len(c.key), 30)], func(t *testing.T) {
			got, err := ValidateTeamMemKey(fsys, "/m/team/", c.key)
			require.Error(t, err)
			assert.Empty(t, got)
			var pte *PathTraversalError
			require.True(t, errors.As(err, &pte), "want *PathTraversalError, got %T", err)
			assert.Equal(t, c.reason, pte.Reason)
			assert.NotContains(t, err.Error(), "/m/team", "errors never show host paths")
		})
	}
}

func TestValidateTeamMemKeyAccepts(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for key, want := range map[string]string{
		"ci.md":                "/m/team/ci.md",
		"notes/decisions/a.md": "/m/team/notes/decisions/a.md",
		"a/./b.md":             "/m/team/a/b.md",
		"a/../b.md":            "/m/team/b.md",
		"notes/":               "/m/team/notes",
		"notes/.":              "/m/team/notes",
		"100%.md":              "/m/team/100%.md", // malformed escape: literal
		"50%25.md":             "/m/team/50%25.md",
		"café.md":              "/m/team/café.md",
		"日本語.md":               "/m/team/日本語.md",
		"x..y.md":              "/m/team/x..y.md",
		"...md":                "/m/team/...md",
	} {
		got, err := ValidateTeamMemKey(fsys, "/m/team", key)
		require.NoError(t, err, key)
		assert.Equal(t, want, got, key)
	}
}

func TestValidateTeamMemWritePathHostile(t *testing.T) {
	fsys := afero.NewMemMapFs()
	cases := []struct {
		path   string
		reason memdir.TraversalReason
	}{
		{"/m/team-evil/x.md", memdir.ReasonEscapes},
		{"/m/team", memdir.ReasonEscapes},
		{"/m/team/", memdir.ReasonEscapes},
		{"/m/team/.", memdir.ReasonEscapes},
		{"/m/team/../x.md", memdir.ReasonEscapes},
		{"/m/team/a/../../x.md", memdir.ReasonEscapes},
		{"/m/teamx.md", memdir.ReasonEscapes},
		{"/etc/passwd", memdir.ReasonEscapes},
		{"team/x.md", memdir.ReasonNotAbsolute},
		{"", memdir.ReasonNotAbsolute},
		{"/m/team/x\x00.md", memdir.ReasonNUL},
	}
	for _, c := range cases {
		_, err := ValidateTeamMemWritePath(fsys, "/m/team/", c.path)
		var pte *PathTraversalError
		require.ErrorAs(t, err, &pte, c.path)
		assert.Equal(t, c.reason, pte.Reason, c.path)
		assert.NotContains(t, err.Error(), "/m/")
	}
	got, err := ValidateTeamMemWritePath(fsys, "/m/team/", "/m/team/notes//a.md")
	require.NoError(t, err)
	assert.Equal(t, "/m/team/notes/a.md", got)
}

func TestPathPredicates(t *testing.T) {
	assert.Equal(t, "/m/team/", TeamMemPath("/m/"))
	assert.True(t, IsTeamMemPath("/m/team/", "/m/team/a.md"))
	assert.True(t, IsTeamMemPath("/m/team", "/m/team/x/../a.md"))
	assert.False(t, IsTeamMemPath("/m/team/", "/m/team"))
	assert.False(t, IsTeamMemPath("/m/team/", "/m/team-evil/a.md"))
	assert.False(t, IsTeamMemPath("/m/team/", "/m/team/../a.md"))
	assert.False(t, IsTeamMemPath("/m/team/", "team/a.md"))
	assert.True(t, IsTeamMemFile("/m/team/", "/m/team/a.md", true))
	assert.False(t, IsTeamMemFile("/m/team/", "/m/team/a.md", false))
	assert.True(t, TeamMemoryEnabled(true, true))
	assert.False(t, TeamMemoryEnabled(false, true))
	assert.False(t, TeamMemoryActive(true, false))
	assert.True(t, TeamMemoryActive(true, true))
}

func TestPathTraversalErrorMessage(t *testing.T) {
	err := &PathTraversalError{Reason: memdir.ReasonEncoded, Key: strings.Repeat("k", 500)}
	assert.LessOrEqual(t, len(err.Error()), 300)
	assert.Equal(t, `agentmem: backslash in key: key "a\\b"`, (&PathTraversalError{Reason: memdir.ReasonBackslash, Key: `a\b`}).Error())
}

// diskTeam builds <tmp>/memory/team and <tmp>/outside on the real disk.
func diskTeam(t *testing.T) (team, outside string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	team = filepath.Join(root, "memory", "team")
	outside = filepath.Join(root, "outside")
	require.NoError(t, os.MkdirAll(team, 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.md"), []byte("outside"), 0o644))
	return team, outside
}

func TestSymlinksOnDisk(t *testing.T) {
	team, outside := diskTeam(t)
	must := func(err error) { t.Helper(); require.NoError(t, err) }
	must(os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(team, "abs.md")))
	must(os.Symlink("../../outside/secret.md", filepath.Join(team, "rel.md")))
	must(os.Symlink("l2", filepath.Join(team, "l1")))
	must(os.Symlink("l3", filepath.Join(team, "l2")))
	must(os.Symlink(outside, filepath.Join(team, "l3")))
	must(os.Symlink(outside, filepath.Join(team, "sub")))
	must(os.Symlink(filepath.Join(outside, "new.md"), filepath.Join(team, "dangling.md")))
	must(os.Symlink("loopB", filepath.Join(team, "loopA")))
	must(os.Symlink("loopA", filepath.Join(team, "loopB")))
	must(os.MkdirAll(filepath.Join(team, "real", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(team, "real", "target.md"), []byte("in"), 0o644))
	must(os.Symlink("real/target.md", filepath.Join(team, "inside.md")))
	must(os.Symlink("real", filepath.Join(team, "insidedir")))
	must(os.Symlink("../team/real", filepath.Join(team, "roundtrip")))
	must(os.Symlink(filepath.Join(team, "real"), filepath.Join(team, "absinside")))
	must(os.Symlink("../../../team/real", filepath.Join(team, "real", "deep", "up2")))
	must(os.Symlink("../team-evil", filepath.Join(team, "sibling")))
	must(os.MkdirAll(filepath.Join(filepath.Dir(team), "team-evil"), 0o755))

	fsys := afero.NewOsFs()
	bad := map[string]memdir.TraversalReason{
		"abs.md":        memdir.ReasonSymlinkEscape,
		"rel.md":        memdir.ReasonSymlinkEscape,
		"l1/x.md":       memdir.ReasonSymlinkEscape, // chain of three links
		"l1":            memdir.ReasonSymlinkEscape,
		"sub/x/f.md":    memdir.ReasonSymlinkEscape, // linked middle directory
		"sub/secret.md": memdir.ReasonSymlinkEscape,
		"dangling.md":   memdir.ReasonDangling,
		"loopA":         memdir.ReasonLoop,
		"loopA/x.md":    memdir.ReasonLoop,
		"sibling/x.md":  memdir.ReasonSymlinkEscape,
	}
	for key, reason := range bad {
		t.Run("key "+key, func(t *testing.T) {
			_, err := ValidateTeamMemKey(fsys, team, key)
			var pte *PathTraversalError
			require.ErrorAs(t, err, &pte)
			assert.Equal(t, reason, pte.Reason)
			assert.NotContains(t, err.Error(), outside)
			_, err = ValidateTeamMemWritePath(fsys, team, filepath.Join(team, key))
			require.ErrorAs(t, err, &pte)
			assert.Equal(t, reason, pte.Reason)
		})
	}
	good := []string{"absinside/n.md", "real/deep/up2/m.md", "inside.md", "insidedir/new.md", "insidedir/deep/x.md", "roundtrip/y.md", "real/new/dir/z.md", "fresh.md"}
	for _, key := range good {
		got, err := ValidateTeamMemKey(fsys, team, key)
		require.NoError(t, err, key)
		assert.Equal(t, filepath.Join(team, key), got)
	}

	// The dangling link must not have been written through by the check.
	_, err := os.Stat(filepath.Join(outside, "new.md"))
	assert.True(t, os.IsNotExist(err))
}

func TestTeamDirNotYetCreated(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	team := filepath.Join(root, "memory", "team")
	got, err := ValidateTeamMemKey(afero.NewOsFs(), team, "notes/a.md")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(team, "notes", "a.md"), got)
	_, err = ValidateTeamMemWritePath(afero.NewOsFs(), team, filepath.Join(team, "a.md"))
	require.NoError(t, err)
}

func TestTeamDirIsALink(t *testing.T) {
	// A team dir that is itself a link (dotfiles kept elsewhere) is fine:
	// containment is judged against where it really is.
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real := filepath.Join(root, "dotfiles", "team")
	require.NoError(t, os.MkdirAll(real, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "memory"), 0o755))
	team := filepath.Join(root, "memory", "team")
	require.NoError(t, os.Symlink(real, team))
	_, err = ValidateTeamMemKey(afero.NewOsFs(), team, "a.md")
	require.NoError(t, err)
	require.NoError(t, os.Symlink("../../dotfiles", filepath.Join(real, "up")))
	_, err = ValidateTeamMemKey(afero.NewOsFs(), team, "up/x.md")
	var pte *PathTraversalError
	require.ErrorAs(t, err, &pte)
	assert.Equal(t, memdir.ReasonSymlinkEscape, pte.Reason)
}

// errFs fails Lstat with an unexpected error, to check the fail-closed rule.
type errFs struct{ afero.Fs }

func (errFs) LstatIfPossible(string) (os.FileInfo, bool, error) {
	return nil, true, &os.PathError{Op: "lstat", Path: "/x", Err: errors.New("device on fire")}
}

func TestUnknownErrorsFailClosed(t *testing.T) {
	_, err := ValidateTeamMemKey(errFs{afero.NewMemMapFs()}, "/m/team", "a.md")
	var pte *PathTraversalError
	require.ErrorAs(t, err, &pte)
	assert.Equal(t, memdir.ReasonUnverifiable, pte.Reason)
}

// lstatOnlyFs reports links but cannot read them.
type lstatOnlyFs struct{ afero.Fs }

func (f lstatOnlyFs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	return f.Fs.(afero.Lstater).LstatIfPossible(name)
}

func TestUnreadableLinkFailsClosed(t *testing.T) {
	team, outside := diskTeam(t)
	require.NoError(t, os.Symlink(outside, filepath.Join(team, "sub")))
	_, err := ValidateTeamMemKey(lstatOnlyFs{afero.NewOsFs()}, team, "sub/x.md")
	var pte *PathTraversalError
	require.ErrorAs(t, err, &pte)
	assert.Equal(t, memdir.ReasonUnverifiable, pte.Reason)
}

func TestValidateKeySyntax(t *testing.T) {
	for _, k := range []string{"a.md", "notes/ci.md", "x..y.md", "日本語.md"} {
		assert.NoError(t, validateKeySyntax(k), k)
	}
	for _, c := range loadHostileKeys(t) {
		assert.Error(t, validateKeySyntax(c.key), "%q", c.key)
	}
	for _, k := range []string{"", "a//b.md", "a/./b.md", "a/", "./a.md", "a/../b.md"} {
		var pte *PathTraversalError
		assert.ErrorAs(t, validateKeySyntax(k), &pte, "%q", k)
	}
}

package teammem

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/hostile"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
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

func TestPackChanges(t *testing.T) {
	var changes []foldersync.Change
	for i := 0; i < 5; i++ {
		changes = append(changes, foldersync.Change{Path: fmt.Sprintf("gone%02d.md", i), Delete: true})
	}
	for i := 0; i < 30; i++ {
		changes = append(changes, foldersync.Change{Path: fmt.Sprintf("k%02d.md", i), Content: []byte(strings.Repeat("é\"", 5000))})
	}
	changes = append(changes, foldersync.Change{Path: "z-huge.md", Content: []byte(strings.Repeat("x", 240_000))})
	bs := packChanges(changes, teamwire.MaxPutBodyBytes)
	require.Greater(t, len(bs), 2)
	seen := 0
	for i, b := range bs {
		body := teamwire.PutBody{Entries: map[string]string{}}
		for _, c := range b {
			if c.Delete {
				body.SoftDeleteKeys = append(body.SoftDeleteKeys, c.Path)
			} else {
				body.Entries[c.Path] = string(c.Content)
			}
		}
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		if len(b) == 1 && b[0].Path == "z-huge.md" {
			assert.Greater(t, len(raw), teamwire.MaxPutBodyBytes, "an oversize entry travels alone")
		} else {
			assert.LessOrEqual(t, len(raw), teamwire.MaxPutBodyBytes, "batch %d", i)
		}
		// Greedy: the next entry would not have fitted (the envelope
		// counted holds an empty soft_delete_keys too).
		if i+1 < len(bs) && len(b) > 0 {
			next := bs[i+1][0]
			extra := jsonLen(next.Path) + jsonLen(string(next.Content)) + 2
			assert.Greater(t, len(raw)+extra+len(`,"soft_delete_keys":[]`), teamwire.MaxPutBodyBytes)
		}
		seen += len(b)
	}
	assert.Equal(t, len(changes), seen)
	assert.Empty(t, packChanges(nil, teamwire.MaxPutBodyBytes))
}

func FuzzValidateTeamMemKey(f *testing.F) {
	for _, c := range loadHostileKeys(f) {
		f.Add(c.key)
	}
	for _, k := range hostile.LinkTreeSeeds {
		f.Add(k)
	}
	root, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	_, team, _, err := hostile.LinkTree(root)
	if err != nil {
		f.Fatal(err)
	}
	fsys := afero.NewOsFs()
	f.Fuzz(func(t *testing.T, key string) {
		got, err := ValidateTeamMemKey(fsys, team, key)
		if err != nil {
			if _, ok := err.(*PathTraversalError); !ok {
				t.Fatalf("error of type %T, want *PathTraversalError", err)
			}
			return
		}
		real, ok := hostile.KernelResolve(got)
		if !ok || !strings.HasPrefix(real, team+string(filepath.Separator)) {
			t.Fatalf("accepted key %q resolves to %q, outside %q", key, real, team)
		}
	})
}

func TestParseRepoRemote(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/acme/shop":       "acme/shop",
		"https://github.com/acme/shop.git":   "acme/shop",
		"https://github.com/acme/shop/":      "acme/shop",
		"git@github.com:acme/shop.git":       "acme/shop",
		"git@github.com:acme/shop":           "acme/shop",
		"ssh://git@github.com/acme/shop":     "acme/shop",
		"ssh://git@github.com/acme/shop.git": "acme/shop",
		"https://GitHub.com/Acme/my.repo":    "Acme/my.repo",
		"  https://github.com/a/b \n":        "a/b",
	} {
		got, err := ParseRepoRemote(in, nil)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{
		"https://gitlab.com/acme/shop", "git@gitlab.com:acme/shop.git", "https://github.com/acme", "https://github.com/acme/shop/tree/main",
		"https://user:pass@github.com/acme/shop", "file:///srv/git/shop", "/srv/git/shop", "https://github.com/../etc",
		"https://github.com/acme/shop?x=1", "ftp://github.com/acme/shop", "", "github.com/acme/shop", "git@github.com:acme/a/b",
	} {
		_, err := ParseRepoRemote(in, nil)
		assert.ErrorIs(t, err, ErrUnsupportedRemote, "%q", in)
	}
	got, err := ParseRepoRemote("git@git.example.com:team/app.git", []string{"git.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "team/app", got)
}

func TestRepoFromGitConfig(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "repo", ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "repo", "pkg"), 0o755))
	config := "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://github.com/other/x\n[remote \"origin\"]\n\turl = git@github.com:acme/shop.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "repo", ".git", "config"), []byte(config), 0o644))
	got, err := RepoFromGitConfig(afero.NewOsFs(), filepath.Join(root, "repo", "pkg"), nil)
	require.NoError(t, err)
	assert.Equal(t, "acme/shop", got)
	_, err = RepoFromGitConfig(afero.NewOsFs(), t.TempDir(), nil)
	assert.ErrorIs(t, err, ErrUnsupportedRemote)
}

func call(name string, kv ...string) llm.ToolCall {
	in := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		in[kv[i]] = kv[i+1]
	}
	return llm.ToolCall{Name: name, Input: js(in)}
}

func TestToolDetection(t *testing.T) {
	d := ToolDetector{TeamDir: "/m/team/", AutoMemDir: "/m/"}
	cases := []struct {
		call          llm.ToolCall
		search, write bool
		summary       string
	}{
		{call("Edit", "file_path", "/m/team/notes/foo.md", "new_string", "x"), false, true, "Edited team/notes/foo.md"},
		{call("Write", "file_path", "/m/team/ci.md", "content", "x"), false, true, "Wrote team/ci.md"},
		{call("NotebookEdit", "notebook_path", "/m/team/nb.ipynb"), false, true, "Edited team/nb.ipynb"},
		{call("Grep", "pattern", "flaky", "path", "/m/team/decisions"), true, false, "Searched team/decisions/"},
		{call("Grep", "pattern", "flaky", "path", "/m/team"), true, false, "Searched team/"},
		{call("Glob", "pattern", "/m/team/**/*.md"), true, false, "Searched team/**/*.md"},
		{call("Edit", "file_path", "/m/private.md"), false, false, ""},
		{call("Edit", "file_path", "/m/team-evil/x.md"), false, false, ""},
		{call("Edit", "file_path", "/m/team/../x.md"), false, false, ""},
		{call("Write", "file_path", "team/relative.md"), false, false, ""},
		{call("Read", "file_path", "/m/team/a.md"), false, false, ""},
		{call("Grep", "pattern", "x"), false, false, ""},
		{call("Grep", "pattern", "x", "path", "/m/"), false, false, ""},
		{llm.ToolCall{Name: "Edit", Input: js(map[string]any{"file_path": 42})}, false, false, ""},
		{llm.ToolCall{Name: "Edit"}, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.call.Name+" "+c.summary, func(t *testing.T) {
			assert.Equal(t, c.search, d.IsTeamMemorySearch(c.call))
			assert.Equal(t, c.write, d.IsTeamMemoryWriteOrEdit(c.call, nil))
			parts := d.AppendTeamMemorySummaryParts([]string{"before"}, c.call, nil)
			if c.summary == "" {
				assert.Equal(t, []string{"before"}, parts)
			} else {
				assert.Equal(t, []string{"before", c.summary}, parts)
			}
		})
	}
}

func TestToolDetectionAllowList(t *testing.T) {
	d := ToolDetector{TeamDir: "/m/team/"}
	edit := call("Edit", "file_path", "/m/team/a.md")
	assert.False(t, d.IsTeamMemoryWriteOrEdit(edit, []string{"Write"}))
	assert.True(t, d.IsTeamMemoryWriteOrEdit(edit, []string{"Write", "Edit"}))
	assert.Empty(t, d.AppendTeamMemorySummaryParts(nil, edit, []string{}))
	assert.Equal(t, []string{"Edited team/a.md"}, d.AppendTeamMemorySummaryParts(nil, edit, nil))
}

// TestToolDetectionHostNames: the detectors know Claude Code's tool names;
// a host whose tools are named otherwise gives each call the name of the
// tool it stands for, and a name it does not map is not a write or search.
func TestToolDetectionHostNames(t *testing.T) {
	d := ToolDetector{TeamDir: "/m/team/"}
	asClaudeCode := map[string]string{"create_file": "Write", "str_replace": "Edit", "search": "Grep"}
	mapped := func(c llm.ToolCall) llm.ToolCall { c.Name = asClaudeCode[c.Name]; return c }
	assert.False(t, d.IsTeamMemoryWriteOrEdit(call("create_file", "file_path", "/m/team/a.md"), nil))
	assert.True(t, d.IsTeamMemoryWriteOrEdit(mapped(call("create_file", "file_path", "/m/team/a.md")), nil))
	assert.True(t, d.IsTeamMemoryWriteOrEdit(mapped(call("str_replace", "file_path", "/m/team/a.md")), nil))
	assert.Equal(t, []string{"Wrote team/a.md"}, d.AppendTeamMemorySummaryParts(nil, mapped(call("create_file", "file_path", "/m/team/a.md")), nil))
	assert.False(t, d.IsTeamMemorySearch(call("search", "path", "/m/team/x")))
	assert.True(t, d.IsTeamMemorySearch(mapped(call("search", "path", "/m/team/x"))))
}

// js is a tool input as a model sends it.
func js(in map[string]any) json.RawMessage {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return b
}

// The wire package's key reasons must read as memdir's: teammem turns one
// into the other by value.
func TestWireReasonsMatchMemdir(t *testing.T) {
	for w, m := range map[string]memdir.TraversalReason{
		teamwire.ReasonNUL: memdir.ReasonNUL, teamwire.ReasonEncoded: memdir.ReasonEncoded, teamwire.ReasonUnicode: memdir.ReasonUnicode,
		teamwire.ReasonBackslash: memdir.ReasonBackslash, teamwire.ReasonAbsolute: memdir.ReasonAbsolute,
		teamwire.ReasonTooLong: memdir.ReasonTooLong, teamwire.ReasonEscapes: memdir.ReasonEscapes,
	} {
		assert.Equal(t, string(m), w)
	}
	err := validateKeySyntax("a/../../etc/passwd")
	var pte *PathTraversalError
	assert.ErrorAs(t, err, &pte)
	assert.Equal(t, memdir.ReasonEscapes, pte.Reason)
}

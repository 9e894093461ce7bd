package memdir

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func boolPtr(b bool) *bool { return &b }

func TestParseEnvBool(t *testing.T) {
	for in, want := range map[string]envBool{
		"1": envTrue, "true": envTrue, " YES ": envTrue, "On": envTrue,
		"0": envFalse, "false": envFalse, "no": envFalse, " OFF\n": envFalse,
		"": envUnset, "2": envUnset, "enabled": envUnset, "tru": envUnset,
	} {
		assert.Equal(t, want, parseEnvBool(in), "%q", in)
	}
}

func TestIsAutoMemoryEnabled(t *testing.T) {
	const (
		disable = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"
		bare    = "CLAUDE_CODE_SIMPLE"
		remote  = "CLAUDE_CODE_REMOTE"
		rdir    = "CLAUDE_CODE_REMOTE_MEMORY_DIR"
	)
	cases := []struct {
		name    string
		env     map[string]string
		setting *bool
		want    bool
	}{
		{"default on", nil, nil, true},
		{"disable true", map[string]string{disable: "1"}, nil, false},
		{"disable false beats bare mode", map[string]string{disable: "false", bare: "yes"}, nil, true},
		{"disable false beats remote", map[string]string{disable: "off", remote: "1"}, nil, true},
		{"disable false beats setting", map[string]string{disable: "0"}, boolPtr(false), true},
		{"bare mode", map[string]string{bare: "true"}, nil, false},
		{"bare mode false is no opinion", map[string]string{bare: "no"}, boolPtr(false), false},
		{"remote without dir", map[string]string{remote: "on"}, nil, false},
		{"remote with dir", map[string]string{remote: "1", rdir: "/r"}, nil, true},
		{"remote with dir and setting off", map[string]string{remote: "1", rdir: "/r"}, boolPtr(false), false},
		{"setting off", nil, boolPtr(false), false},
		{"setting on", nil, boolPtr(true), true},
		{"bare mode beats setting on", map[string]string{bare: "1"}, boolPtr(true), false},
		{"unrecognised value is unset", map[string]string{disable: "maybe"}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, IsAutoMemoryEnabled(func(k string) string { return c.env[k] }, c.setting))
		})
	}

	// A runtime with its own variable names maps them in getenv.
	own := map[string]string{"MYAGENT_BARE": "true"}
	getenv := func(k string) string {
		if k == bare {
			k = "MYAGENT_BARE"
		}
		return own[k]
	}
	assert.False(t, IsAutoMemoryEnabled(getenv, nil), "a renamed variable must be honoured")
}

func TestValidateMemoryPath(t *testing.T) {
	const home = "/home/u"
	ok := []struct{ in, home, want string }{
		{"/abs/mem", "", "/abs/mem/"},
		{"/abs/mem/", "", "/abs/mem/"},
		{"/abs/mem///", "", "/abs/mem/"},
		{"/abs/./x/../mem", "", "/abs/mem/"},
		{"/ab", "", "/ab/"},
		{"~/mem", home, "/home/u/mem/"},
		{`~\mem`, home, "/home/u/mem/"},
		{"~/a/../b", home, "/home/u/b/"},
		{"/caf\u0065\u0301", "", "/caf\u00e9/"}, // NFC
	}
	for _, c := range ok {
		t.Run("ok "+c.in, func(t *testing.T) {
			got, err := ValidateMemoryPath(c.in, c.home)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	bad := []struct {
		in, home string
		want     string
	}{
		{"", home, rejectEmpty},
		{"/abs/\x00mem", home, rejectNUL},
		{"\x00", home, rejectNUL},
		{"relative/mem", home, rejectNotAbsolute},
		{"./mem", home, rejectNotAbsolute},
		{"~", home, rejectNotAbsolute},
		{"~/mem", "", rejectNotAbsolute}, // no expansion allowed
		{"~user/mem", home, rejectNotAbsolute},
		{"~/", home, rejectTildeTrivial},
		{"~/.", home, rejectTildeTrivial},
		{"~/..", home, rejectTildeTrivial},
		{"~/foo/..", home, rejectTildeTrivial},
		{`~\..`, home, rejectTildeTrivial},
		{"~/../etc", home, rejectTildeTrivial},
		{"~//", home, rejectTildeTrivial},
		{"~/./", home, rejectTildeTrivial},
		{`~\\`, home, rejectTildeTrivial},
		{"/", home, rejectTooShort},
		{"//", home, rejectUNC},
		{"/a", home, rejectTooShort},
		{"/é", home, rejectTooShort},
		{"/a/..", home, rejectTooShort},
		{"C:", home, rejectNotAbsolute},
		{`\\server\share`, home, rejectUNC},
		{"//server/share", home, rejectUNC},
	}
	for _, c := range bad {
		t.Run("bad "+c.in, func(t *testing.T) {
			got, err := ValidateMemoryPath(c.in, c.home)
			require.Error(t, err)
			assert.Empty(t, got)
			assert.ErrorIs(t, err, ErrInvalidMemoryPath)
			var pe *MemoryPathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.want, pe.Reason)
			if len(c.in) > 3 {
				assert.NotContains(t, err.Error(), c.in, "errors must not echo the path")
			}
		})
	}
	// The drive-root rule is platform independent.
	assert.True(t, driveRoot.MatchString("C:"))
	assert.False(t, driveRoot.MatchString("C:/x"))
}

// refSanitize is an independent implementation of SanitizePath, written
// from the algorithm rather than from the code under test: per-unit
// replacement, then an unsigned 32-bit hash reinterpreted as signed.
func refSanitize(p string) string {
	units := utf16.Encode([]rune(p))
	var b strings.Builder
	for _, u := range units {
		r := rune(u)
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) <= 200 {
		return s
	}
	var h uint32
	for _, u := range units {
		h = (h << 5) - h + uint32(u)
	}
	signed := int64(int32(h))
	if signed < 0 {
		signed = -signed
	}
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	var rev []byte
	for n := signed; ; n /= 36 {
		rev = append(rev, digits[n%36])
		if n < 36 {
			break
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return s[:200] + "-" + string(rev)
}

func TestSanitizePath(t *testing.T) {
	fixed := map[string]string{
		"/home/u/proj":         "-home-u-proj",
		"":                     "",
		"abcXYZ019":            "abcXYZ019",
		"/Users/é/x":           "-Users---x",
		"/p/😀":                 "-p---",
		"/日本/語":                "-----",
		"C:\\Users\\dev\\repo": "C--Users-dev-repo",
		"a b.c_d~e":            "a-b-c-d-e",
	}
	for in, want := range fixed {
		assert.Equal(t, want, SanitizePath(in), "%q", in)
	}
	long := []string{
		"/" + strings.Repeat("a", 199),            // exactly 200 units: no hash
		"/" + strings.Repeat("a", 200),            // 201 units
		"/" + strings.Repeat("deep/", 60),         // ASCII
		"/" + strings.Repeat("é/", 120),           // BMP non-ASCII
		"/" + strings.Repeat("😀", 110),            // astral: 2 units each
		"/home/" + strings.Repeat("project-", 40), // long
		strings.Repeat("zzzzzzzzzz", 30),
	}
	sawNegative := false
	for _, in := range long {
		want := refSanitize(in)
		got := SanitizePath(in)
		assert.Equal(t, want, got, "%q", in)
		if len(utf16.Encode([]rune(in))) > 200 {
			assert.Greater(t, len(got), 201, "long path must carry a hash")
			var h int32
			for _, u := range utf16.Encode([]rune(in)) {
				h = h*31 + int32(u)
			}
			if h < 0 {
				sawNegative = true
			}
		} else {
			assert.Len(t, got, len(utf16.Encode([]rune(in))))
		}
	}
	assert.True(t, sawNegative, "the vectors must include a negative-hash case")
	// The most negative int32 has no int32 absolute value: 2^31 in base 36.
	assert.Equal(t, "zik0zk", base36Abs(math.MinInt32))
	assert.Equal(t, strconvBase36(2147483647), base36Abs(math.MaxInt32))
}

func strconvBase36(n int64) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if n == 0 {
		return "0"
	}
	var out []byte
	for ; n > 0; n /= 36 {
		out = append([]byte{digits[n%36]}, out...)
	}
	return string(out)
}

func TestResolveAutoMemPath(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, fsys.MkdirAll("/work/repo/.git", 0o755))
	require.NoError(t, fsys.MkdirAll("/work/repo/sub/dir", 0o755))
	require.NoError(t, fsys.MkdirAll("/work/plain", 0o755))
	base := AutoMemPathRequest{ConfigHome: "/home/u/.claude", HomeDir: "/home/u", ProjectRoot: "/work/repo/sub/dir"}

	with := func(f func(*AutoMemPathRequest)) AutoMemPathRequest { in := base; f(&in); return in }
	cases := []struct {
		name   string
		in     AutoMemPathRequest
		want   string
		origin PathOrigin
		source SettingSource
	}{
		{"default uses git root", base, "/home/u/.claude/projects/-work-repo/memory/", OriginDefault, 0},
		{"default outside git", with(func(in *AutoMemPathRequest) { in.ProjectRoot = "/work/plain" }), "/home/u/.claude/projects/-work-plain/memory/", OriginDefault, 0},
		{"remote base", with(func(in *AutoMemPathRequest) { in.RemoteMemoryDir = "/remote" }), "/remote/projects/-work-repo/memory/", OriginDefault, 0},
		{"override", with(func(in *AutoMemPathRequest) { in.Override = "/ovr/mem" }), "/ovr/mem/", OriginOverride, 0},
		{"override has no tilde expansion", with(func(in *AutoMemPathRequest) { in.Override = "~/mem" }), "/home/u/.claude/projects/-work-repo/memory/", OriginDefault, 0},
		{"invalid override falls to setting", with(func(in *AutoMemPathRequest) {
			in.Override = "rel"
			in.AutoMemoryDirectory = map[SettingSource]string{SourceUser: "~/mem"}
		}), "/home/u/mem/", OriginSetting, SourceUser},
		{"override beats setting", with(func(in *AutoMemPathRequest) {
			in.Override = "/ovr"
			in.AutoMemoryDirectory = map[SettingSource]string{SourcePolicy: "/pol"}
		}), "/ovr/", OriginOverride, 0},
		{"policy beats flag local user", with(func(in *AutoMemPathRequest) {
			in.AutoMemoryDirectory = map[SettingSource]string{SourceUser: "/u1", SourceLocal: "/l1", SourceFlag: "/f1", SourcePolicy: "/p1"}
		}), "/p1/", OriginSetting, SourcePolicy},
		{"flag beats local", with(func(in *AutoMemPathRequest) {
			in.AutoMemoryDirectory = map[SettingSource]string{SourceUser: "/u1", SourceLocal: "/l1", SourceFlag: "/f1"}
		}), "/f1/", OriginSetting, SourceFlag},
		{"local beats user", with(func(in *AutoMemPathRequest) {
			in.AutoMemoryDirectory = map[SettingSource]string{SourceUser: "/u1", SourceLocal: "/l1"}
		}), "/l1/", OriginSetting, SourceLocal},
		{"project settings are never trusted", with(func(in *AutoMemPathRequest) {
			in.AutoMemoryDirectory = map[SettingSource]string{SourceProject: "~/.ssh"}
		}), "/home/u/.claude/projects/-work-repo/memory/", OriginDefault, 0},
		{"invalid setting falls to default", with(func(in *AutoMemPathRequest) {
			in.AutoMemoryDirectory = map[SettingSource]string{SourceLocal: "~/", SourceUser: "/u1"}
		}), "/home/u/.claude/projects/-work-repo/memory/", OriginDefault, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveAutoMemPath(fsys, c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want, got.Dir)
			assert.Equal(t, c.origin, got.Origin)
			assert.Equal(t, c.source, got.Source)
		})
	}

	_, err := ResolveAutoMemPath(fsys, with(func(in *AutoMemPathRequest) { in.ConfigHome = "" }))
	assert.ErrorIs(t, err, ErrNoMemoryBase)
	_, err = ResolveAutoMemPath(fsys, with(func(in *AutoMemPathRequest) { in.ProjectRoot = "" }))
	assert.ErrorIs(t, err, ErrNoProjectRoot)
	assert.False(t, SourceProject.Trusted())
	assert.True(t, SourcePolicy.Trusted())
}

func TestAutoMemPathRequestFromEnv(t *testing.T) {
	env := map[string]string{"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "/o", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/r"}
	in := AutoMemPathRequestFromEnv(func(k string) string { return env[k] }, "/home/u")
	assert.Equal(t, "/home/u/.claude", in.ConfigHome)
	assert.Equal(t, "/o", in.Override)
	assert.Equal(t, "/r", in.RemoteMemoryDir)
	env["CLAUDE_CONFIG_DIR"] = "/cfg"
	in = AutoMemPathRequestFromEnv(func(k string) string { return env[k] }, "/home/u")
	assert.Equal(t, "/cfg", in.ConfigHome)
}

// gitLayout builds repositories on a real disk with the real git command.
func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

func realTempDir(t *testing.T) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return d
}

func TestCanonicalGitRootWithRealWorktree(t *testing.T) {
	top := realTempDir(t)
	main := filepath.Join(top, "main")
	require.NoError(t, os.MkdirAll(main, 0o755))
	runGit(t, main, "init", "-q", "-b", "main")
	runGit(t, main, "commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(top, "wt")
	runGit(t, main, "worktree", "add", "-q", wt)
	require.NoError(t, os.MkdirAll(filepath.Join(wt, "pkg", "deep"), 0o755))

	fsys := afero.NewOsFs()
	got, ok := FindCanonicalGitRoot(fsys, filepath.Join(wt, "pkg", "deep"))
	require.True(t, ok)
	assert.Equal(t, main, got, "a worktree shares the main checkout's root")

	got, ok = FindCanonicalGitRoot(fsys, main)
	require.True(t, ok)
	assert.Equal(t, main, got)

	a, err := defaultAutoMemPath(fsys, "/cfg", wt)
	require.NoError(t, err)
	b, err := defaultAutoMemPath(fsys, "/cfg", main)
	require.NoError(t, err)
	assert.Equal(t, a, b, "all worktrees share one memory dir")

	_, ok = FindCanonicalGitRoot(fsys, top)
	assert.False(t, ok)
}

func TestCanonicalGitRootBranches(t *testing.T) {
	top := realTempDir(t)
	w := func(p, content string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(top, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(top, p), []byte(content), 0o644))
	}
	mk := func(p string) { require.NoError(t, os.MkdirAll(filepath.Join(top, p), 0o755)) }
	abs := func(p string) string { return filepath.Join(top, p) }

	// A hand-built linked worktree with a relative gitdir.
	mk("main/.git/worktrees/wt1")
	w("main/.git/worktrees/wt1/commondir", "../..\n")
	w("main/.git/worktrees/wt1/gitdir", abs("wt1/.git")+"\n")
	w("wt1/.git", "gitdir: ../main/.git/worktrees/wt1\n")

	// Spoofed: the .git file points into another repo's worktrees dir, but
	// that worktree's gitdir points elsewhere.
	mk("victim/.git/worktrees/x")
	w("victim/.git/worktrees/x/commondir", "../..")
	w("victim/.git/worktrees/x/gitdir", abs("elsewhere/.git"))
	w("spoof/.git", "gitdir: "+abs("victim/.git/worktrees/x"))

	// Spoofed: worktree git dir not under <common>/worktrees.
	mk("victim2/.git")
	mk("fake/wtdir")
	w("fake/wtdir/commondir", abs("victim2/.git"))
	w("fake/wtdir/gitdir", abs("spoof2/.git"))
	w("spoof2/.git", "gitdir: "+abs("fake/wtdir"))

	// Submodule: gitdir without commondir.
	mk("super/.git/modules/sub")
	w("super/sub/.git", "gitdir: ../.git/modules/sub")

	// Bare repository with a worktree.
	mk("bare.git/worktrees/bw")
	w("bare.git/worktrees/bw/commondir", "../..")
	w("bare.git/worktrees/bw/gitdir", abs("bw/.git"))
	w("bw/.git", "gitdir: "+abs("bare.git/worktrees/bw"))

	// .git file that is not a gitdir pointer; gitdir to a missing dir.
	w("junk/.git", "hello")
	w("missing/.git", "gitdir: /nonexistent/path")
	// Worktree whose gitdir backlink is missing.
	mk("main3/.git/worktrees/w3")
	w("main3/.git/worktrees/w3/commondir", "../..")
	w("w3/.git", "gitdir: "+abs("main3/.git/worktrees/w3"))

	cases := []struct{ start, want string }{
		{"wt1", "main"},
		{"spoof", "spoof"},
		{"spoof2", "spoof2"},
		{"super/sub", "super/sub"},
		{"bw", "bare.git"},
		{"junk", "junk"},
		{"missing", "missing"},
		{"w3", "w3"},
		{"main", "main"},
	}
	fsys := afero.NewOsFs()
	for _, c := range cases {
		t.Run(c.start, func(t *testing.T) {
			got, ok := FindCanonicalGitRoot(fsys, abs(c.start))
			require.True(t, ok)
			assert.Equal(t, abs(c.want), got)
		})
	}
}

func TestAgentMemoryDir(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, fsys.MkdirAll("/w/repo/.git", 0o755))
	cases := []struct {
		in   AgentMemoryDirRequest
		want string
	}{
		{AgentMemoryDirRequest{AgentType: "explorer", Scope: ScopeUser, ConfigHome: "/c"}, "/c/agent-memory/explorer/"},
		{AgentMemoryDirRequest{AgentType: "plug:rev", Scope: ScopeUser, ConfigHome: "/c", RemoteMemoryDir: "/r"}, "/r/agent-memory/plug-rev/"},
		{AgentMemoryDirRequest{AgentType: "plug:rev", Scope: ScopeProject, Cwd: "/w/repo"}, "/w/repo/.claude/agent-memory/plug-rev/"},
		{AgentMemoryDirRequest{AgentType: "a", Scope: ScopeLocal, Cwd: "/w/repo"}, "/w/repo/.claude/agent-memory-local/a/"},
		{AgentMemoryDirRequest{AgentType: "a", Scope: ScopeLocal, Cwd: "/w/repo", RemoteMemoryDir: "/r"}, "/r/projects/-w-repo/agent-memory-local/a/"},
	}
	for _, c := range cases {
		got, err := AgentMemoryDir(fsys, c.in)
		require.NoError(t, err)
		assert.Equal(t, c.want, got)
	}
	for _, bad := range []string{"", "..", "a/b", `a\b`, "x\x00"} {
		_, err := AgentMemoryDir(fsys, AgentMemoryDirRequest{AgentType: bad, Scope: ScopeUser, ConfigHome: "/c"})
		assert.ErrorIs(t, err, ErrInvalidAgentType, "%q", bad)
	}
	_, err := AgentMemoryDir(fsys, AgentMemoryDirRequest{AgentType: "a", Scope: "team", ConfigHome: "/c"})
	assert.Error(t, err)
	_, err = AgentMemoryDir(fsys, AgentMemoryDirRequest{AgentType: "a", Scope: ScopeProject})
	assert.ErrorIs(t, err, ErrNoProjectRoot)
}

func TestDailyLogPath(t *testing.T) {
	loc := time.FixedZone("X", -8*3600)
	// 03:00 UTC on Jan 1 is still Dec 31 in a UTC-8 zone: the local date wins.
	ts := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC).In(loc)
	assert.Equal(t, "/m/logs/2025/12/2025-12-31.md", DailyLogPath("/m/", ts))
	assert.Equal(t, "/m/logs/2026/03/2026-03-05.md", DailyLogPath("/m", time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)))
	assert.Equal(t, "/m/logs/YYYY/MM/YYYY-MM-DD.md", dailyLogPattern("/m/"))
}

func TestTeamMemPath(t *testing.T) {
	assert.Equal(t, "/m/team/", TeamMemPath("/m/"))
	assert.Equal(t, "/m/team/", TeamMemPath("/m"))
}

func FuzzValidateMemoryPath(f *testing.F) {
	for _, s := range []string{"/abs/mem", "~/mem", "~/..", "~/a/../..", `\\srv\x`, "//x", "/a\x00b", "C:", "~", "/caf\u0065\u0301", "~/./././x/.."} {
		f.Add(s)
	}
	const home = "/home/u"
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := ValidateMemoryPath(raw, home)
		if err != nil {
			if got != "" {
				t.Fatalf("a rejected path must return no path")
			}
			return
		}
		if !filepath.IsAbs(got) || !strings.HasSuffix(got, "/") || strings.HasSuffix(got, "//") {
			t.Fatalf("%q: want an absolute path with one trailing separator, got %q", raw, got)
		}
		if strings.ContainsRune(got, 0) || utf8.RuneCountInString(got) < 3 {
			t.Fatalf("%q: accepted %q", raw, got)
		}
		if trimmed := strings.TrimSuffix(got, "/"); filepath.Clean(trimmed) != trimmed && !strings.HasSuffix(trimmed, `\`) {
			t.Fatalf("%q: result %q is not clean", raw, got)
		}
		if strings.HasPrefix(raw, "~/") || strings.HasPrefix(raw, `~\`) {
			if !strings.HasPrefix(got, home+"/") || len(got) <= len(home)+1 {
				t.Fatalf("%q: a ~ path must resolve strictly below the home directory, got %q", raw, got)
			}
		}
	})
}

// GitBranch reads what `git rev-parse --abbrev-ref HEAD` prints, in the
// main checkout, a linked worktree and on a detached head.
func TestGitBranchWithRealGit(t *testing.T) {
	top := realTempDir(t)
	main := filepath.Join(top, "main")
	require.NoError(t, os.MkdirAll(filepath.Join(main, "pkg"), 0o755))
	runGit(t, main, "init", "-q", "-b", "trunk")
	fsys := afero.NewOsFs()
	got, ok := GitBranch(fsys, filepath.Join(main, "pkg"))
	require.True(t, ok)
	assert.Equal(t, "trunk", got, "a new repository names its branch before any commit")
	runGit(t, main, "commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(top, "wt")
	runGit(t, main, "worktree", "add", "-q", "-b", "feature/x", wt)
	got, ok = GitBranch(fsys, wt)
	require.True(t, ok)
	assert.Equal(t, "feature/x", got, "a worktree's own branch")
	runGit(t, main, "checkout", "-q", "--detach")
	got, ok = GitBranch(fsys, main)
	require.True(t, ok)
	assert.Equal(t, "HEAD", got)
	_, ok = GitBranch(fsys, top)
	assert.False(t, ok, "outside a checkout")
}

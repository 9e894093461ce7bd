package memtools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/rootfs"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type env struct {
	name    string
	fs      afero.Fs
	mem     string // the memory dir
	outside string // a directory beside it
	ts      *Toolset
}

// envs builds the same memory dir on a MemMapFs and on the real disk.
func envs(t *testing.T) []env {
	t.Helper()
	disk, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var out []env
	for _, e := range []env{
		{name: "mem", fs: afero.NewMemMapFs(), mem: "/home/u/mem", outside: "/home/u/outside"},
		{name: "os", fs: afero.NewOsFs(), mem: filepath.Join(disk, "mem"), outside: filepath.Join(disk, "outside")},
	} {
		require.NoError(t, e.fs.MkdirAll(filepath.Join(e.mem, "team"), 0o755))
		require.NoError(t, e.fs.MkdirAll(e.outside, 0o755))
		require.NoError(t, afero.WriteFile(e.fs, filepath.Join(e.mem, "MEMORY.md"), []byte("- [A](a.md) — alpha\n"), 0o644))
		require.NoError(t, afero.WriteFile(e.fs, filepath.Join(e.mem, "a.md"), []byte("line one\nline two\nalpha beta\n"), 0o644))
		require.NoError(t, afero.WriteFile(e.fs, filepath.Join(e.mem, "team", "ci.md"), []byte("CI must stay green\n"), 0o644))
		require.NoError(t, afero.WriteFile(e.fs, filepath.Join(e.outside, "secret.md"), []byte("outside alpha\n"), 0o644))
		ts, err := New(dirAt(e.fs, e.mem), Options{})
		require.NoError(t, err)
		e.ts = ts
		out = append(out, e)
	}
	return out
}

func run(t *testing.T, ts *Toolset, name string, input any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	for _, tool := range ts.Tools() {
		if tool.Spec.Name == name {
			require.True(t, json.Valid(tool.Spec.InputSchema), "schema of %s", name)
			return tool.Call(context.Background(), raw)
		}
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

type m = map[string]any

func TestRead(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			out, err := run(t, e.ts, memdir.ToolRead, m{"file_path": filepath.Join(e.mem, "a.md")})
			require.NoError(t, err)
			assert.Equal(t, "     1\tline one\n     2\tline two\n     3\talpha beta\n", out)
			out, err = run(t, e.ts, memdir.ToolRead, m{"file_path": filepath.Join(e.mem, "a.md"), "offset": 2, "limit": 1})
			require.NoError(t, err)
			assert.Equal(t, "     2\tline two\n(more lines follow; read on with offset=3)\n", out)
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": filepath.Join(e.mem, "a.md"), "offset": 9})
			assert.ErrorContains(t, err, "has only 3 lines")
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": filepath.Join(e.mem, "nope.md")})
			assert.ErrorContains(t, err, "does not exist")
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": filepath.Join(e.mem, "team")})
			assert.ErrorContains(t, err, "is a directory")
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": 42})
			assert.ErrorContains(t, err, "not valid")
		})
	}
}

func TestHostilePaths(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			hostile := []string{
				filepath.Join(e.outside, "secret.md"),
				filepath.Join(e.mem, "..", "outside", "secret.md"),
				filepath.Join(e.mem+"-evil", "x.md"),
				"relative/a.md",
				"/etc/passwd",
				e.mem + "/team/../../outside/secret.md",
			}
			for _, p := range hostile {
				for _, tool := range []string{memdir.ToolRead, memdir.ToolWrite, memdir.ToolEdit} {
					_, err := run(t, e.ts, tool, m{"file_path": p, "content": "x", "old_string": "a", "new_string": "b"})
					require.Error(t, err, "%s %s", tool, p)
					assert.NotContains(t, err.Error(), e.outside, "errors never show paths outside the memory dirs")
					var te *memdir.ToolError
					assert.ErrorAs(t, err, &te)
				}
				for _, tool := range []string{memdir.ToolGrep, memdir.ToolGlob, memdir.ToolList} {
					_, err := run(t, e.ts, tool, m{"path": p, "pattern": "alpha"})
					require.Error(t, err, "%s %s", tool, p)
					assert.NotContains(t, err.Error(), e.outside)
				}
			}
			got, err := afero.ReadFile(e.fs, filepath.Join(e.outside, "secret.md"))
			require.NoError(t, err)
			assert.Equal(t, "outside alpha\n", string(got))
			assert.Empty(t, e.ts.Written())
		})
	}
}

func TestSymlinksOutOnDisk(t *testing.T) {
	e := envs(t)[1]
	require.NoError(t, os.Symlink(e.outside, filepath.Join(e.mem, "sub")))
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "secret.md"), filepath.Join(e.mem, "link.md")))
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "new.md"), filepath.Join(e.mem, "dangling.md")))
	for _, p := range []string{"sub/secret.md", "sub/new.md", "link.md", "dangling.md"} {
		for _, tool := range []string{memdir.ToolRead, memdir.ToolWrite, memdir.ToolEdit} {
			_, err := run(t, e.ts, tool, m{"file_path": filepath.Join(e.mem, p), "content": "pwned", "old_string": "outside", "new_string": "pwned"})
			require.Error(t, err, "%s %s", tool, p)
			assert.Contains(t, err.Error(), "refused")
		}
	}
	_, err := run(t, e.ts, memdir.ToolList, m{"path": filepath.Join(e.mem, "sub")})
	assert.Error(t, err)
	// Grep and Glob over the memory dir do not follow the links out.
	out, err := run(t, e.ts, memdir.ToolGrep, m{"pattern": "outside"})
	require.NoError(t, err)
	assert.Contains(t, out, "No matches")
	got, err := os.ReadFile(filepath.Join(e.outside, "secret.md"))
	require.NoError(t, err)
	assert.Equal(t, "outside alpha\n", string(got))
	_, err = os.Stat(filepath.Join(e.outside, "new.md"))
	assert.True(t, os.IsNotExist(err))
}

func TestWriteAndEdit(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			p := filepath.Join(e.mem, "notes", "new.md")
			out, err := run(t, e.ts, memdir.ToolWrite, m{"file_path": p, "content": "hello world\nhello again\n"})
			require.NoError(t, err)
			assert.Contains(t, out, "Wrote 24 bytes")
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": p, "old_string": "hello", "new_string": "bye"})
			assert.ErrorContains(t, err, "occurs 2 times")
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": p, "old_string": "missing", "new_string": "x"})
			assert.ErrorContains(t, err, "was not found")
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": p, "old_string": "", "new_string": "x"})
			assert.ErrorContains(t, err, "must not be empty")
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": p, "old_string": "x", "new_string": "x"})
			assert.ErrorContains(t, err, "the same")
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": p, "old_string": "hello world", "new_string": "hi world"})
			require.NoError(t, err)
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": p, "old_string": "hello", "new_string": "yo", "replace_all": true})
			require.NoError(t, err)
			got, err := afero.ReadFile(e.fs, p)
			require.NoError(t, err)
			assert.Equal(t, "hi world\nyo again\n", string(got))
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": p})
			assert.ErrorContains(t, err, "content is required")
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "team"), "content": "x"})
			assert.ErrorContains(t, err, "is a directory")
			assert.Equal(t, []string{p}, e.ts.Written())
			entries, err := afero.ReadDir(e.fs, filepath.Dir(p))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "atomic writes leave no temporary files")
		})
	}
}

func TestHugeAndBinaryFiles(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ts, err := New(dirAt(e.fs, e.mem), Options{MaxFileBytes: 1 << 20, MaxReadLines: 100})
			require.NoError(t, err)
			huge := filepath.Join(e.mem, "huge.md")
			require.NoError(t, afero.WriteFile(e.fs, huge, []byte(strings.Repeat("x", 2<<20)), 0o644))
			_, err = run(t, ts, memdir.ToolRead, m{"file_path": huge})
			assert.ErrorContains(t, err, "too large")
			_, err = run(t, ts, memdir.ToolEdit, m{"file_path": huge, "old_string": "x", "new_string": "y"})
			assert.ErrorContains(t, err, "too large")
			_, err = run(t, ts, memdir.ToolWrite, m{"file_path": huge, "content": strings.Repeat("y", 2<<20)})
			assert.ErrorContains(t, err, "too large")

			long := filepath.Join(e.mem, "long.md")
			require.NoError(t, afero.WriteFile(e.fs, long, []byte(strings.Repeat("line\n", 500)+strings.Repeat("z", 5000)+"\n"), 0o644))
			out, err := run(t, ts, memdir.ToolRead, m{"file_path": long})
			require.NoError(t, err)
			assert.Equal(t, 101, strings.Count(out, "\n"), "bounded to MaxReadLines plus a note")
			assert.Contains(t, out, "offset=101")
			out, err = run(t, ts, memdir.ToolRead, m{"file_path": long, "offset": 501})
			require.NoError(t, err)
			assert.Contains(t, out, "[line cut]")

			bin := filepath.Join(e.mem, "bin.md")
			require.NoError(t, afero.WriteFile(e.fs, bin, []byte("abc\x00def alpha"), 0o644))
			_, err = run(t, ts, memdir.ToolRead, m{"file_path": bin})
			assert.ErrorContains(t, err, "binary")
			out, err = run(t, ts, memdir.ToolGrep, m{"pattern": "def"})
			require.NoError(t, err)
			assert.Contains(t, out, "No matches", "binary files are not searched")
		})
	}
}

func TestGrepGlobList(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			out, err := run(t, e.ts, memdir.ToolGrep, m{"pattern": "alpha"})
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(e.mem, "MEMORY.md")+"\n"+filepath.Join(e.mem, "a.md")+"\n", out)
			out, err = run(t, e.ts, memdir.ToolGrep, m{"pattern": "ALPHA", "case_insensitive": true, "output_mode": "content", "glob": "a.md"})
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(e.mem, "a.md")+":3:alpha beta\n", out)
			out, err = run(t, e.ts, memdir.ToolGrep, m{"pattern": "green", "path": filepath.Join(e.mem, "team")})
			require.NoError(t, err)
			assert.Contains(t, out, "ci.md")
			_, err = run(t, e.ts, memdir.ToolGrep, m{"pattern": "("})
			assert.ErrorContains(t, err, "not a valid regular expression")

			out, err = run(t, e.ts, memdir.ToolGlob, m{"pattern": "**/*.md"})
			require.NoError(t, err)
			assert.Equal(t, 3, strings.Count(out, "\n"))
			out, err = run(t, e.ts, memdir.ToolGlob, m{"pattern": "team/*.md"})
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(e.mem, "team", "ci.md")+"\n", out)
			out, err = run(t, e.ts, memdir.ToolGlob, m{"pattern": filepath.Join(e.mem, "team", "*.md")})
			require.NoError(t, err)
			assert.Contains(t, out, "ci.md")

			out, err = run(t, e.ts, memdir.ToolList, m{})
			require.NoError(t, err)
			assert.Contains(t, out, "  team/\n")
			assert.Contains(t, out, "  a.md\n")
		})
	}
}

func TestGrepBoundedOutput(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for i := 0; i < 50; i++ {
		require.NoError(t, afero.WriteFile(fsys, fmt.Sprintf("/m/f%02d.md", i), []byte(strings.Repeat("needle\n", 20)), 0o644))
	}
	ts, err := New(dirAt(fsys, "/m"), Options{MaxResults: 30})
	require.NoError(t, err)
	out, err := run(t, ts, memdir.ToolGrep, m{"pattern": "needle", "output_mode": "content"})
	require.NoError(t, err)
	assert.Equal(t, 31, strings.Count(out, "\n"))
	assert.Contains(t, out, "more matches not shown")
}

func TestMatchGlob(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		ok        bool
	}{
		{"*.md", "a.md", true}, {"*.md", "d/a.md", false}, {"**/*.md", "a.md", true}, {"**/*.md", "d/e/a.md", true},
		{"team/**", "team/a/b.md", true}, {"team/*.md", "team/a/b.md", false}, {"**", "x", true},
	} {
		ok, err := matchGlob(c.pat, c.name)
		require.NoError(t, err)
		assert.Equal(t, c.ok, ok, "%s %s", c.pat, c.name)
	}
}

func TestNewRequiresInputs(t *testing.T) {
	_, err := New(nil, Options{})
	assert.Error(t, err)
}

// dirAt is the memory directory at path on fsys.
func dirAt(fsys afero.Fs, path string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, path, memdir.DirOptions{})
	if err != nil {
		panic(err)
	}
	return d
}

// syncedDirAt is the memory directory at path, synced to an account.
func syncedDirAt(fsys afero.Fs, path string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, path, memdir.DirOptions{Synced: true})
	if err != nil {
		panic(err)
	}
	return d
}

// fakeToken is a made-up token in GitHub's PAT format, built at run time
// so that no scanner flags this file.
func fakeToken() string { return "gh" + "p_" + "0123456789abcdefghijklmnopqrstuvwxyzAB"[:36] }

func TestTeamSecretsRefusedWithoutPermissionRule(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ci := filepath.Join(e.mem, "team", "ci.md")
			_, err := run(t, e.ts, memdir.ToolWrite, map[string]any{"file_path": filepath.Join(e.mem, "team", "new.md"), "content": "token " + fakeToken()})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "GitHub PAT")
			assert.NotContains(t, err.Error(), fakeToken())
			exists, _ := afero.Exists(e.fs, filepath.Join(e.mem, "team", "new.md"))
			assert.False(t, exists)

			_, err = run(t, e.ts, memdir.ToolRead, map[string]any{"file_path": ci})
			require.NoError(t, err)
			_, err = run(t, e.ts, memdir.ToolEdit, map[string]any{"file_path": ci, "old_string": "green", "new_string": fakeToken()})
			assert.ErrorContains(t, err, "GitHub PAT")
			half := len(fakeToken()) / 2
			_, err = run(t, e.ts, memdir.ToolMultiEdit, map[string]any{"file_path": ci, "edits": []map[string]any{
				{"old_string": "CI", "new_string": fakeToken()[:half]},
				{"old_string": " must", "new_string": fakeToken()[half:]},
			}})
			assert.ErrorContains(t, err, "GitHub PAT", "the token exists only in the final content")
			data, _ := afero.ReadFile(e.fs, ci)
			assert.Equal(t, "CI must stay green\n", string(data), "nothing written")

			// Private memory is not team memory.
			_, err = run(t, e.ts, memdir.ToolWrite, map[string]any{"file_path": filepath.Join(e.mem, "mine.md"), "content": fakeToken()})
			assert.NoError(t, err)
		})
	}
}

func TestSyncedMemorySecretsRefused(t *testing.T) {
	mem := t.TempDir()
	ts, err := New(syncedDirAt(afero.NewOsFs(), mem), Options{BlindWrites: true})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolWrite, map[string]any{"file_path": filepath.Join(mem, "mine.md"), "content": "token " + fakeToken()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "synced to your account")
	assert.NoFileExists(t, filepath.Join(mem, "mine.md"))
}

func TestMultiEdit(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			a := filepath.Join(e.mem, "a.md")
			_, err := run(t, e.ts, memdir.ToolRead, map[string]any{"file_path": a})
			require.NoError(t, err)
			out, err := run(t, e.ts, memdir.ToolMultiEdit, map[string]any{"file_path": a, "edits": []map[string]any{
				{"old_string": "line one", "new_string": "first"},
				{"old_string": "first\nline two", "new_string": "first\nsecond"},
			}})
			require.NoError(t, err)
			assert.Contains(t, out, "Edited")
			data, _ := afero.ReadFile(e.fs, a)
			assert.Equal(t, "first\nsecond\nalpha beta\n", string(data), "each edit sees the text the ones before left")

			_, err = run(t, e.ts, memdir.ToolMultiEdit, map[string]any{"file_path": a, "edits": []map[string]any{
				{"old_string": "first", "new_string": "1st"},
				{"old_string": "missing", "new_string": "x"},
			}})
			assert.ErrorContains(t, err, "edit 2: old_string was not found")
			data, _ = afero.ReadFile(e.fs, a)
			assert.Equal(t, "first\nsecond\nalpha beta\n", string(data), "all or none")

			_, err = run(t, e.ts, memdir.ToolMultiEdit, map[string]any{"file_path": a, "edits": []map[string]any{}})
			assert.Error(t, err)
		})
	}
}

// TestOverRootfsWithSlashRoot is the documented setup for hosts that
// confine the tools themselves: a rootfs.Fs on the memory directory and
// a root of "/".
func TestOverRootfsWithSlashRoot(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "team"), 0o755))
	confined, err := rootfs.New(dir)
	require.NoError(t, err)
	defer confined.Close()
	ts, err := New(dirAt(confined, "/"), Options{})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolWrite, map[string]any{"file_path": "/team/plain.md", "content": "hello\n"})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "team", "plain.md"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(data))
	out, err := run(t, ts, memdir.ToolRead, map[string]any{"file_path": "/team/plain.md"})
	require.NoError(t, err)
	assert.Contains(t, out, "hello")
	_, err = run(t, ts, memdir.ToolWrite, map[string]any{"file_path": "/team/leak.md", "content": fakeToken()})
	assert.ErrorContains(t, err, "GitHub PAT")
}

// TestIndexWriteNotices: a Write or Edit that brings MEMORY.md to 80 % of
// a load limit answers with a note to compact it; one that goes over,
// with an error text saying the write stayed.
func TestIndexWriteNotices(t *testing.T) {
	e := envs(t)[0]
	index := filepath.Join(e.mem, "MEMORY.md")
	entries := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "- [T%d](t%d.md) — hook %d\n", i, i, i)
		}
		return b.String()
	}
	_, err := run(t, e.ts, memdir.ToolRead, m{"file_path": index})
	require.NoError(t, err)
	out, err := run(t, e.ts, memdir.ToolWrite, m{"file_path": index, "content": entries(150)})
	require.NoError(t, err)
	assert.NotContains(t, out, "memory index", "75 %: nothing to say")

	out, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": index, "content": entries(170)})
	require.NoError(t, err)
	assert.Contains(t, out, "Note: the memory index "+index+" is now 170 lines, close to its 200-line load limit. Compact it to under 140 lines now")

	out, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": index, "old_string": "- [T0](t0.md) — hook 0\n", "new_string": entries(100)})
	require.NoError(t, err)
	assert.Contains(t, out, "Error: this write left the memory index "+index+" at 269 lines, over its 200-line load limit. The write was saved")
	got, err := afero.ReadFile(e.fs, index)
	require.NoError(t, err)
	assert.Equal(t, 269, strings.Count(string(got), "\n"), "the write stayed")

	long := strings.Repeat("- [Long entry](long.md) — "+strings.Repeat("x", 200)+"\n", 90) // few lines, large
	out, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": index, "content": long})
	require.NoError(t, err)
	assert.Contains(t, out, "KB, close to its 24.4KB load limit. Compact it to under 17.1KB now")

	out, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "big.md"), "content": entries(300)})
	require.NoError(t, err)
	assert.NotContains(t, out, "memory index", "only an index gets the notice")
}

// TestToolsUseTheDirsScanner: the tools write through the Dir they are
// given, so its scanner judges: the default one refuses a credential in
// team memory, one that knows no rule lets it through.
func TestToolsUseTheDirsScanner(t *testing.T) {
	for _, lax := range []bool{false, true} {
		fsys := afero.NewMemMapFs()
		opts := memdir.DirOptions{}
		if lax {
			opts.Scanner = &secrets.Scanner{}
		}
		d, err := memdir.NewDir(fsys, "/m", opts)
		require.NoError(t, err)
		ts, err := New(d, Options{})
		require.NoError(t, err)
		_, err = run(t, ts, memdir.ToolWrite, map[string]any{"file_path": "/m/team/k.md", "content": "key " + fakeToken()})
		if lax {
			assert.NoError(t, err)
		} else {
			assert.ErrorContains(t, err, "refused")
		}
	}
}

func decide(t *testing.T, perm llm.PermissionFunc, name string, input map[string]any) llm.Decision {
	t.Helper()
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	return perm(context.Background(), llm.ToolCall{ID: "1", Name: name, Input: raw})
}

func TestExtractPermissionTable(t *testing.T) {
	fsys := afero.NewMemMapFs()
	const auto = "/c/projects/p/memory"
	perm := ExtractPermission(dirAt(fsys, auto+"/"), []string{"/c/projects/p/memory/logs"})
	secret := "token " + "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "aB3dE5"
	places := map[string]string{
		"inside":  auto + "/notes.md",
		"outside": "/c/projects/p/other.md",
		"sibling": auto + "-evil/x.md",
		"team":    auto + "/team/ci.md",
		"dotdot":  auto + "/../secrets.md",
	}
	// Every tool against every place; writes carry either clean text or a
	// secret. Read tools may look anywhere in the memory dirs; write tools
	// only inside the auto dir. A secret passes the permission: the write
	// gate scans what the write leaves in the file, once
	// (TestTeamSecretsRefusedWithoutPermissionRule).
	type row struct {
		tool, place, content string
		allow                bool
	}
	var table []row
	readTools := []string{memdir.ToolRead, memdir.ToolGrep, memdir.ToolGlob, memdir.ToolList}
	for _, tool := range readTools {
		for place, ok := range map[string]bool{"inside": true, "team": true, "outside": false, "sibling": false, "dotdot": false} {
			table = append(table, row{tool, place, "", ok})
		}
	}
	for _, tool := range []string{memdir.ToolWrite, memdir.ToolEdit} {
		for place, ok := range map[string]bool{"inside": true, "team": true, "outside": false, "sibling": false, "dotdot": false} {
			table = append(table, row{tool, place, "fine", ok})
		}
		table = append(table, row{tool, "team", secret, true}, row{tool, "inside", secret, true})
	}
	table = append(table, row{"Bash", "inside", "", false}, row{"WebFetch", "inside", "", false}, row{"NotebookEdit", "inside", "fine", false})
	for _, c := range table {
		t.Run(c.tool+" "+c.place+" "+c.content[:min(len(c.content), 4)], func(t *testing.T) {
			p := places[c.place]
			in := map[string]any{"file_path": p, "path": p, "content": c.content, "old_string": "x", "new_string": c.content, "pattern": "x"}
			d := decide(t, perm, c.tool, in)
			assert.Equal(t, c.allow, d.Allow, "reason: %s", d.Reason)
			if !d.Allow {
				assert.NotEmpty(t, d.Reason, "the model is told why")
				assert.NotContains(t, d.Reason, "ghp_", "a denial never repeats the secret")
			}
		})
	}
	assert.True(t, decide(t, perm, memdir.ToolGrep, map[string]any{"pattern": "x"}).Allow, "no path: the tool's own default")
	assert.True(t, decide(t, perm, memdir.ToolRead, map[string]any{"file_path": "/c/projects/p/memory/logs/2026/01/x.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolWrite, map[string]any{"file_path": "relative.md", "content": "x"}).Allow)
	d := perm(context.Background(), llm.ToolCall{Name: memdir.ToolWrite, Input: json.RawMessage(`[1]`)})
	assert.False(t, d.Allow)
}

func TestSessionPermission(t *testing.T) {
	perm := SessionPermission("/c/s/summary.md")
	assert.True(t, decide(t, perm, memdir.ToolEdit, map[string]any{"file_path": "/c/s/summary.md"}).Allow)
	assert.True(t, decide(t, perm, memdir.ToolEdit, map[string]any{"file_path": "/c/s/./summary.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolEdit, map[string]any{"file_path": "/c/s/other.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolEdit, map[string]any{}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolWrite, map[string]any{"file_path": "/c/s/summary.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolRead, map[string]any{"file_path": "/c/s/summary.md"}).Allow)
}

func TestAgentWithMemoryTools(t *testing.T) {
	// The loop, the tools and the rule together: a denied write outside,
	// then a write inside that lands.
	fsys := afero.NewMemMapFs()
	const auto = "/c/memory"
	require.NoError(t, fsys.MkdirAll(auto, 0o755))
	ts, err := New(dirAt(fsys, auto), Options{})
	require.NoError(t, err)
	steps := []llm.Response{
		toolUse("1", memdir.ToolWrite, map[string]any{"file_path": "/etc/cron.d/x", "content": "x"}),
		toolUse("2", memdir.ToolWrite, map[string]any{"file_path": auto + "/user_role.md", "content": "---\nname: Role\ntype: user\n---\nData scientist\n"}),
		{Message: llm.Message{Content: []llm.Block{llm.TextBlock("saved")}}, StopReason: llm.StopEndTurn},
	}
	i := 0
	model := llm.ModelFunc(func(context.Context, llm.Request) (llm.Response, error) { i++; return steps[i-1], nil })
	res, err := llm.RunAgent(context.Background(), model, llm.Task{Prompt: "save", Tools: ts.Tools(), Permission: ExtractPermission(dirAt(fsys, auto), nil)})
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 2)
	assert.True(t, res.ToolCalls[0].Denied)
	assert.False(t, res.ToolCalls[1].Denied)
	assert.Equal(t, []string{auto + "/user_role.md"}, ts.Written())
}

func toolUse(id, name string, input map[string]any) llm.Response {
	raw, _ := json.Marshal(input)
	return llm.Response{Message: llm.Message{Content: []llm.Block{llm.ToolUseBlock(id, name, raw)}}, StopReason: llm.StopToolUse}
}

func TestReadBeforeWrite(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			a := filepath.Join(e.mem, "a.md")
			edit := m{"file_path": a, "old_string": "alpha", "new_string": "gamma"}

			_, err := run(t, e.ts, memdir.ToolEdit, edit)
			assert.ErrorContains(t, err, "has not been read yet")
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "x\n"})
			assert.ErrorContains(t, err, "has not been read yet")
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "new.md"), "content": "x\n"})
			assert.NoError(t, err, "creating a file overwrites nothing")

			// Part of the file: Edit may go on, Write may not.
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": a, "offset": 2, "limit": 1})
			require.NoError(t, err)
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "x\n"})
			assert.ErrorContains(t, err, "has not been read yet")
			_, err = run(t, e.ts, memdir.ToolEdit, edit)
			require.NoError(t, err)
			// Its own write counts as read.
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": a, "old_string": "gamma", "new_string": "delta"})
			require.NoError(t, err)

			// Someone else changes the file: refused, nothing lost.
			require.NoError(t, afero.WriteFile(e.fs, a, []byte("the user's version\n"), 0o644))
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "mine\n"})
			assert.ErrorContains(t, err, "has been modified since you read it")
			data, _ := afero.ReadFile(e.fs, a)
			assert.Equal(t, "the user's version\n", string(data))

			// A full read whose content still matches passes, whatever the mtime.
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": a})
			require.NoError(t, err)
			future := time.Now().Add(time.Hour)
			require.NoError(t, e.fs.Chtimes(a, future, future))
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "mine\n"})
			assert.NoError(t, err)
		})
	}
}

func TestBlindWritesOption(t *testing.T) {
	e := envs(t)[1]
	ts, err := New(dirAt(e.fs, e.mem), Options{BlindWrites: true})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "a.md"), "content": "x\n"})
	assert.NoError(t, err)
}

// TestConcurrentWritersOneWins is the main agent's Edit and a background
// job's Write to the same memory file at the same moment, on the real
// disk: exactly one lands, the other is told "modified since read", and
// the file holds the winner's content in full.
func TestConcurrentWritersOneWins(t *testing.T) {
	e := envs(t)[1]
	a := filepath.Join(e.mem, "a.md")
	wins := map[string]int{}
	for i := range 200 {
		base := fmt.Sprintf("round %d\nshared line\n", i)
		require.NoError(t, os.WriteFile(a, []byte(base), 0o644))
		main, err := New(dirAt(e.fs, e.mem), Options{})
		require.NoError(t, err)
		job, err := New(dirAt(e.fs, e.mem), Options{})
		require.NoError(t, err)
		for _, ts := range []*Toolset{main, job} {
			_, err := run(t, ts, memdir.ToolRead, m{"file_path": a})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		var editErr, writeErr error
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, editErr = callTool(main, memdir.ToolEdit, m{"file_path": a, "old_string": "shared line", "new_string": "main agent's line"})
		}()
		go func() {
			defer wg.Done()
			<-start
			_, writeErr = callTool(job, memdir.ToolWrite, m{"file_path": a, "content": base + "background job's line\n"})
		}()
		close(start)
		wg.Wait()
		data, err := os.ReadFile(a)
		require.NoError(t, err)
		switch {
		case editErr == nil && writeErr != nil:
			assert.ErrorContains(t, writeErr, "modified since you read it")
			assert.Equal(t, fmt.Sprintf("round %d\nmain agent's line\n", i), string(data))
			wins["edit"]++
		case writeErr == nil && editErr != nil:
			assert.ErrorContains(t, editErr, "modified since you read it")
			assert.Equal(t, base+"background job's line\n", string(data))
			wins["write"]++
		default:
			t.Fatalf("round %d: edit error %v, write error %v: exactly one must win", i, editErr, writeErr)
		}
	}
	t.Logf("wins over 200 rounds: %v", wins)
}

func callTool(ts *Toolset, name string, input m) (string, error) {
	raw, _ := json.Marshal(input)
	for _, tool := range ts.Tools() {
		if tool.Spec.Name == name {
			return tool.Call(context.Background(), raw)
		}
	}
	return "", fmt.Errorf("no tool %s", name)
}

func TestChangedFiles(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			n := filepath.Join(e.mem, "note.md")
			gone := filepath.Join(e.mem, "gone.md")
			for _, p := range []string{n, gone} {
				_, err := run(t, e.ts, memdir.ToolWrite, m{"file_path": p, "content": "mine\n"})
				require.NoError(t, err)
			}
			assert.Empty(t, e.ts.ChangedFiles())
			require.NoError(t, afero.WriteFile(e.fs, n, []byte("theirs\n"), 0o644))
			require.NoError(t, e.fs.Remove(gone))
			ch := e.ts.ChangedFiles()
			require.Len(t, ch, 2)
			byPath := map[string]filehistory.Change{}
			for _, c := range ch {
				byPath[c.Path] = c
			}
			assert.Equal(t, "theirs\n", string(byPath[n].Content))
			assert.True(t, byPath[gone].Deleted)
			assert.Empty(t, e.ts.ChangedFiles(), "each change is reported once")
			// The model was told: it may edit the new content.
			_, err := run(t, e.ts, memdir.ToolEdit, m{"file_path": n, "old_string": "theirs", "new_string": "ours"})
			assert.NoError(t, err)
		})
	}
}

func TestToolsetTrackerRewindsToolWrites(t *testing.T) {
	ctx := context.Background()
	e := envs(t)[1]
	home := filepath.Join(filepath.Dir(e.mem), "home")
	tr, err := filehistory.NewTracker(e.fs, home, "s1", filehistory.Options{})
	require.NoError(t, err)
	ts, err := New(dirAt(e.fs, e.mem).WithHistory(tr), Options{})
	require.NoError(t, err)
	a := filepath.Join(e.mem, "a.md")
	before, _ := os.ReadFile(a)

	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	_, err = run(t, ts, memdir.ToolRead, m{"file_path": a})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolEdit, m{"file_path": a, "old_string": "alpha", "new_string": "wrong"})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "bad.md"), "content": "a wrong memory\n"})
	require.NoError(t, err)

	st, err := tr.Rewind(ctx, "m1", filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Len(t, st.FilesChanged, 2)
	after, _ := os.ReadFile(a)
	assert.Equal(t, string(before), string(after))
	_, err = os.Stat(filepath.Join(e.mem, "bad.md"))
	assert.True(t, os.IsNotExist(err))

	// Without a snapshot the tracker refuses, and so does the write.
	tr2, _ := filehistory.NewTracker(e.fs, home, "s2", filehistory.Options{})
	ts2, _ := New(dirAt(e.fs, e.mem).WithHistory(tr2), Options{})
	_, err = run(t, ts2, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "x.md"), "content": "x"})
	assert.ErrorContains(t, err, "could not be saved for undo")
	assert.False(t, strings.Contains(err.Error(), home), "no host path of the backup store")
}

// BenchmarkGrep runs the Grep tool over a 2,000-file memory dir on the
// real disk, and in the same loop a floor that reads every file (paths
// known in advance) and runs the same regexp; it reports x-floor.
func BenchmarkGrep(b *testing.B) {
	dir := b.TempDir()
	var paths []string
	body := strings.Repeat("remembered detail about the build and the deploy process\n", 16)
	for i := 0; i < 2000; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("t%02d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		p := filepath.Join(sub, fmt.Sprintf("m%04d.md", i))
		extra := ""
		if i%50 == 0 {
			extra = "the flaky-test quarantine list lives in ci/quarantine.txt\n"
		}
		if err := os.WriteFile(p, []byte("---\nname: m\n---\n"+body+extra), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	fsys := afero.NewOsFs()
	ts, err := New(dirAt(fsys, dir), Options{})
	if err != nil {
		b.Fatal(err)
	}
	grep := ts.grepTool()
	input, _ := json.Marshal(map[string]any{"pattern": `flaky-test \w+`})
	re := regexp.MustCompile(`flaky-test \w+`)
	ctx := context.Background()
	var ours, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := grep.Call(ctx, input)
		ours += time.Since(start)
		if err != nil || strings.Count(out, "\n") != 40 {
			b.Fatalf("grep: %v %q", err, out[:min(len(out), 200)])
		}
		b.StopTimer()
		start = time.Now()
		n := 0
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			if re.Match(data) {
				n++
			}
		}
		floor += time.Since(start)
		if n != 40 {
			b.Fatal(n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(ours)/float64(floor), "x-floor")
}

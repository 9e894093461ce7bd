package memorytool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newHandler(t *testing.T) (*Handler, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "mem")
	h, err := New(mustDir(afero.NewOsFs(), root))
	require.NoError(t, err)
	return h, root
}

func do(t *testing.T, h *Handler, in map[string]any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	return h.Call(context.Background(), raw)
}

func ok(t *testing.T, h *Handler, in map[string]any) string {
	t.Helper()
	out, err := do(t, h, in)
	require.NoError(t, err, "%v", in)
	return out
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestCommandsAndTheirOutput(t *testing.T) {
	h, root := newHandler(t)
	note := "---\nname: Deploys\ndescription: when we ship\ntype: project\n---\nWe deploy on Tuesdays.\nNever on Fridays.\n"
	assert.Equal(t, "File created successfully at: /memories/deploys.md",
		ok(t, h, map[string]any{"command": "create", "path": "/memories/deploys.md", "file_text": note}))
	assert.Equal(t, "- [Deploys](deploys.md) — when we ship\n", read(t, filepath.Join(root, "MEMORY.md")), "a new memory gets its pointer")

	assert.Equal(t, "Here's the content of /memories/deploys.md with line numbers:\n"+
		"     1\t---\n     2\tname: Deploys\n     3\tdescription: when we ship\n     4\ttype: project\n     5\t---\n"+
		"     6\tWe deploy on Tuesdays.\n     7\tNever on Fridays.\n     8\t",
		ok(t, h, map[string]any{"command": "view", "path": "/memories/deploys.md"}))
	assert.Equal(t, "Here's the content of /memories/deploys.md with line numbers:\n     6\tWe deploy on Tuesdays.\n     7\tNever on Fridays.",
		ok(t, h, map[string]any{"command": "view", "path": "/memories/deploys.md", "view_range": []int{6, 7}}))
	_, err := do(t, h, map[string]any{"command": "view", "path": "/memories/deploys.md", "view_range": []int{9, 2}})
	assert.ErrorContains(t, err, "Invalid `view_range`")

	assert.Equal(t, "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"+
		"     4\ttype: project\n     5\t---\n     6\tWe deploy on Tuesdays and Thursdays.\n     7\tNever on Fridays.\n     8\t",
		ok(t, h, map[string]any{"command": "str_replace", "path": "/memories/deploys.md", "old_str": "Tuesdays.", "new_str": "Tuesdays and Thursdays."}))
	_, err = do(t, h, map[string]any{"command": "str_replace", "path": "/memories/deploys.md", "old_str": "Mondays", "new_str": "x"})
	assert.EqualError(t, err, "No replacement was performed, old_str `Mondays` did not appear verbatim in /memories/deploys.md.")
	_, err = do(t, h, map[string]any{"command": "str_replace", "path": "/memories/deploys.md", "old_str": "day", "new_str": "x"})
	assert.EqualError(t, err, "No replacement was performed. Multiple occurrences of old_str `day` in lines: 6, 6, 7. Please ensure it is unique")

	assert.Equal(t, "The file /memories/deploys.md has been edited.",
		ok(t, h, map[string]any{"command": "insert", "path": "/memories/deploys.md", "insert_line": 7, "insert_text": "Hotfixes any day.\n"}))
	assert.True(t, strings.HasSuffix(read(t, filepath.Join(root, "deploys.md")), "Never on Fridays.\nHotfixes any day.\n"))
	_, err = do(t, h, map[string]any{"command": "insert", "path": "/memories/deploys.md", "insert_line": 99, "insert_text": "x"})
	assert.EqualError(t, err, "Invalid `insert_line` parameter: 99. It should be within the range [0, 8].")

	_, err = do(t, h, map[string]any{"command": "create", "path": "/memories/deploys.md", "file_text": "again"})
	assert.EqualError(t, err, "File /memories/deploys.md already exists")

	ok(t, h, map[string]any{"command": "create", "path": "/memories/notes/ports.md", "file_text": "---\nname: Ports\ndescription: which port\n---\n8080\n"})
	listing := ok(t, h, map[string]any{"command": "view", "path": "/memories"})
	lines := strings.Split(listing, "\n")
	assert.Equal(t, "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:", lines[0])
	assert.Regexp(t, `^\d+(\.\d)?[BK]\t/memories$`, lines[1])
	var names []string
	for _, l := range lines[2:] {
		names = append(names, strings.SplitN(l, "\t", 2)[1])
	}
	assert.Equal(t, []string{"/memories/MEMORY.md", "/memories/deploys.md", "/memories/notes/", "/memories/notes/ports.md"}, names, "hidden lock files are left out")
	assert.Contains(t, listing, "135B\t/memories/deploys.md")

	assert.Equal(t, "Successfully renamed /memories/notes/ports.md to /memories/ports.md",
		ok(t, h, map[string]any{"command": "rename", "old_path": "/memories/notes/ports.md", "new_path": "/memories/ports.md"}))
	assert.Contains(t, read(t, filepath.Join(root, "MEMORY.md")), "- [Ports](ports.md) — which port\n")
	assert.NotContains(t, read(t, filepath.Join(root, "MEMORY.md")), "notes/ports.md")
	_, err = do(t, h, map[string]any{"command": "rename", "old_path": "/memories/ports.md", "new_path": "/memories/deploys.md"})
	assert.EqualError(t, err, "The destination /memories/deploys.md already exists")

	// Into team/: the pointer moves to the team index.
	ok(t, h, map[string]any{"command": "rename", "old_path": "/memories/ports.md", "new_path": "/memories/team/ports.md"})
	assert.Equal(t, "- [Ports](ports.md) — which port\n", read(t, filepath.Join(root, "team", "MEMORY.md")))

	assert.Equal(t, "Successfully deleted /memories/deploys.md", ok(t, h, map[string]any{"command": "delete", "path": "/memories/deploys.md"}))
	assert.NoFileExists(t, filepath.Join(root, "deploys.md"))
	assert.NotContains(t, read(t, filepath.Join(root, "MEMORY.md")), "deploys.md")
	ok(t, h, map[string]any{"command": "delete", "path": "/memories/notes"})
	assert.NoDirExists(t, filepath.Join(root, "notes"))
	_, err = do(t, h, map[string]any{"command": "delete", "path": "/memories"})
	assert.EqualError(t, err, "Cannot delete the /memories directory itself")
	_, err = do(t, h, map[string]any{"command": "delete", "path": "/memories/MEMORY.md"})
	assert.ErrorContains(t, err, "index")
	_, err = do(t, h, map[string]any{"command": "delete", "path": "/memories/gone.md"})
	assert.EqualError(t, err, "The path /memories/gone.md does not exist")
}

func TestSecretsStayOutOfTeam(t *testing.T) {
	h, root := newHandler(t)
	token := "ghp_" + strings.Repeat("a1B2", 9)
	_, err := do(t, h, map[string]any{"command": "create", "path": "/memories/team/k.md", "file_text": "key " + token})
	assert.ErrorContains(t, err, "credential")
	ok(t, h, map[string]any{"command": "create", "path": "/memories/private.md", "file_text": "key " + token})
	_, err = do(t, h, map[string]any{"command": "rename", "old_path": "/memories/private.md", "new_path": "/memories/team/private.md"})
	assert.ErrorContains(t, err, "credential", "a private memory with a secret cannot be moved into team/")
	assert.FileExists(t, filepath.Join(root, "private.md"), "and it stays where it was")
	ok(t, h, map[string]any{"command": "create", "path": "/memories/team/ci.md", "file_text": "CI runs nightly\n"})
	_, err = do(t, h, map[string]any{"command": "str_replace", "path": "/memories/team/ci.md", "old_str": "nightly", "new_str": token})
	assert.ErrorContains(t, err, "credential")
	_, err = do(t, h, map[string]any{"command": "insert", "path": "/memories/team/ci.md", "insert_line": 0, "insert_text": token})
	assert.ErrorContains(t, err, "credential")
	assert.Equal(t, "CI runs nightly\n", read(t, filepath.Join(root, "team", "ci.md")))
	assert.NotContains(t, err.Error(), token, "a refusal never repeats the secret")
	ok(t, h, map[string]any{"command": "create", "path": "/memories/folder/x.md", "file_text": "x\n"})
	_, err = do(t, h, map[string]any{"command": "rename", "old_path": "/memories/folder", "new_path": "/memories/team/folder"})
	assert.ErrorContains(t, err, "move its files one by one", "a folder cannot carry unscanned files into team/")
	assert.FileExists(t, filepath.Join(root, "folder", "x.md"))
}

func TestHostilePaths(t *testing.T) {
	h, root := newHandler(t)
	base := filepath.Dir(root)
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.md"), []byte("OUTSIDE"), 0o644))
	ok(t, h, map[string]any{"command": "create", "path": "/memories/a.md", "file_text": "inside\n"})
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "link.md")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "nothing.md"), filepath.Join(root, "dangling.md")))
	require.NoError(t, os.Symlink("loop2", filepath.Join(root, "loop1")))
	require.NoError(t, os.Symlink("loop1", filepath.Join(root, "loop2")))

	hostile := []string{
		"/memories/../outside/secret.md", "/memories/%2e%2e/outside/secret.md", "/memories/%2E%2E%2Foutside",
		"/memories/..%2foutside", "/memories/a%5c..%5c..", "/etc/passwd", "/memoriesx/a.md", "memories/a.md",
		"/memories/./a.md", "/memories//a.md", "/memories/a\\..\\..\\x", "/memories/a\x00.md", "/memories/.hidden.md",
		"/memories/out/secret.md", "/memories/out", "/memories/link.md", "/memories/dangling.md", "/memories/loop1/x.md",
		"/memories/" + outside + "/secret.md", "",
	}
	shapes := []func(p string) map[string]any{
		func(p string) map[string]any { return map[string]any{"command": "view", "path": p} },
		func(p string) map[string]any {
			return map[string]any{"command": "create", "path": p, "file_text": "PWNED"}
		},
		func(p string) map[string]any {
			return map[string]any{"command": "str_replace", "path": p, "old_str": "OUTSIDE", "new_str": "PWNED"}
		},
		func(p string) map[string]any {
			return map[string]any{"command": "insert", "path": p, "insert_line": 0, "insert_text": "PWNED"}
		},
		func(p string) map[string]any { return map[string]any{"command": "delete", "path": p} },
		func(p string) map[string]any {
			return map[string]any{"command": "rename", "old_path": p, "new_path": "/memories/moved.md"}
		},
		func(p string) map[string]any {
			return map[string]any{"command": "rename", "old_path": "/memories/a.md", "new_path": p}
		},
	}
	for _, p := range hostile {
		for i, shape := range shapes {
			out, err := do(t, h, shape(p))
			var te *memdir.ToolError
			require.True(t, errors.As(err, &te), "%q shape %d: want a refusal, got %q, %v", p, i, out, err)
			if !strings.Contains(p, base) { // echoing the model's own input is no leak
				assert.NotContains(t, te.Msg, base, "no host path: %q shape %d", p, i)
			}
			assert.NotContains(t, out+te.Msg, "OUTSIDE", "%q shape %d", p, i)
		}
	}
	assert.Equal(t, "OUTSIDE", read(t, filepath.Join(outside, "secret.md")))
	entries, _ := os.ReadDir(outside)
	assert.Len(t, entries, 1, "nothing created outside")
	assert.Equal(t, "inside\n", read(t, filepath.Join(root, "a.md")))
	assert.NoFileExists(t, filepath.Join(root, "moved.md"))
}

func TestMalformedInput(t *testing.T) {
	h, _ := newHandler(t)
	for _, in := range []string{`not json`, `[]`, `{"command":7}`, `{"command":"explode","path":"/memories"}`, `{}`,
		`{"command":"create","path":"/memories/x.md"}`, `{"command":"insert","path":"/memories/x.md","insert_line":"one","insert_text":"a"}`} {
		_, err := h.Call(context.Background(), json.RawMessage(in))
		var te *memdir.ToolError
		assert.True(t, errors.As(err, &te), "%s: %v", in, err)
	}
}

func TestConcurrentEditsAllLand(t *testing.T) {
	h, root := newHandler(t)
	var b strings.Builder
	for i := range 20 {
		b.WriteString("line " + string(rune('a'+i)) + "\n")
	}
	ok(t, h, map[string]any{"command": "create", "path": "/memories/many.md", "file_text": b.String()})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := string(rune('a' + i))
			_, err := do(t, h, map[string]any{"command": "str_replace", "path": "/memories/many.md", "old_str": "line " + c + "\n", "new_str": "LINE " + c + "\n"})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, strings.ToUpper(b.String())[:0]+strings.ReplaceAll(b.String(), "line", "LINE"), read(t, filepath.Join(root, "many.md")))
}

func TestInMemoryFs(t *testing.T) {
	h, err := New(mustDir(afero.NewMemMapFs(), "/mem"))
	require.NoError(t, err)
	ok(t, h, map[string]any{"command": "create", "path": "/memories/x.md", "file_text": "---\nname: X\n---\nbody\n"})
	assert.Contains(t, ok(t, h, map[string]any{"command": "view", "path": "/memories"}), "/memories/x.md")
	assert.Equal(t, "Successfully deleted /memories/x.md", ok(t, h, map[string]any{"command": "delete", "path": "/memories/x.md"}))
}

// A write of the index, or a pointer added to it, that brings it near or
// over its load limit says so in the answer; the write stays.
func TestIndexNearItsLimitGetsANotice(t *testing.T) {
	h, root := newHandler(t)
	lines := func(n int) string { return strings.Repeat("- [A](a.md) — a memory\n", n) }
	const top = "- [Top](top.md) — the top\n"
	out := ok(t, h, map[string]any{"command": "create", "path": "/memories/MEMORY.md", "file_text": top + lines(119)})
	assert.Equal(t, "File created successfully at: /memories/MEMORY.md", out, "below 80 %: nothing to say")

	out = ok(t, h, map[string]any{"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 0, "insert_text": strings.TrimSuffix(lines(50), "\n")})
	assert.Contains(t, out, "Note: the memory index /memories/MEMORY.md is now 170 lines, close to its 200-line load limit.")

	out = ok(t, h, map[string]any{"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": top, "new_str": top + lines(59)})
	assert.Contains(t, out, "Error: this write left the memory index /memories/MEMORY.md at 229 lines")
	assert.Contains(t, out, "The write was saved")
	assert.Equal(t, 229, strings.Count(read(t, filepath.Join(root, "MEMORY.md")), "\n"), "the write stayed")

	// A new memory's pointer pushes it further: that answer says so too.
	out = ok(t, h, map[string]any{"command": "create", "path": "/memories/b.md", "file_text": "---\nname: b\ndescription: bee\n---\nb\n"})
	assert.Contains(t, out, "Error: this write left the memory index MEMORY.md at 230 lines")
}

// mustDir is the memory directory at path on fsys.
func mustDir(fsys afero.Fs, path string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, path, memdir.DirOptions{})
	if err != nil {
		panic(err)
	}
	return d
}

// TestHandlerUsesTheDirsScanner: the handler writes through the Dir it
// is given, so its scanner judges: one that knows no rule lets a
// credential into team memory, and a synced Dir refuses one anywhere.
func TestHandlerUsesTheDirsScanner(t *testing.T) {
	token := "ghp_" + strings.Repeat("a1B2", 9)
	lax, err := memdir.NewDir(afero.NewMemMapFs(), "/mem", memdir.DirOptions{Scanner: &secrets.Scanner{}})
	require.NoError(t, err)
	h, err := New(lax)
	require.NoError(t, err)
	ok(t, h, map[string]any{"command": "create", "path": "/memories/team/k.md", "file_text": "key " + token})

	synced, err := memdir.NewDir(afero.NewMemMapFs(), "/mem", memdir.DirOptions{Synced: true})
	require.NoError(t, err)
	h, err = New(synced)
	require.NoError(t, err)
	_, err = do(t, h, map[string]any{"command": "create", "path": "/memories/private.md", "file_text": "key " + token})
	assert.ErrorContains(t, err, "credential")
}

// TestAMoveItMayNotFinishIsNotStarted: under main-agent-only with
// proposals, a sub-agent may write team memory but not remove from it;
// its rename there is refused before anything is written, and leaves
// both paths as they were.
func TestAMoveItMayNotFinishIsNotStarted(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mem")
	d := mustDir(afero.NewOsFs(), root)
	h, err := New(d)
	require.NoError(t, err)
	ok(t, h, map[string]any{"command": "create", "path": "/memories/team/a.md", "file_text": "a\n"})
	d.SharedWritesMainAgentOnly(memdir.MainAgentOnlyPropose)
	raw, _ := json.Marshal(map[string]any{"command": "rename", "old_path": "/memories/team/a.md", "new_path": "/memories/team/b.md"})
	_, err = h.Call(memdir.WithAgent(context.Background(), memdir.AgentSub), raw)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "main agent")
	assert.FileExists(t, filepath.Join(root, "team", "a.md"))
	assert.NoFileExists(t, filepath.Join(root, "team", "b.md"), "nothing written")
}

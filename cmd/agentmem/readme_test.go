package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's root, where README.md and docs/ are.
const repoRoot = "../.."

// readmeBlock returns the lines of the first ```sh block after marker in
// README.md or a guide under docs/ (docstest.Block).
func readmeBlock(t *testing.T, marker string) []string {
	t.Helper()
	return docstest.Block(t, repoRoot, marker)
}

// shell runs README lines verbatim with bash in dir, the built command
// first on PATH, after replacing the README's placeholders.
type shell struct {
	t       *testing.T
	dir     string
	env     []string
	replace *strings.Replacer
}

func newShell(t *testing.T, dir string, env []string, replace ...string) *shell {
	bin := filepath.Dir(binary(t))
	return &shell{t: t, dir: dir, env: append(env, "PATH="+bin+":"+os.Getenv("PATH")), replace: strings.NewReplacer(replace...)}
}

func (s *shell) script(lines []string) string {
	return "set -euo pipefail\n" + s.replace.Replace(strings.Join(lines, "\n")) + "\n"
}

// run runs lines and returns stdout and stderr; it fails the test on a
// non-zero exit unless allowed.
func (s *shell) run(lines []string) (string, string) {
	s.t.Helper()
	cmd := exec.Command("bash", "-c", s.script(lines))
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), s.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second // a background job that kept the output open cannot hang the test
	err := cmd.Run()
	require.NoError(s.t, err, "README lines failed:\n%s\nstdout:\n%s\nstderr:\n%s", s.script(lines), out.String(), errOut.String())
	return out.String(), errOut.String()
}

// start runs lines in the background (a watcher) and returns a function
// that stops it with SIGTERM and returns what it printed.
func (s *shell) start(lines []string) func() string {
	s.t.Helper()
	cmd := exec.Command("bash", "-c", s.script(lines))
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), s.env...)
	var mu sync.Mutex
	var out bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // bash and what it starts, stopped together
	require.NoError(s.t, cmd.Start())
	s.t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// clone makes a checkout of github.com/acme/shop for who, with its own
// home, and the token in the environment.
func clone(t *testing.T, root, who string) (string, []string) {
	project := filepath.Join(root, who, "src", "shop")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".git", "config"), []byte("[remote \"origin\"]\n\turl = git@github.com:acme/shop.git\n"), 0o644))
	home := filepath.Join(root, who, "home")
	return project, []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")}
}

func projectTeamDir(t *testing.T, project string, env []string) string {
	out, _, code := runIn(t, project, env, "path")
	require.Equal(t, 0, code)
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "team" {
			return f[1]
		}
	}
	t.Fatalf("no team line in %q", out)
	return ""
}

// TestREADMETwoTeammatesVerbatim runs the README's two-teammate session
// as written, on a fresh setup: Ana's watcher, then Ben's lines.
func TestREADMETwoTeammatesVerbatim(t *testing.T) {
	t.Parallel()
	lines := readmeBlock(t, "A session with two\nteammates, Ana and Ben")
	split := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "# Ben") {
			split = i
		}
	}
	require.Greater(t, split, 0, "the block has Ana's part, then Ben's")
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	replace := []string{"http://host:8787", url, "amt_...", token}
	ana, anaEnv := clone(t, root, "ana")
	ben, benEnv := clone(t, root, "ben")
	anaTeam := projectTeamDir(t, ana, anaEnv)

	watcher := newShell(t, ana, anaEnv, replace...).start(lines[:split])
	time.Sleep(time.Second)
	// Ben's part runs in one shell, as a reader types it; where the
	// README says Ana's watcher has pulled, the shell waits until it has
	// and lints Ana's tree.
	lintOut := filepath.Join(root, "ana-lint.out")
	var benLines []string
	waits := 0
	for _, l := range lines[split:] {
		if strings.Contains(l, "within 5 s") {
			waits++
			l = fmt.Sprintf(`for i in $(seq 100); do [ -f %q ] && break; sleep 0.1; done; (cd %q && env %s agentmem lint > %q 2>&1 || true)`,
				filepath.Join(anaTeam, "testing.md"), ana, strings.Join(anaEnv, " "), lintOut)
		}
		benLines = append(benLines, l)
	}
	require.Equal(t, 1, waits)
	out, _ := newShell(t, ben, benEnv, replace...).run(benLines)
	assert.Contains(t, out, "pushed  testing.md")
	assert.Contains(t, out, "pushed  MEMORY.md")
	assert.Contains(t, out, "removed testing.md on the server")
	lint, err := os.ReadFile(lintOut)
	require.NoError(t, err)
	assert.Equal(t, "no problems found\n", string(lint), "the README's example memory is a clean one on Ana's side too")
	assert.Contains(t, watcher(), "wrote   testing.md")
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(anaTeam, "testing.md")); return os.IsNotExist(err) })
	waitFor(t, func() bool { return strings.Contains(watcher(), "deleted testing.md") })
	time.Sleep(6 * time.Second) // past an idle --interval 5s round
	log := watcher()
	assert.Equal(t, strings.Count(log, "checkpoint "), strings.Count(log, "done: "), "a line only for a round that changed something:\n%s", log)
}

// TestREADMEMovingOrRestoringAServer runs the README's "Moving or
// restoring a server" commands as written: a backup restored under
// memories written after it, then a move from SQLite to PostgreSQL.
func TestREADMEMovingOrRestoringAServer(t *testing.T) {
	t.Parallel()
	pg := os.Getenv("AGENTMEM_TEST_POSTGRES_DSN")
	if pg == "" && os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
		t.Fatal("AGENTMEM_REQUIRE_POSTGRES is set but AGENTMEM_TEST_POSTGRES_DSN is not")
	}
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" { // CI installs sqlite3 beside PostgreSQL
			t.Fatal("sqlite3 is not installed")
		}
		t.Skip("sqlite3 is not installed (.ci/run installs it)")
	}
	lines := readmeBlock(t, "### Moving or restoring a server")
	var restore, move []string
	for i, l := range lines {
		if strings.HasPrefix(l, "# Move to PostgreSQL") {
			restore, move = lines[:i], lines[i:]
		}
	}
	require.NotEmpty(t, move)

	root := t.TempDir()
	token, tokens := makeToken(t, root)
	require.NoError(t, os.Rename(tokens, filepath.Join(root, "tokens.json")))
	addr := freeAddr(t)
	url := "http://" + addr
	ana, anaEnv := clone(t, root, "ana")
	anaEnv = append(anaEnv, "AGENTMEM_TEAM_TOKEN="+token, "PG_URL="+pg)
	anaTeam := projectTeamDir(t, ana, anaEnv)
	sh := newShell(t, root, anaEnv, "127.0.0.1:8787", addr)
	t.Cleanup(func() {
		sh.run([]string{`[ -f team.pid ] && kill -KILL "$(cat team.pid)" 2>/dev/null || true`})
	})
	writeMemory := func(key, text string) {
		require.NoError(t, os.MkdirAll(anaTeam, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(anaTeam, key), []byte(text), 0o644))
	}
	inProject := func(cmd string) (string, string) {
		s := newShell(t, ana, anaEnv, "127.0.0.1:8787", addr)
		return s.run([]string{cmd})
	}

	// A running server, as the README starts it, and a first sync.
	sh.run([]string{"agentmem team serve --addr 127.0.0.1:8787 --db team.db --tokens tokens.json >>team.log 2>&1 & echo $! > team.pid"})
	writeMemory("early.md", "before the backup\n")
	inProject("agentmem team sync --server http://127.0.0.1:8787")

	// The backup line, then a memory written after it.
	sh.run(restore[:2])
	writeMemory("late.md", "after the backup\n")
	out, _ := inProject("agentmem team sync --server http://127.0.0.1:8787")
	require.Contains(t, out, "pushed  late.md")

	// Stop, put the copy back, start: the README's lines (the sync among
	// them runs in the project).
	var serverLines []string
	for _, l := range restore[2:] {
		if strings.HasPrefix(l, "agentmem team sync") {
			continue
		}
		serverLines = append(serverLines, l)
	}
	sh.run(serverLines)
	out, errOut := inProject(syncLine(restore))
	assert.Contains(t, errOut, "restored from a backup")
	assert.Contains(t, out, "pushed  late.md")
	assert.NotContains(t, out, "deleted")
	ben, benEnv := clone(t, root, "ben")
	benEnv = append(benEnv, "AGENTMEM_TEAM_TOKEN="+token)
	_, errOut, code := runIn(t, ben, benEnv, "team", "pull", "--server", url)
	require.Equal(t, 0, code, errOut)
	benTeam := projectTeamDir(t, ben, benEnv)
	for _, k := range []string{"early.md", "late.md"} {
		assert.FileExists(t, filepath.Join(benTeam, k), "the restored server has %s back", k)
	}

	if pg == "" {
		t.Log("AGENTMEM_TEST_POSTGRES_DSN is not set: the move to PostgreSQL is not run")
		return
	}
	// Move to PostgreSQL: a fresh schema, then the README's lines.
	schemaDSN := freshPostgresSchema(t, pg)
	sh = newShell(t, root, append(anaEnv, "PG_URL="+schemaDSN), "127.0.0.1:8787", addr)
	var moveServer []string
	for _, l := range move {
		if !strings.HasPrefix(l, "agentmem team sync") {
			moveServer = append(moveServer, l)
		}
	}
	sh.run(moveServer)
	out, errOut = inProject(syncLine(move))
	assert.Contains(t, errOut, "another identity")
	assert.Contains(t, out, "pushed  early.md")
	assert.Contains(t, out, "pushed  late.md")
	assert.NotContains(t, out, "deleted")
	carl, carlEnv := clone(t, root, "carl")
	carlEnv = append(carlEnv, "AGENTMEM_TEAM_TOKEN="+token)
	_, errOut, code = runIn(t, carl, carlEnv, "team", "pull", "--server", url)
	require.Equal(t, 0, code, errOut)
	carlTeam := projectTeamDir(t, carl, carlEnv)
	for _, k := range []string{"early.md", "late.md"} {
		assert.FileExists(t, filepath.Join(carlTeam, k), "the PostgreSQL store has %s", k)
	}
}

func syncLine(lines []string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, "agentmem team sync") {
			return l
		}
	}
	return "false"
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/agentmem-sdk/agentmem/memdir"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// binary builds the agentmem command once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentmem-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "agentmem")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return builtBin
}

func runBin(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, "", env, args...)
}

var listenRe = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// serve starts `agentmem team serve` and returns its URL and process.
func serve(t *testing.T, db, tokens string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary(t), "team", "serve", "--addr", "127.0.0.1:0", "--db", db, "--tokens", tokens, "--max-entries", "500")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], cmd
		}
	}
	t.Fatalf("the server did not start")
	return "", nil
}

func makeToken(t *testing.T, dir string) (string, string) {
	t.Helper()
	out, _, code := runBin(t, nil, "team", "token", "--org", "acme", "--repo", "acme/*")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "a token, then its token-file entry")
	assert.NotContains(t, lines[1], lines[0], "the entry holds a hash, never the token")
	tokens := filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte("["+lines[1]+"]"), 0o600))
	return lines[0], tokens
}

func TestTeamCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token, tokens := makeToken(t, dir)
	url, srv := serve(t, filepath.Join(dir, "team.db"), tokens)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.MkdirAll(a, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(a, "ci.md"), []byte("CI stays green"), 0o644))
	withToken := []string{"AGENTMEM_TEAM_TOKEN=" + token}

	out, errOut, code := runBin(t, withToken, "team", "push", "--server", url, "--repo", "acme/shop", "--dir", a)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pushed  ci.md")
	out, _, code = runBin(t, withToken, "team", "pull", "--server", url, "--repo", "acme/shop", "--dir", b)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "wrote   ci.md")
	got, err := os.ReadFile(filepath.Join(b, "ci.md"))
	require.NoError(t, err)
	assert.Equal(t, "CI stays green", string(got))
	out, _, code = runBin(t, withToken, "team", "sync", "--server", url, "--repo", "acme/shop", "--dir", b)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "done: 1 requests, 0 bytes sent")

	for _, c := range []struct {
		env  []string
		args []string
		code int
	}{
		{nil, []string{"team", "pull", "--server", url, "--repo", "acme/shop", "--dir", b}, exitAuth},
		{[]string{"AGENTMEM_TEAM_TOKEN=amt_bad"}, []string{"team", "pull", "--server", url, "--repo", "acme/shop", "--dir", b}, exitAuth},
		{withToken, []string{"team", "pull", "--server", url, "--repo", "globex/web", "--dir", b}, exitAuth},
		{withToken, []string{"team", "pull", "--repo", "acme/shop", "--dir", b}, exitError},
		{withToken, []string{"team", "bogus"}, exitError},
		{nil, []string{"team", "serve", "--addr", "127.0.0.1:0"}, exitError},
	} {
		_, errOut, code := runBin(t, c.env, c.args...)
		assert.Equal(t, c.code, code, "%v: %s", c.args, errOut)
		assert.LessOrEqual(t, strings.Count(strings.TrimSpace(errOut), "\n"), 0, "one-line errors: %q", errOut)
	}

	// Graceful shutdown on SIGTERM.
	require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "exit status 0 after a graceful shutdown")
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
	_, _, code = runBin(t, withToken, "team", "pull", "--server", url, "--repo", "acme/shop", "--dir", b)
	assert.Equal(t, exitNetwork, code)
}

// TestServerKilledLosesNoAcknowledgedWrite kills the server with SIGKILL
// while clients push, restarts it on the same database, and checks that
// every push the server acknowledged is there.
func TestServerKilledLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token, tokens := makeToken(t, dir)
	db := filepath.Join(dir, "team.db")
	url, srv := serve(t, db, tokens)

	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 3; w++ {
		wg.Go(func() {
			local := filepath.Join(dir, fmt.Sprintf("w%d", w))
			if !assert.NoError(t, os.MkdirAll(local, 0o755)) {
				return
			}
			c, err := teammem.New(teamDirAt(afero.NewOsFs(), local), teammem.Options{BaseURL: url, Repo: "acme/shop", Token: token, Retries: 1, Sleep: func(context.Context, time.Duration) error { return nil }})
			if !assert.NoError(t, err) {
				return
			}
			var st teammem.SyncState
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d-%03d.md", w, i)
				content := fmt.Sprintf("writer %d entry %d", w, i)
				if !assert.NoError(t, os.WriteFile(filepath.Join(local, key), []byte(content), 0o644)) {
					return
				}
				res, err := c.Push(context.Background(), &st)
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				for _, k := range res.Pushed {
					data, _ := os.ReadFile(filepath.Join(local, k))
					acked[k] = string(data)
				}
				mu.Unlock()
			}
		})
	}
	// Kill once some pushes were acknowledged (or after 10 s on a slow machine).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20 {
			break
		}
	}
	require.NoError(t, srv.Process.Signal(syscall.SIGKILL))
	_ = srv.Wait()
	close(stop)
	wg.Wait()
	require.NotEmpty(t, acked)

	url2, _ := serve(t, db, tokens)
	c, err := teammem.New(teamDirAt(afero.NewOsFs(), filepath.Join(dir, "check")), teammem.Options{BaseURL: url2, Repo: "acme/shop", Token: token})
	require.NoError(t, err)
	_, err = c.Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	for k, v := range acked {
		got, err := os.ReadFile(filepath.Join(dir, "check", k))
		if assert.NoError(t, err, "acknowledged %s is missing after the crash", k) {
			assert.Equal(t, v, string(got))
		}
	}
	t.Logf("%d acknowledged writes survived SIGKILL", len(acked))
}

func TestTeamUsage(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	e := env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }, fs: afero.NewOsFs()}
	assert.Equal(t, exitOK, run([]string{"team", "--help"}, e))
	assert.Contains(t, out.String(), "usage: agentmem team COMMAND")
	out.Reset()
	assert.Equal(t, exitOK, run([]string{"team", "serve", "--help"}, e))
	assert.Contains(t, out.String(), "-max-entries")
	assert.Equal(t, exitError, run([]string{"team"}, e))
	errOut.Reset()
	assert.Equal(t, exitError, run([]string{"team", "nope"}, e))
	assert.Equal(t, "agentmem team: unknown team command \"nope\" (want serve, token, pull, push, sync, watch, log, restore, review or policy)\n", errOut.String())
}

func TestTeamServeOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("AGENTMEM_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
			t.Fatal("AGENTMEM_TEST_POSTGRES_DSN is not set but PostgreSQL is required")
		}
		t.Skip("set AGENTMEM_TEST_POSTGRES_DSN to run against PostgreSQL (.ci/run does)")
	}
	dir := t.TempDir()
	token, tokens := makeToken(t, dir)
	srvURL, _ := serve(t, freshPostgresSchema(t, dsn), tokens)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.MkdirAll(a, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(a, "ci.md"), []byte("on postgres"), 0o644))
	withToken := []string{"AGENTMEM_TEAM_TOKEN=" + token}
	_, errOut, code := runBin(t, withToken, "team", "push", "--server", srvURL, "--repo", "acme/shop", "--dir", a)
	require.Equal(t, 0, code, errOut)
	_, errOut, code = runBin(t, withToken, "team", "pull", "--server", srvURL, "--repo", "acme/shop", "--dir", b)
	require.Equal(t, 0, code, errOut)
	got, err := os.ReadFile(filepath.Join(b, "ci.md"))
	require.NoError(t, err)
	assert.Equal(t, "on postgres", string(got))
}

// freshPostgresSchema creates an empty schema (dropped after the test) and
// returns a DSN that uses it.
func freshPostgresSchema(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	schema := fmt.Sprintf("agentmem_cli_%d", time.Now().UnixNano())
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close(context.Background())
	})
	u, err := neturl.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// teamDirAt is a team directory on its own at dir, for a sync client.
func teamDirAt(fsys afero.Fs, dir string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{Team: true})
	if err != nil {
		panic(err)
	}
	return d
}

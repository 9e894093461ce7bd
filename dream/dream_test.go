package dream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/racefs"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/agentmem-sdk/agentmem/transcript"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lock is exercised from real processes: the test binary re-runs
// itself with AGENTMEM_LOCK_HELPER set to a memory dir.
func TestMain(m *testing.M) {
	if dir := os.Getenv("AGENTMEM_LOCK_HELPER"); dir != "" {
		lock := newLock(afero.NewOsFs(), dir, LockOptions{})
		<-time.After(time.Until(parseStart()))
		_, err := lock.Acquire()
		if err == nil {
			fmt.Println("won")
			time.Sleep(3 * time.Second) // stay alive while the other one checks
		} else {
			fmt.Println("lost:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func parseStart() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, os.Getenv("AGENTMEM_LOCK_START"))
	return t
}

const (
	cfgHome = "/c"
	cwd     = "/work/shop"
	autoDir = "/c/projects/-work-shop/memory"
	current = "11111111-1111-4111-8111-111111111111"
)

var now0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func session(i int) string { return fmt.Sprintf("%08d-aaaa-4bbb-8ccc-%012d", i, i) }

// tree writes n session transcripts, touched after since.
func tree(t *testing.T, n int, at time.Time) afero.Fs {
	t.Helper()
	fsys := afero.NewMemMapFs()
	require.NoError(t, fsys.MkdirAll(autoDir, 0o755))
	dir := "/c/projects/-work-shop"
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, session(i)+".jsonl")
		require.NoError(t, afero.WriteFile(fsys, p, []byte(`{"type":"user"}`+"\n"), 0o644))
		require.NoError(t, fsys.Chtimes(p, at, at))
	}
	return fsys
}

func newDreamer(t *testing.T, fsys afero.Fs, model llm.Model, clock *testClock, mutate func(*Options)) *Dreamer {
	t.Helper()
	cfg := Options{ConfigHome: cfgHome, OriginalCwd: cwd, SessionID: current,
		Now: clock.Now, Lock: LockOptions{PID: 4242, Alive: func(int) bool { return true }}}
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := New(mustDir(t, fsys, autoDir), model, cfg)
	require.NoError(t, err)
	return d
}

func consolidation() *llmtest.Model {
	return llmtest.New(
		llmtest.ToolUse("1", "Write", map[string]any{"file_path": autoDir + "/deploys.md", "content": "---\nname: Deploys\ndescription: Tuesdays\ntype: project\n---\nDeploys on Tuesdays.\n"}),
		llmtest.ToolUse("2", "Write", map[string]any{"file_path": "/c/projects/-work-shop/" + session(0) + ".jsonl", "content": "tampered"}),
		llmtest.Text("Improved 1 memory."),
	)
}

func TestGatesInOrder(t *testing.T) {
	clock := &testClock{now: now0}
	cases := []struct {
		name   string
		cfg    func(*Options)
		want   string
		fsys   func() afero.Fs
		before func(d *Dreamer)
	}{
		{name: "disabled", cfg: func(c *Options) { c.Disabled = true; c.DailyLog = true }, want: StopDisabled},
		{name: "daily log", cfg: func(c *Options) { c.DailyLog = true; c.Remote = true }, want: StopDailyLog},
		{name: "remote", cfg: func(c *Options) { c.Remote = true }, want: StopRemote},
		{name: "auto memory off", cfg: func(c *Options) { c.AutoMemoryOff = true }, want: StopAutoMemoryOff},
		{name: "too soon", want: StopTooSoon, before: func(d *Dreamer) {
			require.NoError(t, afero.WriteFile(d.dir.FS(), d.lock.Path(), nil, 0o644))
			at := now0.Add(-23 * time.Hour)
			require.NoError(t, d.dir.FS().Chtimes(d.lock.Path(), at, at))
		}},
		{name: "few sessions", fsys: func() afero.Fs { return tree(t, 4, now0.Add(-time.Hour)) }, want: StopFewSessions},
		{name: "locked", want: StopLocked, before: func(d *Dreamer) {
			require.NoError(t, afero.WriteFile(d.dir.FS(), d.lock.Path(), []byte("777"), 0o644))
			at := now0.Add(-25 * time.Hour)
			require.NoError(t, d.dir.FS().Chtimes(d.lock.Path(), at, at))
			d.cfg.MinHours = 24
			d.lock.opts.StaleAfter = 48 * time.Hour // the holder is recent enough to count
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := tree(t, 6, now0.Add(-time.Hour))
			if c.fsys != nil {
				fsys = c.fsys()
			}
			model := llmtest.New()
			d := newDreamer(t, fsys, model, clock, c.cfg)
			if c.before != nil {
				c.before(d)
			}
			out := d.MaybeRun(context.Background())
			assert.False(t, out.Ran)
			assert.Equal(t, c.want, out.Stopped)
			assert.Empty(t, model.Requests())
		})
	}
}

func TestRunAndScanThrottle(t *testing.T) {
	clock := &testClock{now: now0}
	fsys := tree(t, 6, now0.Add(-time.Hour))
	// Files that are not UUID transcripts, and the current session, do not count.
	for _, name := range []string{"notes.jsonl", "not-a-uuid.jsonl", current + ".jsonl", session(99) + ".txt"} {
		require.NoError(t, afero.WriteFile(fsys, "/c/projects/-work-shop/"+name, []byte("x"), 0o644))
	}
	model := consolidation()
	var outcomes []Outcome
	d := newDreamer(t, fsys, model, clock, func(c *Options) { c.Observer = func(o Outcome) { outcomes = append(outcomes, o) } })
	out := d.MaybeRun(context.Background())
	require.NoError(t, out.Err)
	require.True(t, out.Ran)
	assert.Len(t, out.Sessions, 6)
	assert.Equal(t, []string{autoDir + "/deploys.md"}, out.Files, "the write into a transcript was refused")
	got, err := afero.ReadFile(fsys, "/c/projects/-work-shop/"+session(0)+".jsonl")
	require.NoError(t, err)
	assert.NotEqual(t, "tampered", string(got))
	last, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.True(t, last.Equal(now0), "a successful run stamps the lock")
	prompt := model.Requests()[0].Messages[0].Text()
	assert.Contains(t, prompt, session(5)+".jsonl")
	assert.NotContains(t, prompt, current)
	assert.Contains(t, model.Requests()[0].System, "no shell")
	assert.Equal(t, llm.PurposeAutoDream, model.Requests()[0].Purpose)

	// 24 h later with new sessions, but the throttle was set by a scan 5 min ago.
	clock.Advance(25 * time.Hour)
	d2 := newDreamer(t, fsys, llmtest.New(), clock, nil)
	d2.lastScan = clock.Now().Add(-5 * time.Minute)
	assert.Equal(t, StopThrottled, d2.MaybeRun(context.Background()).Stopped)
	// A refused scan still sets the throttle: the second call is throttled too.
	d3 := newDreamer(t, fsys, llmtest.New(), clock, nil)
	assert.Equal(t, StopFewSessions, d3.MaybeRun(context.Background()).Stopped, "the old sessions predate the last run")
	assert.Equal(t, StopThrottled, d3.MaybeRun(context.Background()).Stopped)
	require.Len(t, outcomes, 1)
}

func TestRollbackAfterFailure(t *testing.T) {
	clock := &testClock{now: now0}
	// No previous consolidation: the lock file goes away again.
	fsys := tree(t, 6, now0.Add(-time.Hour))
	d := newDreamer(t, fsys, llmtest.New(llmtest.Fail(&llm.APIError{StatusCode: 500})), clock, nil)
	out := d.MaybeRun(context.Background())
	require.True(t, out.Ran)
	require.Error(t, out.Err)
	_, err := fsys.Stat(d.Lock().Path())
	assert.True(t, os.IsNotExist(err))

	// With one: its time comes back and the body is emptied.
	prev := now0.Add(-30 * time.Hour)
	require.NoError(t, afero.WriteFile(fsys, d.Lock().Path(), []byte("1234"), 0o644))
	require.NoError(t, fsys.Chtimes(d.Lock().Path(), prev, prev))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	d = newDreamer(t, fsys, llmtest.New(llmtest.Step{Block: true, Started: started}), clock, nil)
	done := make(chan Outcome)
	go func() { done <- d.MaybeRun(ctx) }()
	<-started
	cancel()
	out = <-done
	assert.ErrorIs(t, out.Err, context.Canceled)
	last, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.True(t, last.Equal(prev))
	body, err := afero.ReadFile(fsys, d.Lock().Path())
	require.NoError(t, err)
	assert.Empty(t, body)
}

func TestForce(t *testing.T) {
	clock := &testClock{now: now0}
	fsys := tree(t, 1, now0.Add(-time.Hour))
	at := now0.Add(-time.Hour)
	d := newDreamer(t, fsys, consolidation(), clock, nil)
	require.NoError(t, afero.WriteFile(fsys, d.Lock().Path(), nil, 0o644))
	require.NoError(t, fsys.Chtimes(d.Lock().Path(), at, at))
	assert.Equal(t, StopTooSoon, d.MaybeRun(context.Background()).Stopped)
	out := d.Force(context.Background())
	require.NoError(t, out.Err)
	assert.True(t, out.Ran, "Force skips the time and session gates")
	last, _ := d.Lock().LastConsolidation()
	assert.True(t, last.Equal(now0), "a manual run stamps now")

	// But not the lock, nor gate 1.
	require.NoError(t, afero.WriteFile(fsys, d.Lock().Path(), []byte("777"), 0o644))
	d2 := newDreamer(t, fsys, llmtest.New(), clock, nil)
	assert.Equal(t, StopLocked, d2.Force(context.Background()).Stopped)
	d3 := newDreamer(t, fsys, llmtest.New(), clock, func(c *Options) { c.Remote = true })
	assert.Equal(t, StopRemote, d3.Force(context.Background()).Stopped)
}

func TestLockStaleness(t *testing.T) {
	clock := &testClock{now: now0}
	fsys := afero.NewMemMapFs()
	alive := map[int]bool{777: true}
	lock := newLock(fsys, autoDir, LockOptions{PID: 4242, Now: clock.Now, Alive: func(p int) bool { return alive[p] }})
	write := func(body string, at time.Time) {
		require.NoError(t, fsys.MkdirAll(autoDir, 0o755))
		require.NoError(t, afero.WriteFile(fsys, lock.Path(), []byte(body), 0o644))
		require.NoError(t, fsys.Chtimes(lock.Path(), at, at))
	}
	write("777", now0.Add(-30*time.Minute))
	_, err := lock.Acquire()
	assert.ErrorIs(t, err, ErrLockHeld, "recent and alive")

	write("777", now0.Add(-61*time.Minute))
	prev, err := lock.Acquire()
	require.NoError(t, err, "older than an hour: taken over even though alive")
	assert.True(t, prev.Equal(now0.Add(-61*time.Minute)))

	write("888", now0.Add(-time.Minute))
	_, err = lock.Acquire()
	require.NoError(t, err, "recent but the holder is dead")
	write("not a pid", now0.Add(-time.Minute))
	_, err = lock.Acquire()
	require.NoError(t, err, "an unparsable body holds nothing")
	write("1", now0.Add(-time.Minute))
	_, err = lock.Acquire()
	require.NoError(t, err, "pid 1 never counts")
}

func TestLockTwoGoroutines(t *testing.T) {
	// On the real disk, where O_EXCL is atomic (afero's MemMapFs checks and
	// creates in two steps).
	for round := 0; round < 20; round++ {
		fsys := afero.NewBasePathFs(afero.NewOsFs(), t.TempDir())
		var wins, losses int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for pid := 100; pid < 102; pid++ {
			wg.Go(func() {
				l := newLock(fsys, autoDir, LockOptions{PID: pid, Alive: func(int) bool { return true }})
				_, err := l.Acquire()
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins++
				} else {
					assert.True(t, errors.Is(err, ErrLockHeld) || errors.Is(err, ErrLostRace), "%v", err)
					losses++
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, wins, "exactly one holder")
		assert.Equal(t, 1, losses)
	}
}

func TestLockTwoProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	start := time.Now().Add(500 * time.Millisecond).Format(time.RFC3339Nano)
	var outs [2][]byte
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "AGENTMEM_LOCK_HELPER="+dir, "AGENTMEM_LOCK_START="+start)
			out, err := cmd.Output()
			assert.NoError(t, err)
			outs[i] = out
		})
	}
	wg.Wait()
	joined := string(outs[0]) + string(outs[1])
	assert.Equal(t, 1, strings.Count(joined, "won"), "exactly one process wins: %q", joined)
	assert.Equal(t, 1, strings.Count(joined, "lost"), "%q", joined)
}

func TestNewValidates(t *testing.T) {
	fsys, model := afero.NewMemMapFs(), llmtest.New()
	dir := mustDir(t, fsys, autoDir)
	for _, c := range []struct {
		dir   *memdir.Dir
		model llm.Model
		cfg   Options
	}{
		{nil, model, Options{ConfigHome: cfgHome, OriginalCwd: cwd}},
		{dir, nil, Options{ConfigHome: cfgHome, OriginalCwd: cwd}},
		{dir, model, Options{}},
	} {
		_, err := New(c.dir, c.model, c.cfg)
		assert.ErrorIs(t, err, ErrMissingConfig)
	}
	_, err := New(dir, model, Options{Transcripts: transcript.NewMemoryStore()})
	assert.NoError(t, err, "a host's own transcript store stands in for ConfigHome and OriginalCwd")
}

// mustDir is the memory directory object at dir on fsys.
func mustDir(t *testing.T, fsys afero.Fs, dir string) *memdir.Dir {
	t.Helper()
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{})
	require.NoError(t, err)
	return d
}

// MinHours is honoured only when finite and > 0; anything else falls back
// to defaultMinHours so a bad setting can never make consolidation run on
// every turn (0, negative) or never (NaN, +Inf).
func TestMinHoursDefaultsUnlessFinitePositive(t *testing.T) {
	clock := &testClock{now: now0}
	lockAt := func(d *Dreamer, age time.Duration) {
		require.NoError(t, afero.WriteFile(d.dir.FS(), d.lock.Path(), nil, 0o644))
		at := now0.Add(-age)
		require.NoError(t, d.dir.FS().Chtimes(d.lock.Path(), at, at))
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			d := newDreamer(t, tree(t, 6, now0.Add(-time.Hour)), llmtest.New(), clock, func(c *Options) { c.MinHours = bad })
			assert.Equal(t, float64(defaultMinHours), d.cfg.MinHours)
			lockAt(d, 23*time.Hour)
			assert.Equal(t, StopTooSoon, d.MaybeRun(context.Background()).Stopped)
		})
	}
	t.Run("finite positive kept", func(t *testing.T) {
		d := newDreamer(t, tree(t, 4, now0.Add(-time.Hour)), llmtest.New(), clock, func(c *Options) { c.MinHours = 1.5 })
		assert.Equal(t, 1.5, d.cfg.MinHours)
		lockAt(d, 2*time.Hour)
		// Past the time gate, stopped by the next one.
		assert.Equal(t, StopFewSessions, d.MaybeRun(context.Background()).Stopped)
	})
}

// TestHistoryUndoesARun: with Options.History the run's writes can be
// rewound from its Outcome.Checkpoint.
func TestHistoryUndoesARun(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := tree(t, 1, now0.Add(-time.Hour))
	history, err := filehistory.NewTracker(fsys, "/history", "dream", filehistory.Options{})
	require.NoError(t, err)
	d := newDreamer(t, fsys, consolidation(), clock, func(c *Options) { c.History = history })
	out := d.Force(ctx)
	require.NoError(t, out.Err)
	require.NotEmpty(t, out.Checkpoint)
	require.Equal(t, []string{autoDir + "/deploys.md"}, out.Files)
	exists, _ := afero.Exists(fsys, autoDir+"/deploys.md")
	require.True(t, exists)

	st, err := history.Rewind(ctx, out.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, out.Files, st.FilesChanged)
	exists, _ = afero.Exists(fsys, autoDir+"/deploys.md")
	assert.False(t, exists, "the run's new memory is gone")
}

// TestConsolidationIsToldWhichMemoriesConflict: two memories giving two
// values for one thing are named to the consolidation, newer first; a
// memory on another subject is not.
func TestConsolidationIsToldWhichMemoriesConflict(t *testing.T) {
	clock := &testClock{now: now0}
	fsys := tree(t, 6, now0.Add(-time.Hour))
	write := func(file, name, desc string, at time.Time) {
		p := autoDir + "/" + file
		require.NoError(t, afero.WriteFile(fsys, p, []byte("---\nname: "+name+"\ndescription: "+desc+"\ntype: project\n---\nx\n"), 0o644))
		require.NoError(t, fsys.Chtimes(p, at, at))
	}
	write("deploy-window.md", "deploy-window", "the deploy window is tuesday afternoon", now0.Add(-72*time.Hour))
	write("deploy-window-moved.md", "deploy-window", "the deploy window moved to thursday afternoon", now0.Add(-24*time.Hour))
	write("pager.md", "pager-rotation", "the pager rotates weekly", now0.Add(-48*time.Hour))
	model := consolidation()
	d := newDreamer(t, fsys, model, clock, nil)
	require.NoError(t, d.MaybeRun(context.Background()).Err)
	prompt := model.Requests()[0].Messages[0].Text()
	assert.Contains(t, prompt, "- deploy-window-moved.md ("+now0.Add(-24*time.Hour).Format("2006-01-02")+") is newer than deploy-window.md")
	assert.NotContains(t, prompt, "pager.md")

	assert.Empty(t, conflictingPairs(nil))
}

// TestConsolidationProposesRemovingExpiredMemories: a memory past its
// expires date is named to the consolidation with the date, one still
// current is not; the agent's DeleteMemory removes the file and its
// index line, shown as a deletion in a stage and left as it was until
// the stage is accepted; a path outside the directory is refused.
func TestConsolidationProposesRemovingExpiredMemories(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	yesterday, nextWeek := now0.AddDate(0, 0, -1).Format(time.DateOnly), now0.AddDate(0, 0, 7).Format(time.DateOnly)
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/freeze.md", []byte("---\nname: Freeze\ndescription: code freeze\ntype: project\nexpires: "+yesterday+"\n---\nNo merges this week.\n"), 0o644))
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/launch.md", []byte("---\nname: Launch\ndescription: launch week\ntype: project\nexpires: "+nextWeek+"\n---\nLaunch on Monday.\n"), 0o644))
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/MEMORY.md", []byte("- [Deploys](deploys.md) — Tuesdays\n- [Freeze](freeze.md) — code freeze\n- [Launch](launch.md) — launch week\n"), 0o644))
	original := memoryTree(t, fsys)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	model := llmtest.New(
		llmtest.ToolUse("1", DeleteMemoryTool, map[string]any{"file_path": "/etc/passwd"}),
		llmtest.ToolUse("2", DeleteMemoryTool, map[string]any{"file_path": stageDir + "/freeze.md"}),
		llmtest.Text("Removed 1 expired memory."),
	)
	st, err := newDreamer(t, fsys, model, clock, nil).ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Outcome.Err)
	prompt := model.Requests()[0].Messages[0].Text()
	assert.Contains(t, prompt, "- freeze.md (expires: "+yesterday+")")
	assert.Contains(t, prompt, "delete each file and its index line")
	assert.NotContains(t, prompt, "launch.md")
	refused := fmt.Sprint(model.Requests()[1].Messages)
	assert.Contains(t, refused, "not in the memory directory", "a path outside is refused")
	kinds := map[string]ChangeKind{}
	for _, c := range st.Changes {
		kinds[c.Rel] = c.Kind
	}
	assert.Equal(t, map[string]ChangeKind{"MEMORY.md": Changed, "freeze.md": Deleted}, kinds)
	assert.Equal(t, original, memoryTree(t, fsys), "nothing changes before Accept")

	require.NoError(t, st.Accept(ctx))
	exists, _ := afero.Exists(fsys, autoDir+"/freeze.md")
	assert.False(t, exists)
	index, err := afero.ReadFile(fsys, autoDir+"/MEMORY.md")
	require.NoError(t, err)
	assert.Equal(t, "- [Deploys](deploys.md) — Tuesdays\n- [Launch](launch.md) — launch week\n", string(index))

	// In place, with a history: the deletion is undone by the rewind.
	fsys = seeded(t)
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/freeze.md", []byte("---\nname: Freeze\nexpires: "+yesterday+"\n---\nx\n"), 0o644))
	before := memoryTree(t, fsys)
	history, err := filehistory.NewTracker(fsys, "/history", "dream", filehistory.Options{})
	require.NoError(t, err)
	model = llmtest.New(llmtest.ToolUse("1", DeleteMemoryTool, map[string]any{"file_path": autoDir + "/freeze.md"}), llmtest.Text("Done."))
	out := newDreamer(t, fsys, model, clock, func(c *Options) { c.History = history }).Force(ctx)
	require.NoError(t, out.Err)
	assert.Equal(t, []string{autoDir + "/freeze.md"}, out.Files)
	_, err = history.Rewind(ctx, out.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, before, memoryTree(t, fsys), "the rewind brings it back")
}

// TestConsolidationWritesThroughTheHostsDir: the consolidation's tools
// write through the Dir the host gave, so a directory synced to an
// account refuses a credential the consolidation copies into a memory,
// and the host's own scanner is the one that judges (one that knows no
// rule lets the same text through), for a run and for a stage.
func TestConsolidationWritesThroughTheHostsDir(t *testing.T) {
	token := "ghp_" + strings.Repeat("a1B2", 9)
	const stage = "/c/projects/-work-shop/stage"
	copying := func(dir string) *llmtest.Model {
		return llmtest.New(
			llmtest.ToolUse("1", "Write", map[string]any{"file_path": dir + "/deploys.md", "content": "---\nname: Deploys\ndescription: d\ntype: project\n---\nThe deploy token is " + token + "\n"}),
			llmtest.Text("Done."),
		)
	}
	run := func(t *testing.T, opts memdir.DirOptions, staged bool) afero.Fs {
		clock := &testClock{now: now0}
		fsys := tree(t, 1, now0.Add(-time.Hour))
		require.NoError(t, afero.WriteFile(fsys, autoDir+"/ci.md", []byte("---\nname: CI\ndescription: c\ntype: project\n---\nGreen.\n"), 0o644))
		dir, err := memdir.NewDir(fsys, autoDir, opts)
		require.NoError(t, err)
		target := autoDir
		if staged {
			target = stage
		}
		d, err := New(dir, copying(target), Options{ConfigHome: cfgHome, OriginalCwd: cwd, SessionID: current,
			Now: clock.Now, Lock: LockOptions{PID: 4242, Alive: func(int) bool { return true }}})
		require.NoError(t, err)
		if staged {
			st, err := d.ForceStaged(context.Background(), StageOptions{Dir: stage})
			require.NoError(t, err)
			if st != nil && st.Dir != "" {
				exists, _ := afero.Exists(fsys, st.Dir+"/deploys.md")
				if opts.Synced && opts.Scanner == nil {
					assert.False(t, exists, "the stage has the host's rules too")
				}
				require.NoError(t, st.Accept(context.Background()))
			}
			return fsys
		}
		out := d.Force(context.Background())
		require.NoError(t, out.Err)
		return fsys
	}
	for _, staged := range []bool{false, true} {
		fsys := run(t, memdir.DirOptions{Synced: true}, staged)
		exists, _ := afero.Exists(fsys, autoDir+"/deploys.md")
		assert.False(t, exists, "staged=%v: a synced directory refuses the credential", staged)

		fsys = run(t, memdir.DirOptions{Synced: true, Scanner: &secrets.Scanner{}}, staged)
		exists, _ = afero.Exists(fsys, autoDir+"/deploys.md")
		assert.True(t, exists, "staged=%v: the host's scanner judges", staged)

		fsys = run(t, memdir.DirOptions{}, staged)
		exists, _ = afero.Exists(fsys, autoDir+"/deploys.md")
		assert.True(t, exists, "staged=%v: a private directory keeps it", staged)
	}
}

// mergeIn scripts a consolidation of dir: it merges two memories into one
// (reading both first), points the index at it, and writes a new one.
func mergeIn(dir string) *llmtest.Model {
	return llmtest.New(
		llmtest.ToolUse("1", "Read", map[string]any{"file_path": dir + "/deploys.md"}),
		llmtest.ToolUse("2", "Edit", map[string]any{"file_path": dir + "/deploys.md", "old_string": "Tuesdays.", "new_string": "Tuesdays and Thursdays."}),
		llmtest.ToolUse("3", "Read", map[string]any{"file_path": dir + "/MEMORY.md"}),
		llmtest.ToolUse("4", "Write", map[string]any{"file_path": dir + "/MEMORY.md", "content": "- [Deploys](deploys.md) — Tuesdays and Thursdays\n- [Ports](ports.md) — staging 8443\n"}),
		llmtest.ToolUse("5", "Write", map[string]any{"file_path": dir + "/ports.md", "content": "---\nname: Ports\ndescription: staging 8443\ntype: project\n---\nStaging listens on 8443.\n"}),
		llmtest.Text("Merged."),
	)
}

func seeded(t *testing.T) afero.Fs {
	fsys := tree(t, 1, now0.Add(-time.Hour))
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/MEMORY.md", []byte("- [Deploys](deploys.md) — Tuesdays\n"), 0o644))
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/deploys.md", []byte("---\nname: Deploys\ndescription: Tuesdays\ntype: project\n---\nDeploys on Tuesdays.\n"), 0o644))
	return fsys
}

func memoryTree(t *testing.T, fsys afero.Fs) map[string][]byte {
	m, err := snapshotTree(context.Background(), fsys, autoDir)
	require.NoError(t, err)
	return m
}

// TestStagedAcceptEqualsInPlace: accepting a staged consolidation leaves
// the memory directory exactly as the same consolidation in place does,
// and the directory is untouched until then.
func TestStagedAcceptEqualsInPlace(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}

	inPlace := seeded(t)
	out := newDreamer(t, inPlace, mergeIn(autoDir), clock, nil).Force(ctx)
	require.NoError(t, out.Err)
	want := memoryTree(t, inPlace)

	fsys := seeded(t)
	original := memoryTree(t, fsys)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	st, err := newDreamer(t, fsys, mergeIn(stageDir), clock, nil).ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Outcome.Err)
	assert.Equal(t, original, memoryTree(t, fsys), "nothing changes before Accept")
	kinds := map[string]ChangeKind{}
	for _, c := range st.Changes {
		kinds[c.Rel] = c.Kind
	}
	assert.Equal(t, map[string]ChangeKind{"MEMORY.md": Changed, "deploys.md": Changed, "ports.md": Added}, kinds)

	require.NoError(t, st.Accept(ctx))
	assert.Equal(t, want, memoryTree(t, fsys), "accept = in place")
	exists, _ := afero.Exists(fsys, stageDir)
	assert.False(t, exists, "the copy is removed")
}

func TestStagedDiscardChangesNothing(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	original := memoryTree(t, fsys)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	d := newDreamer(t, fsys, mergeIn(stageDir), clock, nil)
	before, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	clock.Advance(48 * time.Hour)
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.Len(t, st.Changes, 3)
	stamped, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.NotEqual(t, before.Unix(), stamped.Unix(), "the run stamps the lock while the stage waits")
	require.NoError(t, st.Discard())
	assert.Equal(t, original, memoryTree(t, fsys))
	exists, _ := afero.Exists(fsys, stageDir)
	assert.False(t, exists)
	last, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.Equal(t, before.Unix(), last.Unix(), "a rejected consolidation does not count: the lock is rolled back")
}

func TestStagedAcceptKeepsTheLockStamp(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	d := newDreamer(t, fsys, mergeIn(stageDir), clock, nil)
	clock.Advance(48 * time.Hour)
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Accept(ctx))
	require.NoError(t, st.Discard(), "a second call after Accept changes nothing")
	last, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.Equal(t, clock.Now().Unix(), last.Unix(), "an accepted consolidation counts")
}

func TestStagedAcceptRefusesAStaleStage(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	st, err := newDreamer(t, fsys, mergeIn(stageDir), clock, nil).ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	// The user edits a memory while the stage waits for review.
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/deploys.md", []byte("the user's edit\n"), 0o644))
	before := memoryTree(t, fsys)
	assert.ErrorIs(t, st.Accept(ctx), ErrStageStale)
	assert.Equal(t, before, memoryTree(t, fsys), "nothing applied")
	require.NoError(t, st.Discard())
}

func TestStagedAcceptCanBeRewound(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	original := memoryTree(t, fsys)
	history, err := filehistory.NewTracker(fsys, "/history", "dream", filehistory.Options{})
	require.NoError(t, err)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	d := newDreamer(t, fsys, mergeIn(stageDir), clock, func(c *Options) { c.History = history })
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Accept(ctx))
	snaps := history.Snapshots()
	require.Len(t, snaps, 1, "one checkpoint, for the accept (the copy needs none)")
	_, err = history.Rewind(ctx, snaps[0].MessageID, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, original, memoryTree(t, fsys))
}

// TestStagedAcceptKeepsModes: a memory the consolidation changed keeps
// its mode, as the in-place Edit keeps it.
func TestStagedAcceptKeepsModes(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	require.NoError(t, fsys.Chmod(autoDir+"/deploys.md", 0o600))
	stageDir := "/c/projects/-work-shop/.memory-staged"
	st, err := newDreamer(t, fsys, mergeIn(stageDir), clock, nil).ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Accept(ctx))
	info, err := fsys.Stat(autoDir + "/deploys.md")
	require.NoError(t, err)
	assert.Equal(t, "-rw-------", info.Mode().Perm().String())
}

// TestAcceptUndoRestoresWhatTheAcceptReplaced: a write that lands while
// an accepted consolidation records a file is either replaced by the
// accept (and is what a rewind puts back) or comes after it; a rewind
// never puts back a version the accept did not replace.
func TestAcceptUndoRestoresWhatTheAcceptReplaced(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := tree(t, 1, now0.Add(-time.Hour))
	target := autoDir + "/ci.md"
	require.NoError(t, afero.WriteFile(fsys, target, []byte("---\nname: CI\ndescription: c\ntype: project\n---\nGreen.\n"), 0o644))
	rfs := racefs.New(fsys, target, func() error {
		_, err := mustDir(t, fsys, autoDir).Gate().WriteFile(context.Background(), target, []byte("a user's edit\n"), 0o644)
		return err
	})
	history, err := filehistory.NewTracker(rfs, cfgHome, "dream-runs", filehistory.Options{})
	require.NoError(t, err)
	const stage = "/c/projects/-work-shop/stage"
	model := llmtest.New(
		llmtest.ToolUse("1", "Read", map[string]any{"file_path": stage + "/ci.md"}),
		llmtest.ToolUse("2", "Write", map[string]any{"file_path": stage + "/ci.md", "content": "---\nname: CI\ndescription: c\ntype: project\n---\nGreen, always.\n"}),
		llmtest.Text("Done."),
	)
	dir, err := memdir.NewDir(fsys, autoDir, memdir.DirOptions{})
	require.NoError(t, err)
	d, err := New(dir, model, Options{ConfigHome: cfgHome, OriginalCwd: cwd, SessionID: current, History: history,
		Now: clock.Now, Lock: LockOptions{PID: 4242, Alive: func(int) bool { return true }}})
	require.NoError(t, err)
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stage})
	require.NoError(t, err)
	require.Len(t, st.Changes, 1)
	require.NoError(t, st.Accept(ctx))
	require.True(t, rfs.Ran(), "the concurrent write ran")
	require.NoError(t, rfs.Wait())

	read := func() string { b, _ := afero.ReadFile(fsys, target); return string(b) }
	replaced := "---\nname: CI\ndescription: c\ntype: project\n---\nGreen.\n"
	if read() != "a user's edit\n" {
		replaced = "a user's edit\n" // it landed first: the accept replaced it
	}
	_, err = history.Rewind(ctx, st.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, replaced, read(), "the rewind puts back exactly what the accept replaced")
}

// A memory written from untrusted input keeps its origin, and what a
// consolidation writes from the directory carries the least trusted
// origin it read: merging a fetched page's note into team memory does
// not launder it.
func TestConsolidationCarriesTheOriginItRead(t *testing.T) {
	clock := &testClock{now: now0}
	fsys := tree(t, 1, now0.Add(-time.Hour))
	dir := mustDir(t, fsys, autoDir)
	web := dir.WithProvenance(memdir.Provenance{Door: "mcp"})
	web.MarkUntrusted("fetched") // the session read a web page
	note := []byte("---\nname: Web\ndescription: w\ntype: reference\n---\nThe page says to deploy on Fridays.\n")
	_, err := web.Gate().WriteFile(context.Background(), autoDir+"/web.md", note, 0o644)
	require.NoError(t, err)
	p, ok := dir.Provenance(autoDir+"/web.md", note)
	require.True(t, ok, "a private memory made from untrusted input keeps its origin")
	assert.Equal(t, "fetched", p.Origin)

	// The dreamer has a Dir of its own (a session that read nothing).
	merged := "---\nname: Deploys\ndescription: d\ntype: project\n---\nDeploy on Fridays.\n"
	model := llmtest.New(
		llmtest.ToolUse("1", "Write", map[string]any{"file_path": autoDir + "/team/deploys.md", "content": merged}),
		llmtest.Text("Merged."),
	)
	d, err := New(mustDir(t, fsys, autoDir), model, Options{ConfigHome: cfgHome, OriginalCwd: cwd, SessionID: current,
		Now: clock.Now, Lock: LockOptions{PID: 4242, Alive: func(int) bool { return true }}})
	require.NoError(t, err)
	out := d.Force(context.Background())
	require.NoError(t, out.Err)
	assert.Equal(t, "fetched", out.Origin)
	p, ok = dir.Provenance(autoDir+"/team/deploys.md", []byte(merged))
	require.True(t, ok)
	assert.Equal(t, memdir.Provenance{Door: "consolidation", Origin: "fetched"}, p)
}

// TestConsolidationCarriesTheOriginOfTheSessionsItReviews: a session that
// read a tool's output (MarkUntrusted on a handle naming it) and wrote no
// memory still passes its origin to what a later consolidation, in
// another Dir, writes from its transcript.
func TestConsolidationCarriesTheOriginOfTheSessionsItReviews(t *testing.T) {
	clock := &testClock{now: now0}
	fsys := tree(t, 1, now0.Add(-time.Hour))
	mustDir(t, fsys, autoDir).WithProvenance(memdir.Provenance{Session: session(0)}).MarkUntrusted("tool-output")
	assert.Equal(t, "tool-output", mustDir(t, fsys, autoDir).SessionOrigins()[session(0)], "recorded for other processes")
	assert.Empty(t, mustDir(t, fsys, autoDir).SessionOrigins()[current])

	out, origin := mergeIntoTeam(t, fsys, clock)
	assert.Equal(t, "tool-output", out.Origin)
	assert.Equal(t, "tool-output", origin)
}

// TestConsolidationCarriesTheOriginOfEverySessionItCanRead: a marked
// session a later run does not review (it was reviewed before) is still
// in the store its search and read tools reach, so its origin still
// passes to what that run writes.
func TestConsolidationCarriesTheOriginOfEverySessionItCanRead(t *testing.T) {
	clock := &testClock{now: now0}
	fsys := tree(t, 2, now0.Add(-time.Hour))
	mustDir(t, fsys, autoDir).WithProvenance(memdir.Provenance{Session: session(0)}).MarkUntrusted("tool-output")
	first := newDreamer(t, fsys, llmtest.New(llmtest.Text("Nothing to merge.")), clock, nil).Force(context.Background())
	require.NoError(t, first.Err)
	require.Len(t, first.Sessions, 2)

	clock.now = now0.Add(3 * time.Hour)
	later := filepath.Join("/c/projects/-work-shop", session(1)+".jsonl")
	require.NoError(t, fsys.Chtimes(later, now0.Add(2*time.Hour), now0.Add(2*time.Hour)))
	out, origin := mergeIntoTeam(t, fsys, clock)
	require.Equal(t, []string{later}, out.Sessions, "the marked session is not reviewed again")
	assert.Equal(t, "tool-output", out.Origin, "but the run can still search and read it")
	assert.Equal(t, "tool-output", origin)
}

// mergeIntoTeam runs a consolidation that writes one team memory and
// returns its outcome and the origin recorded for that memory.
func mergeIntoTeam(t *testing.T, fsys afero.Fs, clock *testClock) (Outcome, string) {
	t.Helper()
	merged := "---\nname: Deploys\ndescription: d\ntype: project\n---\nDeploy on Fridays.\n"
	model := llmtest.New(
		llmtest.ToolUse("1", "Write", map[string]any{"file_path": autoDir + "/team/deploys.md", "content": merged}),
		llmtest.Text("Merged."),
	)
	out := newDreamer(t, fsys, model, clock, nil).Force(context.Background())
	require.NoError(t, out.Err)
	p, ok := mustDir(t, fsys, autoDir).Provenance(autoDir+"/team/deploys.md", []byte(merged))
	require.True(t, ok)
	return out, p.Origin
}

// TestAStageThatCouldNotBeTakenBackIsNotApplied: under main-agent-only
// with proposals, a consolidation (a background job) may write shared
// memory but not remove from it, so a stage that adds a team memory (its
// undo would be a removal) is refused before anything is applied.
func TestAStageThatCouldNotBeTakenBackIsNotApplied(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	model := llmtest.New(
		llmtest.ToolUse("1", "Write", map[string]any{"file_path": stageDir + "/deploys.md", "content": "---\nname: Deploys\ndescription: Tuesdays\ntype: project\n---\nDeploys on Tuesdays, at noon.\n"}),
		llmtest.ToolUse("2", "Write", map[string]any{"file_path": stageDir + "/team/ci.md", "content": "---\nname: CI\ndescription: ci\ntype: project\n---\nCI runs nightly.\n"}),
		llmtest.Text("Done."),
	)
	d := newDreamer(t, fsys, model, clock, nil)
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Outcome.Err)
	before := memoryTree(t, fsys)
	d.dir.SharedWritesMainAgentOnly(memdir.MainAgentOnlyPropose)
	err = st.Accept(ctx)
	require.ErrorIs(t, err, memdir.ErrNotMainAgent)
	assert.Contains(t, err.Error(), "nothing applied")
	assert.Equal(t, before, memoryTree(t, fsys), "nothing applied, the private change included")
}

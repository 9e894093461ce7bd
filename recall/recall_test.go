package recall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memTree writes memories with frontmatter and distinct mtimes, newest
// last in the list.
func memTree(t *testing.T, mems ...[3]string) (afero.Fs, string) {
	t.Helper()
	fsys := afero.NewMemMapFs()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, m := range mems {
		p := filepath.Join("/mem", m[0])
		require.NoError(t, afero.WriteFile(fsys, p, []byte("---\nname: "+strings.TrimSuffix(filepath.Base(m[0]), ".md")+"\ndescription: "+m[1]+"\n---\n\n"+m[2]+"\n"), 0o644))
		mt := base.Add(time.Duration(i) * time.Hour)
		require.NoError(t, fsys.Chtimes(p, mt, mt))
	}
	return fsys, "/mem"
}

func sampleTree(t *testing.T) (afero.Fs, string) {
	return memTree(t,
		[3]string{"testing_policy.md", "Integration tests hit the real database", "Never mock the database."},
		[3]string{"deploy.md", "Deploys happen on Tuesdays", "No Friday deploys."},
		[3]string{"team/ci.md", "CI must stay green", "Quarantine flaky tests in ci/quarantine.txt."},
		[3]string{"user_role.md", "Data scientist new to Go", "Explain Go idioms."},
	)
}

func TestFinderWithModelSelector(t *testing.T) {
	fsys, dir := sampleTree(t)
	var events []Event
	model := llmtest.New(llmtest.Text(`{"selected_memories":["deploy.md","ghost.md","deploy.md","team/ci.md"]}`))
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Selector: ModelSelector{Model: model}, Observer: func(e Event) { events = append(events, e) }})
	require.NoError(t, err)
	got := f.Find(context.Background(), "when can we deploy", map[string]bool{"/mem/user_role.md": true}, []string{"Bash"})
	require.Len(t, got, 2)
	assert.Equal(t, "deploy.md", got[0].Filename)
	assert.Equal(t, "team/ci.md", got[1].Filename)
	require.Len(t, events, 1)
	assert.Equal(t, Event{Selector: "model", Candidates: 3, Selected: 2, Dropped: 1, Duration: events[0].Duration}, events[0])

	req := model.Requests()[0]
	assert.Equal(t, llm.PurposeMemoryRelevance, req.Purpose)
	assert.Equal(t, 256, req.MaxTokens)
	assert.JSONEq(t, string(selectionSchema), string(req.OutputSchema))
	prompt := req.Messages[0].Text()
	assert.Contains(t, prompt, "when can we deploy")
	assert.Contains(t, prompt, "deploy.md")
	assert.NotContains(t, prompt, "user_role.md", "already surfaced memories are not offered")
	assert.Contains(t, prompt, "Recently used tools: Bash")
	assert.Contains(t, req.System, "at most 5")
}

func TestFinderNeverFails(t *testing.T) {
	fsys, dir := sampleTree(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := map[string]struct {
		model llm.Model
		ctx   context.Context
		want  error
	}{
		"malformed JSON":   {llmtest.New(llmtest.Text(`{"selected_memories": "deploy.md"`)), context.Background(), ErrMalformedSelection},
		"missing field":    {llmtest.New(llmtest.Text(`{"other": []}`)), context.Background(), ErrMalformedSelection},
		"model error":      {llmtest.New(llmtest.Fail(&llm.APIError{StatusCode: 529})), context.Background(), &llm.APIError{}},
		"cancelled":        {llmtest.New(llmtest.Text(`{"selected_memories":[]}`)), cancelled, context.Canceled},
		"no model at all":  {nil, context.Background(), llm.ErrNoModel},
		"empty selection":  {llmtest.New(llmtest.Text(`{"selected_memories":[]}`)), context.Background(), nil},
		"only ghost names": {llmtest.New(llmtest.Text(`{"selected_memories":["../../etc/passwd","nope.md"]}`)), context.Background(), nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var got []Event
			f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Selector: ModelSelector{Model: c.model}, Observer: func(e Event) { got = append(got, e) }})
			require.NoError(t, err)
			assert.Empty(t, f.Find(c.ctx, "when can we deploy", nil, nil))
			require.Len(t, got, 1, "every selection emits an event")
			assert.Equal(t, 0, got[0].Selected)
			switch want := c.want.(type) {
			case nil:
				assert.NoError(t, got[0].Err)
			case *llm.APIError:
				assert.ErrorAs(t, got[0].Err, &want)
			default:
				assert.ErrorIs(t, got[0].Err, want)
			}
		})
	}
	_, err := NewFinder(nil, FinderOptions{})
	assert.ErrorIs(t, err, ErrNoMemoryDir)
}

func TestFinderRelevanceOverEveryMemory(t *testing.T) {
	var mems [][3]string
	for i := 0; i < 250; i++ {
		mems = append(mems, [3]string{fmt.Sprintf("note_%03d.md", i), fmt.Sprintf("routine note number %d", i), "nothing special here"})
	}
	// The one relevant memory is the oldest: beyond the newest 200.
	mems = append([][3]string{{"kafka.md", "Kafka consumer lag alerts", "Consumer lag over 10k pages the on-call."}}, mems...)
	fsys, dir := memTree(t, mems...)

	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	got := f.Find(context.Background(), "why is kafka consumer lag paging", nil, nil)
	require.NotEmpty(t, got, "by default every memory is a candidate, however old")
	assert.Equal(t, "kafka.md", got[0].Filename)

	f, err = NewFinder(mustDir(fsys, dir), FinderOptions{Candidates: Newest})
	require.NoError(t, err)
	assert.Empty(t, f.Find(context.Background(), "why is kafka consumer lag paging", nil, nil), "Claude Code's rule: only the newest 200 are candidates")

	model := llmtest.New(llmtest.Text(`{"selected_memories":["kafka.md"]}`))
	f, err = NewFinder(mustDir(fsys, dir), FinderOptions{Selector: ModelSelector{Model: model}})
	require.NoError(t, err)
	got = f.Find(context.Background(), "why is kafka consumer lag paging", nil, nil)
	require.Len(t, got, 1)
	manifest := model.Requests()[0].Messages[0].Text()
	assert.Contains(t, manifest, "kafka.md")
	assert.Equal(t, MaxCandidates, strings.Count(manifest, "\n- "), "the model sees at most 200 candidates, the most relevant first")
}

// TestFinderIndexFollowsTheDirectory: the cached index sees new, changed
// and removed files, and a Find on an unchanged directory reads no file.
func TestFinderIndexFollowsTheDirectory(t *testing.T) {
	fsys, dir := sampleTree(t)
	counting := &countingFs{Fs: fsys}
	f, err := NewFinder(mustDir(counting, dir), FinderOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	names := func(q string) []string {
		var out []string
		for _, h := range f.Find(ctx, q, nil, nil) {
			out = append(out, h.Filename)
		}
		return out
	}
	assert.Equal(t, []string{"deploy.md"}, names("can we deploy on friday"))
	opened := counting.opens.Load()
	assert.Equal(t, []string{"deploy.md"}, names("can we deploy on friday"))
	assert.Equal(t, opened, counting.opens.Load(), "an unchanged directory is only walked and stat'ed")

	later := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, afero.WriteFile(fsys, "/mem/deploy.md", []byte("---\nname: deploy\ndescription: Releases go out on Wednesdays\n---\n\nThe release train leaves Wednesday.\n"), 0o644))
	require.NoError(t, fsys.Chtimes("/mem/deploy.md", later, later))
	require.NoError(t, afero.WriteFile(fsys, "/mem/team/kafka.md", []byte("---\nname: kafka\ndescription: Kafka consumer lag pages on-call\n---\n\nlag\n"), 0o644))
	require.NoError(t, fsys.Remove("/mem/testing_policy.md"))
	assert.Equal(t, []string{"deploy.md"}, names("when does the release train leave"))
	assert.Empty(t, names("fridays"), "the old text of a changed file is gone")
	assert.Equal(t, []string{"team/kafka.md"}, names("kafka consumer lag"))
	assert.Empty(t, names("mock the database"), "a removed file is gone")
	assert.Equal(t, int64(2), counting.opens.Load()-opened, "only the two new or changed files were read")
}

// countingFs counts the files (not directories) opened.
type countingFs struct {
	afero.Fs
	opens atomic.Int64
}

func (c *countingFs) Open(name string) (afero.File, error) {
	if strings.HasSuffix(name, ".md") {
		c.opens.Add(1)
	}
	return c.Fs.Open(name)
}

func TestSessionRules(t *testing.T) {
	fsys, dir := memTree(t,
		[3]string{"old.md", "Kafka consumer lag alerts", "Consumer lag over 10k pages the on-call."},
		[3]string{"long.md", "Kafka partition rebalancing notes", strings.Repeat("rebalance kafka partitions carefully\n", 400)},
		[3]string{"wide.md", "Kafka broker settings", strings.Repeat("é", 5000)},
	)
	now := time.Date(2026, 5, 20, 12, 0, 0, 0, time.UTC) // old.md is 19 days old
	// Three memories give BM25 too little to score against: no thresholds.
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Selector: NewLexicalSelector(fsys, LexicalOptions{MinStrength: 1e-9, MinRelative: 1e-9})})
	require.NoError(t, err)
	s := NewSession(f, SessionOptions{Now: func() time.Time { return now }})

	assert.Empty(t, s.Recall(context.Background(), "kafka", nil), "single-word messages are skipped")

	got := s.Recall(context.Background(), "kafka consumer lag partition broker", nil)
	require.Len(t, got, 3)
	byPath := map[string]Surfaced{}
	for _, g := range got {
		byPath[filepath.Base(g.Path)] = g
	}
	assert.Contains(t, byPath["old.md"].Header, "19 days ago")
	assert.True(t, strings.HasSuffix(byPath["old.md"].Header, "Memory: /mem/old.md:"))
	assert.True(t, strings.HasPrefix(byPath["old.md"].Text(), byPath["old.md"].Header+"\n\n---"))
	long := byPath["long.md"]
	assert.True(t, long.Truncated)
	assert.Contains(t, long.Content, "[Memory cut at 200 lines or 4096 bytes")
	assert.LessOrEqual(t, strings.Count(long.Content, "\n"), 203)
	wide := byPath["wide.md"]
	assert.True(t, wide.Truncated, "cut at the byte limit")
	body, _, _ := strings.Cut(wide.Content, "\n\n[Memory cut")
	assert.LessOrEqual(t, len(body), 4096)
	assert.True(t, strings.HasSuffix(body, "é"), "never splits a character")

	assert.Empty(t, s.Recall(context.Background(), "kafka consumer lag partition broker", nil), "never twice")
	s.Reset()
	s.MarkRead("/mem/old.md")
	got = s.Recall(context.Background(), "kafka consumer lag partition broker", nil)
	assert.Len(t, got, 2, "files read in the conversation are skipped")
}

func TestSessionBudget(t *testing.T) {
	var mems [][3]string
	for i := 0; i < 30; i++ {
		mems = append(mems, [3]string{fmt.Sprintf("k%02d.md", i), "kafka consumer notes", strings.Repeat("kafka consumer detail\n", 300)})
	}
	fsys, dir := memTree(t, mems...)
	// Every memory matches equally, so no score threshold: only the budget stops.
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Selector: NewLexicalSelector(fsys, LexicalOptions{MinStrength: 1e-9, MinRelative: 1e-9})})
	require.NoError(t, err)
	s := NewSession(f, SessionOptions{BudgetBytes: 10_000})
	total := 0
	for i := 0; i < 10; i++ {
		for _, g := range s.Recall(context.Background(), "kafka consumer detail", nil) {
			total += len(g.Content)
		}
	}
	assert.GreaterOrEqual(t, s.Spent(), 10_000)
	assert.Less(t, s.Spent(), 10_000+5000, "stops once the budget is spent")
	assert.Equal(t, total, s.Spent())
	assert.Empty(t, s.Recall(context.Background(), "kafka consumer detail", nil))
}

func TestRecentTools(t *testing.T) {
	use := func(id, name string) llm.Block { return llm.ToolUseBlock(id, name, nil) }
	res := func(id string, isErr bool) llm.Block { return llm.ToolResultBlock(id, "r", isErr) }
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("first question")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{use("0", "Old")}},
		{Role: llm.RoleUser, Content: []llm.Block{res("0", false)}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("now this")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{use("1", "Bash"), use("2", "Grep"), use("3", "Read")}},
		{Role: llm.RoleUser, Content: []llm.Block{res("1", false), res("2", false), res("3", true)}},
		{Role: llm.RoleAssistant, Content: []llm.Block{use("4", "Grep"), use("5", "Edit")}},
		{Role: llm.RoleUser, Content: []llm.Block{res("4", true), res("5", false), res("99", false)}},
	}
	assert.Equal(t, []string{"Bash", "Edit"}, RecentTools(msgs))
	assert.Empty(t, RecentTools(nil))
}

func TestLexicalSelectorThresholds(t *testing.T) {
	var mems [][3]string
	for i := 0; i < 40; i++ {
		mems = append(mems, [3]string{fmt.Sprintf("filler_%02d.md", i), fmt.Sprintf("filler topic %d about shipping", i), "general notes on shipping and packaging"})
	}
	mems = append(mems,
		[3]string{"stripe_refunds.md", "Refunds go through the refunds service, never Stripe directly", "Stripe refunds must use the refunds service."},
		[3]string{"stripe_keys.md", "Stripe keys", "keys rotate"},
		[3]string{"poetry.md", "The sea", "Notes on a poem."},
	)
	fsys, dir := memTree(t, mems...)
	headers, err := memdir.ScanMemoryFiles(context.Background(), fsys, dir, memdir.ScanOptions{})
	require.NoError(t, err)
	sel := NewLexicalSelector(fsys, LexicalOptions{})
	got, err := sel.Select(context.Background(), SelectRequest{Query: "how do I issue stripe refunds", Candidates: headers, Max: 5})
	require.NoError(t, err)
	assert.Equal(t, []string{"stripe_refunds.md", "stripe_keys.md"}, got, "the clear answer first, a related one after")
	got, err = sel.Select(context.Background(), SelectRequest{Query: "thanks, that looks good", Candidates: headers, Max: 5})
	require.NoError(t, err)
	assert.Empty(t, got, "no word in common: nothing")
	got, err = sel.Select(context.Background(), SelectRequest{Query: "can you translate this sentence to Spanish, it describes the weather at sea", Candidates: headers, Max: 5})
	require.NoError(t, err)
	assert.Empty(t, got, "one weak incidental word in common: nothing")
	strict := NewLexicalSelector(fsys, LexicalOptions{MinRelative: 0.9})
	got, err = strict.Select(context.Background(), SelectRequest{Query: "how do I issue stripe refunds", Candidates: headers, Max: 5})
	require.NoError(t, err)
	assert.Equal(t, []string{"stripe_refunds.md"}, got, "a high relative cut keeps only the best")
}

func TestAbstainRules(t *testing.T) {
	o := LexicalOptions{}
	assert.True(t, o.Abstain(lexical.Hit{Matched: 1, Strength: 0.5, Shared: 2}, 150), "one weak incidental word")
	assert.False(t, o.Abstain(lexical.Hit{Matched: 1, Strength: 0.9, Shared: 1}, 150), "one strong distinctive word")
	assert.False(t, o.Abstain(lexical.Hit{Matched: 2, Strength: 0.2, Shared: 40}, 150), "two words of the query")
	assert.False(t, o.Abstain(lexical.Hit{Matched: 1, Strength: 0.1, Shared: 100}, 215), "the subject of the directory (a person it is about)")
	assert.True(t, o.Abstain(lexical.Hit{Matched: 1, Strength: 0.3, Shared: 100}, 20_000), "100 of 20,000 is no subject")
}

func TestLexicalDefaultsOnATinyDirectory(t *testing.T) {
	// Absolute BM25 scores are small with two memories; the size-free
	// strength still finds the right one and nothing for small talk.
	fsys, dir := memTree(t,
		[3]string{"testing_policy.md", "Integration tests hit the real database, never mocks", "Use the testdb helper."},
		[3]string{"deploy_days.md", "Deploys happen on Tuesdays and Thursdays", "No Friday deploys."},
	)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	got := f.Find(context.Background(), "can we deploy on friday?", nil, nil)
	require.Len(t, got, 1)
	assert.Equal(t, "deploy_days.md", got[0].Filename)
	assert.Empty(t, f.Find(context.Background(), "thanks, that looks good", nil, nil))
}

// mustDir is the memory directory at dir on fsys, as a host opens it.
func mustDir(fsys afero.Fs, dir string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{})
	if err != nil {
		panic(err)
	}
	return d
}

// diskTree writes memories on the real disk and backdates every file and
// folder by an hour, so their mtimes are settled (older than the racy
// window) as on a directory nobody touched lately.
func diskTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(memoryText(rel, body)), 0o644))
	}
	backdate(t, dir)
	return dir
}

func memoryText(name, body string) string {
	return "---\nname: " + name + "\ndescription: " + body + "\ntype: project\n---\n\n" + body + "\n"
}

// backdate sets every mtime below dir (dir included) to one fixed time
// long past.
func backdate(t *testing.T, dir string) {
	t.Helper()
	old := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
}

func names(f *Finder, query string) []string {
	var out []string
	for _, h := range f.Find(context.Background(), query, nil, nil) {
		out = append(out, h.Filename)
	}
	return out
}

// TestFinderSeesChangesWithoutAFullWalk: on the real disk a Find after a
// file is added, removed or renamed (its folder's mtime moved), or after a
// new subfolder, sees the change at once; an edit in place is seen through
// the change notice.
func TestFinderSeesChangesWithoutAFullWalk(t *testing.T) {
	dir := diskTree(t, map[string]string{
		"deploy.md":       "deploys happen on tuesday",
		"team/oncall.md":  "the pager moves weekly",
		"team/grafana.md": "dashboards live in grafana",
	})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))

	// Added: the folder's mtime moves.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team", "kafka.md"), []byte(memoryText("kafka", "kafka consumer lag alerts")), 0o644))
	assert.Equal(t, []string{"team/kafka.md"}, names(f, "kafka consumer lag"))

	// A new subfolder: its parent's mtime moves.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "team", "infra"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team", "infra", "vault.md"), []byte(memoryText("vault", "vault secret storage")), 0o644))
	assert.Equal(t, []string{"team/infra/vault.md"}, names(f, "vault secret storage"))

	// Removed and renamed.
	require.NoError(t, os.Remove(filepath.Join(dir, "team", "grafana.md")))
	assert.Empty(t, names(f, "grafana dashboards"))
	require.NoError(t, os.Rename(filepath.Join(dir, "team", "oncall.md"), filepath.Join(dir, "pager.md")))
	assert.Equal(t, []string{"pager.md"}, names(f, "pager moves weekly"))

	// Edited in place, with every folder settled again: only the change
	// notice tells.
	backdate(t, dir)
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.md"), []byte(memoryText("deploy.md", "releases ship on thursday now")), 0o644))
	eventuallyFinds(t, f, "releases ship thursday", "deploy.md", "an edit in place is seen through its change notice")
}

// TestFinderSkipsTheWalkAndWalksOnSchedule: with every folder settled and
// no notice, Find reads nothing (a change hidden from both is not seen),
// and the periodic full walk finds it.
func TestFinderSkipsTheWalkAndWalksOnSchedule(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: 300 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, f.Close()) // no more notices
	require.NoError(t, f.Close(), "a second Close does nothing")

	// A change that neither moves a folder nor sends a notice.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.md"), []byte(memoryText("deploy.md", "releases ship on thursday now")), 0o644))
	backdate(t, dir)
	assert.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"), "no walk: the old text is still indexed")
	eventuallyFinds(t, f, "releases ship thursday", "deploy.md", "the periodic full walk finds it")
}

// TestFinderRacyFolder: a folder whose mtime is within the racy window is
// walked on every Find, so a change in the same clock tick is not missed.
func TestFinderRacyFolder(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	require.NoError(t, f.Close()) // no notices: only the folders tell
	now := time.Now()
	require.NoError(t, os.Chtimes(dir, now, now))
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	// Add a file and put the folder's mtime back where the last Find saw
	// it, as a change within one clock tick would leave it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kafka.md"), []byte(memoryText("kafka", "kafka consumer lag alerts")), 0o644))
	require.NoError(t, os.Chtimes(dir, now, now))
	assert.Equal(t, []string{"kafka.md"}, names(f, "kafka consumer lag"))
}

// TestFinderOnMemMapFsWalksEveryTime: another filesystem gives no notices
// and its folders' mtimes do not move, so every Find walks.
func TestFinderOnMemMapFsWalksEveryTime(t *testing.T) {
	fsys, dir := sampleTree(t)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "deploys tuesdays"))
	require.NoError(t, afero.WriteFile(fsys, "/mem/deploy.md", []byte(memoryText("deploy.md", "releases ship thursday")), 0o644))
	assert.Equal(t, []string{"deploy.md"}, names(f, "releases ship thursday"))
}

// TestFinderSeesADirectoryReplaced: the memory directory removed and made
// again (a restore, a sync that swaps folders) is read anew, even when
// its mtime is set back to the old one.
func TestFinderSeesADirectoryReplaced(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, os.RemoveAll(dir))
	assert.Empty(t, names(f, "when do deploys happen"), "gone")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kafka.md"), []byte(memoryText("kafka", "kafka consumer lag alerts")), 0o644))
	backdate(t, dir)
	assert.Equal(t, []string{"kafka.md"}, names(f, "kafka consumer lag"), "the new directory is read")

	// Replaced between two Finds, the new one's mtime set to the old one's.
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vault.md"), []byte(memoryText("vault", "vault secret storage")), 0o644))
	backdate(t, dir)
	eventuallyFinds(t, f, "vault secret storage", "vault.md", "found")
}

// TestAnUnclosedFinderReleasesItsWatcher: a Finder dropped without Close
// stops its watcher once it is collected.
func TestAnUnclosedFinderReleasesItsWatcher(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	var d *changeDetector // held past the Finder, which it does not reach
	func() {
		f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
		require.NoError(t, err)
		require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen")) // starts the watcher
		d = f.corpus.changes
	}()
	released := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.closed && d.watcher == nil
	}
	require.False(t, released(), "the watcher runs while the Finder is in use")
	require.Eventually(t, func() bool {
		runtime.GC()
		return released()
	}, 5*time.Second, 20*time.Millisecond, "the watcher is closed once the Finder is collected")
	d.loop.Wait() // and its goroutine has ended
}

// TestACancelledWalkKeepsTheNotice: a change notice that a Find's walk
// was cancelled before acting on is still acted on by the next Find.
func TestACancelledWalkKeepsTheNotice(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.md"), []byte(memoryText("deploy.md", "releases ship on thursday now")), 0o644))
	backdate(t, dir)
	require.Eventually(t, f.corpus.changes.dirty.Load, 5*time.Second, 5*time.Millisecond, "the notice arrives")

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Empty(t, f.Find(cancelled, "releases ship thursday", nil, nil), "a cancelled Find finds nothing")
	assert.Equal(t, []string{"deploy.md"}, names(f, "releases ship thursday"), "the next Find walks")
}

// eventuallyFinds waits (up to 5 s) for query to find exactly want: what
// a change notice or a scheduled walk brings is not there at once.
func eventuallyFinds(t *testing.T, f *Finder, query, want, msg string) {
	t.Helper()
	assert.Eventually(t, func() bool {
		got := names(f, query)
		return len(got) == 1 && got[0] == want
	}, 5*time.Second, 10*time.Millisecond, msg)
}

func sims(vals ...float64) []scored {
	out := make([]scored, len(vals))
	for i, v := range vals {
		out[i] = scored{fmt.Sprintf("m%03d", i), v}
	}
	return out
}

// TestVectorsAbstainWhenSimilaritiesDoNotSeparate: equal similarities
// (an embedder giving one vector, or the zero vector, to every text) find
// nothing; noise finds something on about falseAlarm of the messages; a
// memory that stands out is found, with a confidence below 1 that grows
// with how far it stands out.
func TestVectorsAbstainWhenSimilaritiesDoNotSeparate(t *testing.T) {
	assert.Nil(t, confident(sims(0, 0, 0, 0, 0, 0, 0, 0), 0, nil, falseAlarm), "all zero")
	assert.Nil(t, confident(sims(0.3, 0.3, 0.3, 0.3, 0.3), 0, nil, falseAlarm), "all equal")
	assert.Nil(t, confident(sims(0.9), 0, nil, falseAlarm), "one memory cannot stand out")
	assert.Nil(t, confident(sims(0.9, 0.1, 0.1), 0, nil, falseAlarm), "nor one of three")

	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{20, 200, 2000} {
		alarms := 0
		const trials = 400
		for range trials {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = 0.2 + 0.05*r.NormFloat64()
			}
			if confident(sims(vals...), 0, nil, falseAlarm) != nil {
				alarms++
			}
		}
		assert.LessOrEqual(t, alarms, trials*4/100, "noise over %d memories: found something on %d of %d messages (falseAlarm is 1%%)", n, alarms, trials)
	}

	vals := make([]float64, 200)
	for i := range vals {
		vals[i] = 0.2 + 0.05*r.NormFloat64()
	}
	vals[7], vals[9] = 0.8, 0.5
	got := confident(sims(vals...), 0, nil, falseAlarm)
	require.Len(t, got, 2)
	assert.Greater(t, got["m007"], got["m009"])
	assert.Less(t, got["m007"], 1.0)
	assert.Greater(t, got["m009"], 0.0)
	assert.Len(t, confident(sims(vals...), 0.6, nil, falseAlarm), 1, "MinSimilarity is a floor besides the statistic")
}

// TestVectorsCountOnlyWhatWordsDoNotExplain: an embedder that follows
// the words (its similarity rises with the word score) finds nothing
// words found already; a memory it finds beyond what its words explain,
// and one words did not find, are still found.
func TestVectorsCountOnlyWhatWordsDoNotExplain(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var all []scored
	words := map[string]float64{}
	for i := range 400 {
		key := fmt.Sprintf("m%03d", i)
		sim := 0.2 + 0.02*r.NormFloat64()
		if i < 40 { // found by words, from 1 down to 0.1
			words[key] = 1 - float64(i)/44
			sim += 0.5 * words[key]
		}
		all = append(all, scored{key, sim})
	}
	all[30].score += 0.4 // a weak word match meaning finds beyond its words
	all[200].score = 0.8 // words missed it
	raw := confident(all, 0, nil, falseAlarm)
	assert.Contains(t, raw, "m000", "without the word scores the best word match stands out")
	assert.Greater(t, len(raw), 10)
	got := confident(all, 0, words, falseAlarm)
	assert.Equal(t, []string{"m030", "m200"}, slices.Sorted(maps.Keys(got)))

	flat := map[string]float64{}
	for i := range 40 {
		flat[fmt.Sprintf("m%03d", i+100)] = 0.5 // words that say nothing of these similarities
	}
	assert.Equal(t, raw, confident(all, 0, flat, falseAlarm), "a line that does not rise takes nothing")
}

func hits(scores ...float64) []lexical.Hit {
	out := make([]lexical.Hit, len(scores))
	for i, s := range scores {
		out[i] = lexical.Hit{Key: fmt.Sprintf("w%d", i), Score: s}
	}
	return out
}

func keys(ss []scored) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.key
	}
	return out
}

// TestWeighKeepsWhatWordsFound: with nothing found by meaning the
// selection is the lexical one as it is; a memory found by meaning takes
// the place of a word match it beats, never the best word match, and
// reorders the matches words found too.
func TestWeighKeepsWhatWordsFound(t *testing.T) {
	pool := hits(10, 9, 8, 6, 5, 4, 1)
	_, ranked, _ := weigh(pool, nil, 0.2, 1, 5)
	assert.Equal(t, []string{"w0", "w1", "w2", "w3", "w4"}, keys(ranked), "words alone")

	_, ranked, _ = weigh(pool, map[string]float64{"v": 0.55}, 0.2, 1, 5)
	assert.Equal(t, []string{"w0", "w1", "w2", "w3", "v"}, keys(ranked), "in for the weakest word match it beats (0.5 < 0.55)")

	_, ranked, _ = weigh(pool, map[string]float64{"v": 0.3}, 0.2, 1, 5)
	assert.Equal(t, []string{"w0", "w1", "w2", "w3", "w4"}, keys(ranked), "less sure than words: nothing moves")

	_, ranked, _ = weigh(pool, map[string]float64{"w4": 0.9}, 0.2, 1, 5)
	assert.Equal(t, []string{"w4", "w0", "w1", "w2", "w3"}, keys(ranked), "found by both: first")

	found := map[string]float64{"a": 0.99, "b": 0.99, "c": 0.99, "d": 0.99, "e": 0.99}
	_, ranked, _ = weigh(pool, found, 0.2, 10, 5)
	assert.Contains(t, keys(ranked), "w0", "the best word match stays whatever the weight")
	assert.Len(t, ranked, 5)

	_, ranked, _ = weigh(nil, map[string]float64{"v": 0.1}, 0.2, 1, 5)
	assert.Equal(t, []string{"v"}, keys(ranked), "words found nothing: meaning answers")
}

// knowsNothing are embedders whose similarities say nothing.
func knowsNothing(t *testing.T) map[string]Embedder {
	out := map[string]Embedder{}
	for _, n := range []string{"zero", "random"} {
		e, err := ControlEmbedder(n)
		require.NoError(t, err)
		out[n] = e
	}
	out["constant"] = EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		v := make([][]float32, len(texts))
		for i := range v {
			v[i] = []float32{1, 2, 3}
		}
		return v, nil
	})
	return out
}

// TestAnEmbedderThatKnowsNothingChangesNothing: with the zero, a random
// or a constant embedder every selection is the lexical one, superseding
// included: a newer memory on the same subject that words did not find
// does not come in through the vectors.
func TestAnEmbedderThatKnowsNothingChangesNothing(t *testing.T) {
	mems := [][3]string{
		{"deploy-window.md", "the deploy window is tuesday afternoon", "Ask Priya about exceptions."},
		{"deploy-window-moved.md", "the deploy window moved to thursday afternoon", "Since the freeze."},
	}
	for i := range 40 {
		mems = append(mems, [3]string{fmt.Sprintf("note%02d.md", i), fmt.Sprintf("note %d on %s", i, benchWords[i%len(benchWords)]), benchWords[(i*7)%len(benchWords)] + " and " + benchWords[(i*3)%len(benchWords)]})
	}
	fsys, dir := memTree(t, mems...)
	words, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	queries := []string{"ask priya about exceptions", "is the deploy window still tuesday", "postgres migration", "kafka lag and redis", "thanks!"}
	assert.Equal(t, []string{"deploy-window-moved.md", "deploy-window.md"}, names(words, queries[0]), "words find the older memory, and its newer value comes first")
	for name, e := range knowsNothing(t) {
		var events []Event
		f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: e, Observer: func(ev Event) { events = append(events, ev) }})
		require.NoError(t, err)
		for _, q := range queries {
			assert.Equal(t, names(words, q), names(f, q), "%s: %q", name, q)
			assert.Zero(t, events[len(events)-1].VectorMatches, name)
		}
	}
}

// TestCompareEmbedder: an embedder that knows synonyms raises recall,
// one that knows nothing leaves it as it is and abstains; labels that do
// not fit are refused.
func TestCompareEmbedder(t *testing.T) {
	mems := [][3]string{
		{"p1/car.md", "Priya bought a used sedan", "A blue sedan, bought in March."},
		{"p1/doctor.md", "Omar's new physician", "Dr. Lee at the Elm Street practice."},
		{"p2/trip.md", "vacation plans", "Two weeks in Lisbon in June."},
		{"p2/pay.md", "the salary review", "A raise in April."},
	}
	for i := range 12 {
		mems = append(mems, [3]string{fmt.Sprintf("p%d/note%02d.md", 1+i%2, i), fmt.Sprintf("note %d on %s", i, benchWords[i]), benchWords[i+20]})
	}
	fsys, dir := memTree(t, mems...)
	questions := []Question{
		{Query: "which automobile did she get", Needs: []string{"p1/car.md"}},
		{Query: "who is the doctor now", Needs: []string{"p1/doctor.md"}},
		{Query: "vacation plans for summer", Needs: []string{"p2/trip.md"}},
		{Query: "how much is the wage now", Needs: []string{"p2/pay.md"}},
		{Query: "thanks!"},
	}
	ctx := context.Background()
	for _, per := range []bool{false, true} {
		c, err := CompareEmbedder(ctx, CompareRequest{Dir: mustDir(fsys, dir), Questions: questions, Embedder: &fakeEmbedder{}, PerFolder: per})
		require.NoError(t, err)
		// In a folder of eight memories one shared word is an answer
		// ("doctor"); among sixteen it is not.
		words, better := 0.25, 3
		if per {
			words, better = 0.5, 2
		}
		assert.Equal(t, EmbedderComparison{K: 5, Questions: 4, Skipped: 1, WordsRecall: words, HybridRecall: 1, Better: better, Abstained: c.Abstained}, c, "per folder %v", per)
		assert.InDelta(t, 1-words, c.Gain(), 1e-9)

		zero, _ := ControlEmbedder("zero")
		c, err = CompareEmbedder(ctx, CompareRequest{Dir: mustDir(fsys, dir), Questions: questions, Embedder: zero, PerFolder: per})
		require.NoError(t, err)
		assert.Equal(t, EmbedderComparison{K: 5, Questions: 4, Skipped: 1, WordsRecall: words, HybridRecall: words, Abstained: 4}, c)
	}

	bad := map[string]struct {
		req  CompareRequest
		want error
	}{
		"no embedder":    {CompareRequest{Dir: mustDir(fsys, dir), Questions: questions}, ErrNoEmbedder},
		"no directory":   {CompareRequest{Questions: questions, Embedder: &fakeEmbedder{}}, ErrNoMemoryDir},
		"no labels":      {CompareRequest{Dir: mustDir(fsys, dir), Questions: questions[4:], Embedder: &fakeEmbedder{}}, ErrBadLabels},
		"missing file":   {CompareRequest{Dir: mustDir(fsys, dir), Questions: []Question{{Query: "q", Needs: []string{"p1/gone.md"}}}, Embedder: &fakeEmbedder{}}, ErrBadLabels},
		"across folders": {CompareRequest{Dir: mustDir(fsys, dir), Questions: []Question{{Query: "q", Needs: []string{"p1/car.md", "p2/trip.md"}}}, Embedder: &fakeEmbedder{}, PerFolder: true}, ErrBadLabels},
		"failing":        {CompareRequest{Dir: mustDir(fsys, dir), Questions: questions, Embedder: EmbedderFunc(func(context.Context, []string) ([][]float32, error) { return nil, errors.New("down") })}, ErrEmbedding},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := CompareEmbedder(ctx, tc.req)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// TestControlEmbedders: each control is deterministic and gives one
// vector per text; an unknown name is refused.
func TestControlEmbedders(t *testing.T) {
	for _, n := range ControlEmbedderNames() {
		e, err := ControlEmbedder(n)
		require.NoError(t, err)
		a, err := e.Embed(context.Background(), []string{"the deploy window", "a sedan", ""})
		require.NoError(t, err)
		b, _ := e.Embed(context.Background(), []string{"the deploy window"})
		require.Len(t, a, 3, n)
		assert.Equal(t, a[0], b[0], n)
		assert.Len(t, a[1], len(a[0]), n)
	}
	_, err := ControlEmbedder("bert")
	assert.ErrorIs(t, err, ErrUnknownControl)
}

// TestTheBestWordMatchStays: memories found by meaning, given a large
// weight, bring a newer memory on their subject in; the best word match
// still stays in the selection.
func TestTheBestWordMatchStays(t *testing.T) {
	mems := [][3]string{
		{"best.md", "the deploy window is friday", "Deploy in the window."},
		{"zebra-stripes-a.md", "the zebra stripes are black afternoon", "Stripes."},
		{"zebra-stripes-b.md", "the zebra stripes moved to white afternoon", "Stripes, newer."},
	}
	for i := range 10 {
		mems = append(mems, [3]string{fmt.Sprintf("note%02d.md", i), fmt.Sprintf("note %d on the build cache", i), "Cache keys."})
	}
	fsys, dir := memTree(t, mems...)
	near := EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, text := range texts {
			out[i] = append([]float32{0, 1}, textNoise(text, 16, 0.05)...)
			if text == "deploy window friday" || strings.Contains(text, "zebra") {
				out[i][0], out[i][1] = 1, 0
			}
		}
		return out, nil
	})
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: near, VectorWeight: 5, MaxSelected: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"zebra-stripes-b.md", "best.md"}, names(f, "deploy window friday"))
}

// TestNewerValueRanksFirst: two memories on one subject with different
// values: the newer ranks first, even when the older's wording matches the
// message better; memories of another subject are left as they are.
func TestNewerValueRanksFirst(t *testing.T) {
	fsys, dir := memTree(t,
		[3]string{"deploy-window.md", "the deploy window is tuesday afternoon", "We deploy in the tuesday afternoon window."},
		[3]string{"oncall.md", "the pager rotates weekly", "Four engineers share the pager."},
		[3]string{"deploy-window-moved.md", "the deploy window moved to thursday afternoon", "Since the freeze we deploy thursdays."},
	)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	got := names(f, "is the deploy window still tuesday afternoon?")
	require.NotEmpty(t, got)
	assert.Equal(t, "deploy-window-moved.md", got[0], "the newer value first")
	assert.Contains(t, got, "deploy-window.md", "the older stays in the selection")
}

// TestLinkedNeighboursFillFreeSlots: a chosen memory's [[name]] neighbour
// joins when it scores for the message (here below the relative cut, so
// without the link it stays out), never one that does not score.
func TestLinkedNeighboursFillFreeSlots(t *testing.T) {
	find := func(links string) []string {
		fsys := afero.NewMemMapFs()
		write := func(file, name, desc, body string) {
			require.NoError(t, afero.WriteFile(fsys, "/mem/"+file, []byte("---\nname: "+name+"\ndescription: "+desc+"\ntype: project\n---\n\n"+body+"\n"), 0o644))
		}
		write("release.md", "release-process", "how a release is cut, tagged and shipped", "Cut the release branch, tag it, ship it. "+links)
		write("canary.md", "canary-checks", "what to watch while a canary runs", "Watch the error rates of a release before promoting it.")
		write("lunch.md", "lunch-menu", "what the team orders for lunch", "Tacos on Fridays.")
		for i := range 12 {
			write("other"+strings.Repeat("x", i)+".md", "other", "notes on the build cache "+strings.Repeat("z", i), "Cache keys and eviction.")
		}
		f, err := NewFinder(mustDir(fsys, "/mem"), FinderOptions{})
		require.NoError(t, err)
		return names(f, "how is a release cut, tagged and shipped")
	}
	without := find("")
	require.Equal(t, []string{"release.md"}, without, "the neighbour scores below the cut on its own")
	with := find("See [[Canary-Checks]] and [[lunch-menu]].") // links match names case-folded
	assert.Equal(t, []string{"release.md", "canary.md"}, with, "the linked neighbour that scores joins; the one that does not stays out")
}

// fakeEmbedder maps each text to a vector of concept counts: words of one
// concept ("car", "automobile", "vehicle") count for the same axis, as an
// embedding model's would.
type fakeEmbedder struct {
	calls, texts atomic.Int32
	fail         atomic.Bool
}

var concepts = [][]string{
	{"car", "automobile", "vehicle", "sedan"},
	{"physician", "doctor", "gp", "clinic"},
	{"holiday", "vacation", "trip", "getaway"},
	{"salary", "pay", "wage", "raise"},
}

func (e *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.texts.Add(int32(len(texts)))
	if e.fail.Load() {
		return nil, errors.New("embedding service down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		// Like a real model's, every text's vector is its own (a little
		// of it drawn from the text), so texts that share no concept are
		// alike by chance only, not all equally.
		v := append(make([]float32, len(concepts)), textNoise(t, 16, 0.05)...)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return r < 'a' || r > 'z' }) {
			for c, words := range concepts {
				for _, cw := range words {
					if w == cw {
						v[c]++
					}
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

// textNoise is dims normal draws seeded by text, times scale: the part of
// a test embedder's vector that makes each text its own.
func textNoise(text string, dims int, scale float32) []float32 {
	g := gaussian(sha256.Sum256([]byte(text)))[:dims]
	for i := range g {
		g[i] *= scale
	}
	return g
}

// otherWordsTree is five memories whose subjects a message may name by
// other words (a car for a sedan, a doctor for a physician).
func otherWordsTree(t *testing.T) (afero.Fs, string) {
	return memTree(t,
		[3]string{"car.md", "Priya bought a used sedan", "A blue sedan, bought in March."},
		[3]string{"doctor.md", "Omar's new physician", "Dr. Lee at the Elm Street practice."},
		[3]string{"trip.md", "vacation plans", "Two weeks in Lisbon in June."},
		[3]string{"lunch.md", "what the team orders for lunch", "Tacos on Fridays."},
		[3]string{"build.md", "the build cache", "Cache keys and eviction."},
	)
}

// TestHybridRecallFindsOtherWords: with an Embedder a message that names a
// memory's subject by another word finds it; each memory is embedded once
// (cached by content), in batches; without one, or when it fails, recall
// is the lexical one.
func TestHybridRecallFindsOtherWords(t *testing.T) {
	fsys, dir := otherWordsTree(t)
	lexicalOnly, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	assert.Empty(t, names(lexicalOnly, "which automobile did she get"), "no shared word: nothing by words alone")

	emb := &fakeEmbedder{}
	var events []Event
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: emb, Observer: func(e Event) { events = append(events, e) }})
	require.NoError(t, err)
	assert.Equal(t, []string{"car.md"}, names(f, "which automobile did she get"))
	assert.Equal(t, []string{"doctor.md"}, names(f, "who is the doctor now"))
	assert.Equal(t, []string{"trip.md"}, names(f, "vacation plans for summer"), "a word match still counts")
	meaning := int32(2 * len(meaningPairs))
	assert.Equal(t, 5+3+meaning, emb.texts.Load(), "five memories embedded once, plus one text per message and the test of meaning once")

	// A changed memory is embedded again, the others are not.
	require.NoError(t, afero.WriteFile(fsys, "/mem/car.md", []byte("---\nname: car\ndescription: Priya sold the sedan\n---\n\nSold in May.\n"), 0o644))
	names(f, "which automobile")
	assert.Equal(t, 8+2+meaning, emb.texts.Load())

	// A failing embedder: words alone, and the event says why.
	emb.fail.Store(true)
	assert.Equal(t, []string{"trip.md"}, names(f, "vacation plans for summer"))
	require.ErrorIs(t, events[len(events)-1].EmbedErr, ErrEmbedding)
	assert.NoError(t, events[len(events)-1].Err)
}

// TestEmbedderAnswersAreChecked: a wrong count, mixed lengths, NaN or an
// infinity are an embedding failure, not a panic or a wrong ranking.
func TestEmbedderAnswersAreChecked(t *testing.T) {
	for name, e := range map[string]EmbedderFunc{
		"too few": func(_ context.Context, texts []string) ([][]float32, error) { return [][]float32{{1}}, nil },
		"lengths": func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = make([]float32, 1+i)
			}
			return out, nil
		},
		"empty": func(_ context.Context, texts []string) ([][]float32, error) {
			return make([][]float32, len(texts)), nil
		},
		"NaN": func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = []float32{1, float32(math.NaN())}
			}
			return out, nil
		},
		"infinity": func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = []float32{float32(math.Inf(1)), 0}
			}
			return out, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := embedAll(context.Background(), e, []string{"a", "b", "c"})
			assert.ErrorIs(t, err, ErrEmbedding)
		})
	}
}

// TestEmbedBatches: Embed never gets more than embedBatch texts.
func TestEmbedBatches(t *testing.T) {
	var most int
	e := EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		most = max(most, len(texts))
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = []float32{1, 0}
		}
		return out, nil
	})
	texts := make([]string, 3*embedBatch+5)
	got, err := embedAll(context.Background(), e, texts)
	require.NoError(t, err)
	assert.Len(t, got, len(texts))
	assert.Equal(t, embedBatch, most)
}

// TestANameOnlyOneMemoryHoldsIsAnAnswer: a message whose only match is a
// name that one memory alone holds gets that memory, while a lone weak
// word that is no name still gets nothing.
func TestANameOnlyOneMemoryHoldsIsAnAnswer(t *testing.T) {
	mems := [][3]string{{"partner.md", "Ingrid's partner Freya works as a pilot", "Freya flies long haul."}}
	for i := range 40 {
		mems = append(mems, [3]string{fmt.Sprintf("m%02d.md", i), fmt.Sprintf("note %d on the build cache", i), "Cache keys and eviction."})
	}
	fsys, dir := memTree(t, mems...)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"partner.md"}, names(f, "What is Freya's occupation?"))
	assert.Empty(t, names(f, "what does a pilot earn"), "one weak word that is no name: nothing")
}

// TestQuantizedCosine: int8 vectors keep the cosine within 0.02 of the
// exact one (the doc says about 1%).
func TestQuantizedCosine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		a, b := make([]float32, 256), make([]float32, 256)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			if i%2 == 0 {
				b[i] += a[i] // related, so cosines spread over 0..1
			}
		}
		var dot, na, nb float64
		for i := range a {
			dot += float64(a[i]) * float64(b[i])
			na += float64(a[i]) * float64(a[i])
			nb += float64(b[i]) * float64(b[i])
		}
		exact := dot / math.Sqrt(na*nb)
		assert.InDelta(t, exact, cosine(quantize(a), quantize(b)), 0.02)
	}
}

var benchWords = strings.Fields("postgres migration index orders deploy canary rollback kafka consumer lag redis cache ttl " +
	"stripe refund idempotency checkout tax shipping inventory warehouse grafana tempo tracing alert pager oncall " +
	"react vite storybook i18n accessibility openapi client graphql grpc proto auth token session cookie csrf argon2id " +
	"helm terraform vault secret docker image distroless lint error context retry timeout queue cron email search")

var benchQueries = []string{
	"why is the kafka consumer lag paging oncall",
	"add an index to the orders table in a postgres migration",
	"where does parseConfig17 read the stripe refund settings",
	"write a haiku about autumn",
}

// benchTree writes n distinct memories into a fresh directory on the real
// disk, spread over 20 subdirectories.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		w := func(k int) string { return benchWords[(i*7+k*13)%len(benchWords)] }
		content := fmt.Sprintf("---\nname: %s %s\ndescription: %s %s and %s for service%d\ntype: project\n---\n\n%s\n",
			w(0), w(1), w(2), w(3), w(4), i%97, strings.Repeat(w(5)+" "+w(6)+" "+w(7)+fmt.Sprintf(" detail about parseConfig%d. ", i), 6))
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("m%05d.md", i))
		if i < 20 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// statWalk is the floor of a Find on an unchanged directory: list every
// directory and stat every memory file, nothing else.
func statWalk(ctx context.Context, fsys afero.Fs, dir string) int {
	n := 0
	l := fsys.(afero.Lstater)
	_ = fswalk.Walk(ctx, fsys, dir, func(e fswalk.Entry) error {
		if e.Type.IsRegular() && path.Ext(e.Rel) == ".md" {
			if _, _, err := l.LstatIfPossible(e.Abs); err == nil {
				n++
			}
		}
		return nil
	})
	return n
}

// BenchmarkFindUnchanged measures a repeated Find on an unchanged
// directory of 2,000 and 20,000 memories on the real disk (folders last
// changed long ago), by words alone and with an embedder (a cheap
// 256-value stand-in, so the model's own time is left out), against a
// bare stat walk of the tree in the same loop,
// the cost of every Find before change detection. It reports find-ms (a
// Find), query-ms (the index search alone) and x-walk (Find / walk).
func BenchmarkFindUnchanged(b *testing.B) {
	for _, c := range []struct {
		n     int
		model bool
	}{{2_000, false}, {20_000, false}, {2_000, true}, {20_000, true}} {
		name := fmt.Sprintf("memories=%d", c.n)
		opts := FinderOptions{}
		if c.model {
			name += "/embedder"
			opts.Embedder = &quickEmbedder{}
		}
		n := c.n
		b.Run(name, func(b *testing.B) {
			dir := benchTree(b, n)
			settle(b, dir)
			fsys := afero.NewOsFs()
			f, err := NewFinder(mustDir(fsys, dir), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ctx := context.Background()
			f.Find(ctx, "warm up", nil, nil) // the first Find reads every file once
			var find, walk, query time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := benchQueries[i%len(benchQueries)]
				start := time.Now()
				f.Find(ctx, q, nil, nil)
				find += time.Since(start)
				b.StopTimer()
				start = time.Now()
				if got := statWalk(ctx, fsys, dir); got != n {
					b.Fatalf("walked %d files, want %d", got, n)
				}
				walk += time.Since(start)
				start = time.Now()
				f.corpus.search(q, MaxSelected, nil)
				query += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(find)/float64(walk), "x-walk")
			b.ReportMetric(float64(find.Microseconds())/1000/float64(b.N), "find-ms")
			b.ReportMetric(float64(query.Microseconds())/1000/float64(b.N), "query-ms")
		})
	}
}

// settle gives the folders below dir an mtime long past, as on a
// directory nobody changed in the last seconds.
func settle(b *testing.B, dir string) {
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFindFirst measures the first Find on a directory of 2,000 and
// 20,000 memories (every file read and indexed) against reading the
// headers with ScanMemoryFiles in the same loop.
func BenchmarkFindFirst(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			dir := benchTree(b, n)
			firstFindAgainstScan(b, afero.NewOsFs(), dir, FinderOptions{})
		})
	}
}

// TestANewcomersFirstMemoriesAreFound: in a directory of one memory, or a
// handful, a question a person would ask about one of them finds it,
// though it shares a single word with it; a message about nothing they
// hold, or that needs no memory, still gets nothing.
func TestANewcomersFirstMemoriesAreFound(t *testing.T) {
	first := [3]string{"deploy_days.md", "We deploy on Tuesdays and Thursdays", "We deploy on Tuesdays and Thursdays."}
	handful := [][3]string{first,
		{"stack.md", "The backend is Go with PostgreSQL", "Services are written in Go; data lives in PostgreSQL."},
		{"oncall.md", "Priya is on call this week", "Page Priya for production incidents."},
		{"style.md", "Prefer table-driven tests", "Write Go tests as tables of cases."},
		{"lunch.md", "The team orders tacos on Fridays", "Tacos from the place on Elm Street."},
	}
	for _, mems := range [][][3]string{{first}, handful} {
		fsys, dir := memTree(t, mems...)
		f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
		require.NoError(t, err)
		for _, q := range []string{"when do we deploy?", "can we deploy on friday?", "Deploy schedule"} {
			assert.Contains(t, names(f, q), "deploy_days.md", "%d memories: %q", len(mems), q)
		}
		for _, q := range []string{"thanks, that looks good", "what is 17 times 23", "rename this variable please"} {
			assert.Empty(t, names(f, q), "%d memories: %q needs none", len(mems), q)
		}
		f.Close()
	}
}

// namedEmbedder is fakeEmbedder with an EmbedderID.
type namedEmbedder struct {
	*fakeEmbedder
	id string
}

func (e namedEmbedder) EmbedderID() string { return e.id }

// shiftedEmbedder gives other vectors than fakeEmbedder (two dimensions
// swapped, so the same cosines): another model.
type shiftedEmbedder struct{ *fakeEmbedder }

func (e shiftedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out, err := e.fakeEmbedder.Embed(ctx, texts)
	for _, v := range out {
		v[0], v[1] = v[1], v[0]
	}
	return out, err
}

// TestVectorsAreRememberedOnDisk: with a VectorCache, a restarted Finder
// (a new session) and a Finder over another directory holding the same
// memories (a teammate's, pulled) embed none of them again, only the
// message; an embedder without an EmbedderID is known by its vectors, so
// another model is noticed and embeds everything anew; a torn last record
// (a crash mid-append) is cut off and the rest still serves.
func TestVectorsAreRememberedOnDisk(t *testing.T) {
	mems := [][3]string{
		{"car.md", "Priya bought a used sedan", "A blue sedan, bought in March."},
		{"doctor.md", "Omar's new physician", "Dr. Lee at the Elm Street practice."},
		{"trip.md", "vacation plans", "Two weeks in Lisbon in June."},
	}
	for i := range 12 {
		mems = append(mems, [3]string{fmt.Sprintf("note%02d.md", i), fmt.Sprintf("note %d on %s and %s", i, benchWords[i], benchWords[i+1]), benchWords[i+20]})
	}
	cache := t.TempDir()
	find := func(e Embedder, fsys afero.Fs) {
		t.Helper()
		f, err := NewFinder(mustDir(fsys, "/mem"), FinderOptions{Embedder: e, VectorCache: cache})
		require.NoError(t, err)
		defer f.Close()
		assert.Equal(t, []string{"car.md"}, names(f, "which automobile did she get"))
	}
	fsys, _ := memTree(t, mems...)
	teammate, _ := memTree(t, mems...)

	named := namedEmbedder{&fakeEmbedder{}, "fake-model v1"}
	find(named, fsys)
	first := named.texts.Load()
	assert.Greater(t, first, int32(len(mems)+2*len(meaningPairs)), "the memories, the test of meaning and the fit's probes")
	named.texts.Store(0)
	find(named, fsys)
	assert.Equal(t, int32(1), named.texts.Load(), "after a restart only the message is embedded")
	find(named, teammate)
	assert.Equal(t, int32(2), named.texts.Load(), "a teammate's same memories are not embedded again")

	plain := &fakeEmbedder{}
	find(plain, fsys)
	plain.texts.Store(0)
	plain.calls.Store(0)
	find(plain, fsys)
	assert.Equal(t, int32(2*len(meaningPairs)+1), plain.texts.Load(), "without an EmbedderID: the test of meaning once, to know it, and the message")
	assert.Equal(t, int32(2), plain.calls.Load(), "the test of meaning in a call of its own, so its vectors never depend on the message, and the message")
	named.calls.Store(0)
	find(named, fsys)
	assert.Equal(t, int32(1), named.calls.Load(), "with an EmbedderID: one call, the message's")
	other := shiftedEmbedder{&fakeEmbedder{}}
	find(other, fsys)
	assert.Greater(t, other.texts.Load(), int32(len(mems)+2*len(meaningPairs)), "another model is noticed: everything is embedded for it")

	files, err := filepath.Glob(filepath.Join(cache, "*.vectors"))
	require.NoError(t, err)
	require.Len(t, files, 3, "one file per embedder")
	for _, p := range files {
		info, err := os.Stat(p)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(p, info.Size()-7))
	}
	named.texts.Store(0)
	find(named, fsys)
	assert.Equal(t, int32(2), named.texts.Load(), "the torn record's text is embedded again, nothing else")
	named.texts.Store(0)
	find(named, fsys)
	assert.Equal(t, int32(1), named.texts.Load(), "and the file is whole again")
}

// quickEmbedder is a cheap model stand-in for benchmarks: 256 values
// drawn from each text's hash, and a name; it counts the texts it embeds.
type quickEmbedder struct{ texts atomic.Int64 }

func (e *quickEmbedder) EmbedderID() string { return "quick 256" }

func (e *quickEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = textNoise(t, 256, 1)
	}
	return out, nil
}

// firstFindAgainstScan times a new Finder's first Find against
// ScanMemoryFiles of the same tree, each round, and reports the ratio
// (x-scan).
func firstFindAgainstScan(b *testing.B, fsys afero.Fs, dir string, opts FinderOptions) {
	ctx := context.Background()
	var first, scan time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := NewFinder(mustDir(fsys, dir), opts)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		f.Find(ctx, benchQueries[0], nil, nil)
		first += time.Since(start)
		f.Close()
		start = time.Now()
		if _, err := memdir.ScanMemoryFiles(ctx, fsys, dir, memdir.ScanOptions{MaxFiles: 1 << 20}); err != nil {
			b.Fatal(err)
		}
		scan += time.Since(start)
	}
	b.ReportMetric(float64(first)/float64(scan), "x-scan")
}

// BenchmarkFindFirstWithVectorsOnDisk is a restart with an embedder:
// every memory's vector is already in the VectorCache, and the first
// Find (index, vectors from disk, the embedder's trust) is measured
// against ScanMemoryFiles in the same run (x-scan), with the texts
// embedded per restart besides the message (embedded: 0).
func BenchmarkFindFirstWithVectorsOnDisk(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			dir := benchTree(b, n)
			fsys := afero.NewOsFs()
			ctx := context.Background()
			emb := &quickEmbedder{}
			opts := FinderOptions{Embedder: emb, VectorCache: b.TempDir()}
			warm, err := NewFinder(mustDir(fsys, dir), opts)
			if err != nil {
				b.Fatal(err)
			}
			warm.Find(ctx, benchQueries[0], nil, nil)
			warm.Close()
			emb.texts.Store(0)
			firstFindAgainstScan(b, fsys, dir, opts)
			b.ReportMetric(float64(emb.texts.Load()-int64(b.N))/float64(b.N), "embedded")
		})
	}
}

// TestANewerMemoryThatChangesAValueComesFirst: a newer memory that names
// the values of an older one and says it changed ("left ... and joined")
// is its update, however differently the two are named and however
// little the newer one shares with the message; one that only shares a
// rare word, saying nothing changed, is not.
func TestANewerMemoryThatChangesAValueComesFirst(t *testing.T) {
	mems := [][3]string{
		{"employer.md", "Ingrid works at Northwind Logistics", "Ingrid works at Northwind Logistics."},
		{"news-3.md", "Ingrid left Northwind Logistics and joined Juniper Media", "Since September."},
		{"cello.md", "Ingrid takes cello lessons", "On Tuesdays."},
		{"recital.md", "Ingrid played cello at a recital", "Her first one."},
	}
	for i := range 20 {
		mems = append(mems, [3]string{fmt.Sprintf("note%02d.md", i), fmt.Sprintf("Ingrid noted %s", benchWords[i]), benchWords[i+20]})
	}
	fsys, dir := memTree(t, mems...)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	defer f.Close()
	got := names(f, "Which company does Ingrid work for now?")
	require.NotEmpty(t, got)
	assert.Equal(t, "news-3.md", got[0], "the current employer first")
	assert.Contains(t, got, "employer.md", "the older stays")
	got = names(f, "When are Ingrid's cello lessons?")
	require.NotEmpty(t, got)
	assert.Equal(t, "cello.md", got[0], "a newer memory that shares a word but changes nothing does not supersede")
}

// TestVectorCacheReadsOnlySoundRecords: garbage, a record torn and then
// followed by another process's append, a record whose checksum fails
// and one that is not a unit vector are skipped, never read as another
// text's vector; the sound records around them are read.
func TestVectorCacheReadsOnlySoundRecords(t *testing.T) {
	dir := t.TempDir()
	vc, err := openVectorCache(dir, "test")
	require.NoError(t, err)
	unit := func(seed string) vector { return quantize(textNoise(seed, 8, 1)) }
	h := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	require.NoError(t, vc.put([][32]byte{h("a")}, []vector{unit("a")}))
	var torn, crafted, badSum bytes.Buffer
	encodeRecord(&torn, h("torn"), unit("torn"))
	loud := make(vector, 8)
	for i := range loud {
		loud[i] = 127
	}
	encodeRecord(&crafted, h("loud"), loud)
	encodeRecord(&badSum, h("flipped"), unit("flipped"))
	flipped := badSum.Bytes()
	flipped[len(flipped)-1] ^= 0xff
	f, err := os.OpenFile(vc.path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(append(append(append([]byte("garbage\x00\xa7"), torn.Bytes()[:20]...), crafted.Bytes()...), flipped...))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, vc.put([][32]byte{h("b")}, []vector{unit("b")}))

	again, err := openVectorCache(dir, "test")
	require.NoError(t, err)
	assert.Len(t, again.have, 2)
	got, ok := again.get(h("a"))
	assert.True(t, ok)
	assert.Equal(t, unit("a"), got)
	got, ok = again.get(h("b"))
	assert.True(t, ok)
	assert.Equal(t, unit("b"), got)
	for _, s := range []string{"torn", "loud", "flipped"} {
		_, ok := again.get(h(s))
		assert.False(t, ok, s)
	}
	_, err = openVectorCache(dir, "another")
	require.NoError(t, err, "another identity has its own file")
}

// TestAVectorCacheThatCannotOpenIsSaidOnce: a VectorCache path that is a
// file, not a folder, leaves vectors in memory, recall working, and one
// warning in the log, not one per message.
func TestAVectorCacheThatCannotOpenIsSaidOnce(t *testing.T) {
	fsys, dir := otherWordsTree(t)
	notAFolder := filepath.Join(t.TempDir(), "vectors")
	require.NoError(t, os.WriteFile(notAFolder, []byte("a file"), 0o644))
	var log bytes.Buffer
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: &fakeEmbedder{}, VectorCache: notAFolder, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, []string{"car.md"}, names(f, "which automobile did she get"))
	assert.Equal(t, []string{"car.md"}, names(f, "which automobile did he get"))
	assert.Equal(t, 1, strings.Count(log.String(), "recall_vector_cache_failed"), log.String())
	data, err := os.ReadFile(notAFolder)
	require.NoError(t, err)
	assert.Equal(t, "a file", string(data), "the file in the way is left as it was")
}

// TestMedianAndCosineMatchTheirPlainForms: the selection-based median
// equals the median of the sorted values, and the unrolled dot product
// equals the plain one, for any length and values (duplicates, extremes).
func TestMedianAndCosineMatchTheirPlainForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for n := 1; n < 300; n++ {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(rng.IntN(7)) / 3 // many ties
			if n%3 == 0 {
				vals[i] = rng.NormFloat64()
			}
		}
		sorted := slices.Sorted(slices.Values(vals))
		want := sorted[n/2]
		if n%2 == 0 {
			want = (sorted[n/2-1] + sorted[n/2]) / 2
		}
		assert.Equal(t, want, medianOf(slices.Clone(vals)), "n=%d", n)
	}
	for n := range 70 {
		a, b := make(vector, n), make(vector, n)
		for i := range a {
			a[i], b[i] = int8(rng.IntN(255)-127), int8(rng.IntN(255)-127)
		}
		if n == 9 {
			for i := range a {
				a[i], b[i] = -127, -127
			}
		}
		var dot int64
		for i := range a {
			dot += int64(a[i]) * int64(b[i])
		}
		want := float64(dot) / (127 * 127)
		if n == 0 {
			want = 0
		}
		assert.Equal(t, want, cosine(a, b), "n=%d", n)
	}
}

// TestAnExpiredMemoryIsNotRecalled: a memory whose frontmatter says it
// expired is left out of recall (by words and by meaning alike); the
// same memory is found before it expires, and one whose date is still
// ahead, or unreadable, is found.
func TestAnExpiredMemoryIsNotRecalled(t *testing.T) {
	mems := [][3]string{
		{"freeze.md", "Deploy freeze over the holidays", "No deploys until January."},
		{"window.md", "Deploy window moves to Wednesdays", "From January on."},
	}
	for i := range 20 {
		mems = append(mems, [3]string{fmt.Sprintf("note%02d.md", i), "Noted " + benchWords[i], benchWords[i+20]})
	}
	fsys, dir := memTree(t, mems...)
	freezeQ, windowQ := "is there a deploy freeze over the holidays?", "which day is the deploy window now?"
	found := func(opts FinderOptions, q string) []string {
		f, err := NewFinder(mustDir(fsys, dir), opts)
		require.NoError(t, err)
		defer f.Close()
		return names(f, q)
	}
	require.Contains(t, found(FinderOptions{}, freezeQ), "freeze.md", "found before it expires")
	require.Contains(t, found(FinderOptions{}, windowQ), "window.md")
	past, future := time.Now().AddDate(0, 0, -2).Format(time.DateOnly), time.Now().AddDate(1, 0, 0).Format(time.RFC3339)
	for file, expires := range map[string]string{"freeze.md": past, "window.md": future} {
		p := filepath.Join(dir, file)
		data, err := afero.ReadFile(fsys, p)
		require.NoError(t, err)
		require.NoError(t, afero.WriteFile(fsys, p, []byte(strings.Replace(string(data), "\n---\n", "\nexpires: "+expires+"\n---\n", 1)), 0o644))
	}
	for _, opts := range []FinderOptions{{}, {Embedder: &quickEmbedder{}}} {
		assert.NotContains(t, found(opts, freezeQ), "freeze.md", "expired on %s", past)
		assert.Contains(t, found(opts, windowQ), "window.md", "expires next year")
	}
	fm, _, _ := memdir.ParseFrontmatter([]byte("---\nname: x\nexpires: " + past + "\n---\nx\n"))
	assert.True(t, fm.Expired(time.Now()))
	fm, _, _ = memdir.ParseFrontmatter([]byte("---\nname: x\nexpires: soon\n---\nx\n"))
	_, ok := fm.Expires()
	assert.False(t, ok, "an unreadable date expires nothing")
	day, _ := memdir.Frontmatter{Metadata: map[string]string{"expires": "2026-12-31"}}.Expires()
	assert.Equal(t, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), day, "a day holds through its end")
	at, ok := memdir.Frontmatter{Metadata: map[string]string{"expires": "2026-12-31 18:00:00"}}.Expires()
	assert.True(t, ok)
	assert.Equal(t, time.Date(2026, 12, 31, 18, 0, 0, 0, time.UTC), at, "a date and a time, as YAML writes one")
}

// meaningfulEmbedder is fakeEmbedder that also pairs the built-in test of
// meaning's questions with their statements, so it earns trust.
type meaningfulEmbedder struct{ fakeEmbedder }

func (e *meaningfulEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out, err := e.fakeEmbedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	for i, t := range texts {
		v := append(out[i], make([]float32, len(meaningPairs))...)
		for p, pair := range meaningPairs {
			if t == pair[0] || t == pair[1] {
				v[len(v)-len(meaningPairs)+p] = 3
			}
		}
		out[i] = v
	}
	return out, nil
}

// TestMeaningLooksAmongTheNamedPeople: in a directory two people share,
// a message that names one finds by meaning that person's memory, not the
// other's alike in meaning (namedScope); a message that names no one
// finds both.
func TestMeaningLooksAmongTheNamedPeople(t *testing.T) {
	var mems [][3]string
	for _, who := range []string{"Ana", "Ben"} {
		for i := range 25 {
			mems = append(mems, [3]string{fmt.Sprintf("%s-%02d.md", strings.ToLower(who), i), who + " " + benchWords[i], benchWords[i+25]})
		}
		mems = append(mems, [3]string{strings.ToLower(who) + "-car.md", who + " bought sedan", "A blue sedan."})
	}
	fsys, dir := memTree(t, mems...)
	var trust *Trust
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: &meaningfulEmbedder{}, Observer: func(e Event) { trust = e.Trust }})
	require.NoError(t, err)
	got := names(f, "which automobile did Ana get")
	require.NotNil(t, trust)
	require.Greater(t, trust.Meaning, 0.5, "the embedder pairs the test's questions and statements")
	assert.Contains(t, got, "ana-car.md")
	assert.NotContains(t, got, "ben-car.md", "Ben's car is no answer to a question about Ana")

	assert.Subset(t, names(f, "which automobile was bought"), []string{"ana-car.md", "ben-car.md"}, "a message that names no one: meaning sees every memory")
}

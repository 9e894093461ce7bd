package recall

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	assert.Empty(t, names("friday deploys"), "the old text of a changed file is gone")
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

package transcript

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/transcript")

const (
	sessA = "11111111-1111-4111-8111-111111111111"
	sessB = "22222222-2222-4222-8222-222222222222"
	sessC = "33333333-3333-4333-8333-333333333333"
	sessD = "44444444-4444-4444-8444-444444444444"
)

// fixture copies the hand-built Claude Code project directory to a temp
// dir, with fixed mtimes, and opens a store on it.
func fixture(t *testing.T) *JSONLStore {
	t.Helper()
	src := filepath.Join("..", "testdata", "transcripts", "projects", "-work-shop")
	dst := filepath.Join(t.TempDir(), "projects", "-work-shop")
	base := time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC)
	mtimes := map[string]time.Duration{sessA: 10, sessB: 9, sessC: 8, sessD: 7, "55555555-5555-4555-8555-555555555555": 11, "66666666-6666-4666-8666-666666666666": 12}
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o700)
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(out, data, 0o600))
		h := mtimes[strings.TrimSuffix(filepath.Base(p), ".jsonl")]
		mt := base.Add(h * time.Hour)
		return os.Chtimes(out, mt, mt)
	}))
	s, err := NewJSONLStore(afero.NewOsFs(), dst, Options{})
	require.NoError(t, err)
	return s
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	p := filepath.Join("..", "testdata", "golden", "transcript", name)
	if *update {
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./transcript -update to create %s", p)
	assert.Equal(t, string(want), string(got), "golden %s", name)
}

func TestListGolden(t *testing.T) {
	s := fixture(t)
	infos, err := s.List(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, inf := range infos {
		ids = append(ids, inf.SessionID)
	}
	assert.Equal(t, []string{sessA, sessB, sessC, sessD}, ids, "newest first; the sidechain, metadata-only and non-UUID files left out")
	assert.Equal(t, `Checkout "flaky" test`, infos[0].Title, "custom title over AI title")
	assert.Equal(t, "Why does the checkout test fail on CI?", infos[0].FirstPrompt)
	assert.Equal(t, "ci", infos[0].Tag)
	assert.Equal(t, "! make test", infos[1].FirstPrompt, "bash input")
	assert.Equal(t, "/deploy-check staging", infos[2].FirstPrompt, "a custom command with arguments")
	golden(t, "list.json", infos)
}

type shown struct {
	UUID      string `json:"uuid"`
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic,omitempty"`
}

func show(r *Resumed) []shown {
	var out []shown
	for _, m := range r.Messages {
		id := m.UUID
		if m.Synthetic {
			id = "(new)" // a fresh uuid each time
		}
		out = append(out, shown{UUID: id, Type: m.Type, Text: Flatten(m.Entry), Synthetic: m.Synthetic})
	}
	return out
}

func TestResumeGolden(t *testing.T) {
	s := fixture(t)
	for _, id := range []string{sessA, sessB, sessC, sessD} {
		r, err := Resume(context.Background(), s, id)
		require.NoError(t, err)
		golden(t, "resume-"+id[:8]+".json", map[string]any{"interruption": r.Interruption, "title": r.Title, "tag": r.Tag, "messages": show(r)})
	}
	a, err := Resume(context.Background(), s, sessA)
	require.NoError(t, err)
	var uuids []string
	for _, m := range a.Messages {
		uuids = append(uuids, m.UUID[len(m.UUID)-2:])
	}
	// The torn last line is skipped; both parallel tool results are back
	// (05 was off the chain); the thinking-only entry shares its API
	// message with tool calls, so it stays; the progress entry is bridged;
	// the leaf is the last assistant reply (the system entry after it is
	// no user or assistant message).
	assert.Equal(t, []string{"00", "01", "02", "03", "04", "05", "06", "07"}, uuids)
	assert.Equal(t, NotInterrupted, a.Interruption)

	b, err := Resume(context.Background(), s, sessB)
	require.NoError(t, err)
	assert.Equal(t, InterruptedTurn, b.Interruption, "ends on a tool result once the unanswered call and the blank reply are dropped")
	last := b.Messages[len(b.Messages)-2:]
	assert.True(t, last[0].Synthetic && last[0].IsMeta)
	assert.Equal(t, continueText, last[0].Text())
	assert.Equal(t, noResponseText, last[1].Text())

	c, err := Resume(context.Background(), s, sessC)
	require.NoError(t, err)
	assert.Equal(t, InterruptedPrompt, c.Interruption)
	assert.Equal(t, noResponseText, c.Messages[len(c.Messages)-1].Text())

	d, err := Resume(context.Background(), s, sessD)
	require.NoError(t, err)
	assert.Equal(t, TypeSystem, d.Messages[0].Type, "the chain starts at the compact boundary")
	assert.Len(t, d.Messages, 4)

	_, err = Resume(context.Background(), s, "99999999-9999-4999-8999-999999999999")
	assert.ErrorIs(t, err, ErrNoSession)
	_, err = Resume(context.Background(), s, "../../etc/passwd")
	assert.ErrorIs(t, err, ErrInvalidSessionID)
}

func TestSearch(t *testing.T) {
	s := fixture(t)
	for _, c := range []struct{ query, first, why string }{
		{"refunds", sessB, "the branch feature/refunds matches by substring"},
		{"postgres starts late", sessA, "full text over the messages"},
		{"backfilling columns", sessD, "stemmed: backfilling meets backfill"},
	} {
		hits, err := Search(context.Background(), s, c.query, 10)
		require.NoError(t, err)
		require.NotEmpty(t, hits, c.query)
		assert.Equal(t, c.first, hits[0].SessionID, c.why)
		if c.first == sessA {
			assert.Contains(t, hits[0].Snippet, "Postgres")
		}
	}
	hits, err := Search(context.Background(), s, "kubernetes", 10)
	require.NoError(t, err)
	assert.Empty(t, hits)
}

// TestRecordRoundTrip records a host's multi-turn conversation with
// parallel tool calls, then lists, resumes and converts it back.
func TestRecordRoundTrip(t *testing.T) {
	fsys := afero.NewMemMapFs()
	s, err := NewJSONLStore(fsys, "/home/u/.claude/projects/-work-shop", Options{})
	require.NoError(t, err)
	ctx := context.Background()
	rec, err := NewRecorder(s, Stamp{Cwd: "/work/shop", GitBranch: "main"})
	require.NoError(t, err)
	conv := []llm.Message{
		{ID: "m1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Which tests are flaky?")}},
		{ID: "m2", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Let me look."),
			llm.ToolUseBlock("t1", "Read", json.RawMessage(`{"file_path":"ci/quarantine.txt"}`)),
			llm.ToolUseBlock("t2", "Grep", json.RawMessage(`{"pattern":"t.Skip"}`))}},
		{ID: "m3", Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("t1", "checkout_test", false), llm.ToolResultBlock("t2", "none", false)}},
		{ID: "m4", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("checkout_test is quarantined.")}},
	}
	require.NoError(t, rec.Record(ctx, conv[:2]...))
	require.NoError(t, rec.Record(ctx, conv...), "recorded messages are not written twice")
	require.NoError(t, s.SetTitle(ctx, rec.SessionID(), "Flaky tests"))
	require.NoError(t, s.Close())

	data, err := afero.ReadFile(fsys, s.Path(rec.SessionID()))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	assert.Len(t, lines, 1+3+1+2+1+1+1+2, "prompt, three assistant blocks, last-prompt, two results, reply, last-prompt, title, then last-prompt and title again")
	last, ok := ParseLine([]byte(lines[len(lines)-2]))
	require.True(t, ok)
	reply, ok := ParseLine([]byte(lines[7]))
	require.True(t, ok)
	assert.Equal(t, TypeLastPrompt, last.Type)
	assert.Equal(t, reply.UUID, last.LeafUUID, "the closing last-prompt names the reply as the leaf")
	for _, l := range lines {
		e, ok := ParseLine([]byte(l))
		require.True(t, ok, l)
		assert.Equal(t, l, string(e.Raw), "re-reads identically")
		if e.IsMessage() {
			assert.True(t, strings.HasPrefix(l, `{"parentUuid":`), "parentUuid first")
			assert.Contains(t, l, `"uuid":"`+e.UUID+`","timestamp":"`, "uuid followed by timestamp")
			assert.Regexp(t, `"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`, l)
		}
	}
	infos, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, "Flaky tests", infos[0].Title)
	assert.Equal(t, "Which tests are flaky?", infos[0].FirstPrompt)

	r, err := Resume(ctx, s, rec.SessionID())
	require.NoError(t, err)
	assert.Equal(t, NotInterrupted, r.Interruption)
	back := ToLLM(r.Messages)
	require.Len(t, back, 4)
	for i := range conv {
		assert.Equal(t, conv[i].Role, back[i].Role)
		assert.Equal(t, len(conv[i].Content), len(back[i].Content), "message %d", i)
		for j := range conv[i].Content {
			assert.Equal(t, conv[i].Content[j].Type, back[i].Content[j].Type)
			assert.Equal(t, conv[i].Content[j].Text, back[i].Content[j].Text)
			assert.Equal(t, conv[i].Content[j].ToolUseID, back[i].Content[j].ToolUseID)
		}
	}

	// Continue the session, and fork it.
	cont, err := ContinueRecorder(s, r, Stamp{})
	require.NoError(t, err)
	require.NoError(t, cont.Record(ctx, append(back, llm.Message{ID: "m5", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Unquarantine it")}})...))
	r2, err := Resume(ctx, s, rec.SessionID())
	require.NoError(t, err)
	assert.Equal(t, InterruptedPrompt, r2.Interruption)
	assert.Equal(t, "Unquarantine it", r2.Messages[len(r2.Messages)-2].Text())
	forked, err := s.Fork(ctx, rec.SessionID(), Stamp{})
	require.NoError(t, err)
	assert.NotEqual(t, rec.SessionID(), forked)
	r3, err := Resume(ctx, s, forked)
	require.NoError(t, err)
	assert.Equal(t, len(r2.Messages), len(r3.Messages))
	for _, m := range r3.Messages {
		if !m.Synthetic {
			assert.Equal(t, forked, m.SessionID)
		}
	}
}

func TestLazyCreationDedupAndModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects", "-work")
	s, err := NewJSONLStore(afero.NewOsFs(), dir, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	id := NewUUID()
	require.NoError(t, s.Append(ctx, id, metadataEntry(TypeTag, id, "wip")))
	require.NoError(t, s.Flush(ctx))
	_, err = os.Stat(s.Path(id))
	assert.True(t, os.IsNotExist(err), "no file before the first message")
	msg := MessageEntry{Type: TypeUser, Message: Message{Role: "user", Content: json.RawMessage(`"hello"`)}}.Encode(Stamp{SessionID: id, Cwd: "/work"})
	require.NoError(t, s.Append(ctx, id, msg, msg))
	require.NoError(t, s.Flush(ctx))
	s2, err := NewJSONLStore(afero.NewOsFs(), dir, Options{})
	require.NoError(t, err)
	require.NoError(t, s2.Append(ctx, id, msg), "another store knows the file's uuids")
	require.NoError(t, s2.Flush(ctx))
	entries, err := s2.Load(ctx, id)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "the tag, then the message once")
	info, err := os.Stat(s.Path(id))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	dinfo, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), dinfo.Mode().Perm())
	assert.ErrorIs(t, s.Append(ctx, "not-a-uuid", msg), ErrInvalidSessionID)
}

func TestLargeTranscriptReadFromLastBoundary(t *testing.T) {
	fsys := afero.NewMemMapFs()
	s, err := NewJSONLStore(fsys, "/p", Options{BatchEntries: 1 << 20, BatchBytes: 1 << 30})
	require.NoError(t, err)
	ctx := context.Background()
	id := NewUUID()
	stamp := Stamp{SessionID: id, Cwd: "/work"}
	parent := ""
	big := strings.Repeat("x", 10_000)
	for i := 0; i < 600; i++ {
		e := MessageEntry{Type: TypeUser, Parent: parent, Message: Message{Role: "user", Content: mustJSON(fmt.Sprintf("old %d %s", i, big))}}.Encode(stamp)
		parent = e.UUID
		require.NoError(t, s.Append(ctx, id, e))
	}
	require.NoError(t, s.Append(ctx, id, metadataEntry(TypeCustomTitle, id, "Before the boundary")))
	boundary := `{"parentUuid":null,"logicalParentUuid":"` + parent + `","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"` + NewUUID() + `","timestamp":"2026-03-01T00:00:00.000Z","sessionId":"` + id + `"}`
	be, ok := ParseLine([]byte(boundary))
	require.True(t, ok)
	require.NoError(t, s.Append(ctx, id, be))
	after := MessageEntry{Type: TypeUser, Parent: be.UUID, Message: Message{Role: "user", Content: mustJSON("after the boundary")}}.Encode(stamp)
	require.NoError(t, s.Append(ctx, id, after))
	require.NoError(t, s.Flush(ctx))
	info, err := fsys.Stat(s.Path(id))
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(largeFileBytes))
	r, err := Resume(ctx, s, id)
	require.NoError(t, err)
	require.Len(t, r.Messages, 3, "the boundary, the prompt after it, the synthetic reply")
	assert.Equal(t, "after the boundary", r.Messages[1].Text())
	assert.Equal(t, "Before the boundary", r.Title, "metadata before the boundary is kept")
}

func TestFindProjectDir(t *testing.T) {
	fsys := afero.NewMemMapFs()
	long := "/Users/alice/projects/" + strings.Repeat("x", 300)
	exact := ProjectDir("/h", long)
	name := filepath.Base(exact)
	require.Greater(t, len(name), 200)
	other := filepath.Join(ProjectsDir("/h"), name[:200]+"-1bkvhan8y9an9")
	require.NoError(t, fsys.MkdirAll(other, 0o700))
	got, ok := FindProjectDir(fsys, "/h", long)
	assert.True(t, ok)
	assert.Equal(t, other, got, "a build that hashed the suffix differently")
	require.NoError(t, fsys.MkdirAll(exact, 0o700))
	got, _ = FindProjectDir(fsys, "/h", long)
	assert.Equal(t, exact, got, "the exact name first")
	_, ok = FindProjectDir(fsys, "/h", "/short")
	assert.False(t, ok)
}

func TestSubagentTranscripts(t *testing.T) {
	s := fixture(t)
	ctx := context.Background()
	stamp := Stamp{SessionID: sessA, Cwd: "/work/shop"}
	e := MessageEntry{Type: TypeUser, IsSidechain: true, AgentID: "a1b2", Message: Message{Role: "user", Content: mustJSON("search the tests")}}.Encode(stamp)
	require.NoError(t, s.AppendSubagent(ctx, sessA, "a1b2", e, e))
	require.NoError(t, s.Flush(ctx))
	data, err := os.ReadFile(s.SubagentPath(sessA, "a1b2"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), "\n"), "once")
	assert.Contains(t, string(data), `"isSidechain":true,"agentId":"a1b2"`)
	infos, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, infos, 4, "sub-agent transcripts are not sessions")
	assert.Error(t, s.AppendSubagent(ctx, sessA, "../x", e))
}

// TestSearchCoversToolCallsAndResults: a word that appears only in a tool
// result, or only in a tool call's input, finds its session.
func TestSearchCoversToolCallsAndResults(t *testing.T) {
	fsys := afero.NewMemMapFs()
	s, err := NewJSONLStore(fsys, "/home/u/.claude/projects/-work-shop", Options{})
	require.NoError(t, err)
	ctx := context.Background()
	rec, err := NewRecorder(s, Stamp{Cwd: "/work/shop"})
	require.NoError(t, err)
	require.NoError(t, rec.Record(ctx,
		llm.Message{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("What does the config say?")}},
		llm.Message{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("t1", "Read", json.RawMessage(`{"file_path":"/work/shop/zanzibar.yaml"}`))}},
		llm.Message{ID: "u2", Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("t1", "retries: 7\nbackend: quetzalcoatl", false)}},
		llm.Message{ID: "a2", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("It sets seven retries.")}},
	))
	for _, q := range []string{"quetzalcoatl", "zanzibar"} {
		hits, err := Search(ctx, s, q, 10)
		require.NoError(t, err)
		require.Len(t, hits, 1, q)
		assert.Equal(t, rec.SessionID(), hits[0].SessionID)
		assert.Contains(t, strings.ToLower(hits[0].Snippet), q)
	}
}

// Listing with several workers finds every session once, newest first,
// and a cancelled listing returns the context's error, not a partial list.
func TestListWithWorkers(t *testing.T) {
	dir := sparseSessions(t, 150, 1<<16)
	s, err := NewJSONLStore(afero.NewOsFs(), dir, Options{})
	require.NoError(t, err)
	infos, err := s.List(context.Background())
	require.NoError(t, err)
	require.Len(t, infos, 150)
	seen := map[string]bool{}
	for i, inf := range infos {
		assert.False(t, seen[inf.SessionID], "listed once")
		seen[inf.SessionID] = true
		if i > 0 {
			assert.False(t, inf.Modified.After(infos[i-1].Modified), "newest first")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := s.List(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, got)
}

// TestResumeFollowsTheNamedLeaf: the newest last-prompt line's leafUuid
// decides the leaf, as it does for Claude Code, even when a newer branch
// exists; a Recorder continuing the session attaches to that entry (an
// attachment after the reply) and names its own tip.
func TestResumeFollowsTheNamedLeaf(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore()
	id := NewUUID()
	st := Stamp{SessionID: id, Cwd: "/p"}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	text := func(s string) json.RawMessage { return mustJSON(s) }
	u1 := MessageEntry{Type: TypeUser, Time: at, Message: Message{Role: "user", Content: text("first")}}.Encode(st)
	a1 := MessageEntry{Type: TypeAssistant, Parent: u1.UUID, Time: at.Add(time.Second), Message: Message{ID: "msg_1", Role: "assistant", Content: mustJSON([]Block{{Type: "text", Text: "one"}})}}.Encode(st)
	att, ok := ParseLine([]byte(`{"parentUuid":"` + a1.UUID + `","isSidechain":false,"attachment":{"type":"prompt_snapshot"},"type":"attachment","uuid":"` + NewUUID() + `","timestamp":"2026-12-01T10:00:02.000Z","sessionId":"` + id + `"}`))
	require.True(t, ok)
	// A newer branch off the reply that no last-prompt names.
	u2 := MessageEntry{Type: TypeUser, Parent: a1.UUID, Time: at.Add(time.Minute), Message: Message{Role: "user", Content: text("stray")}}.Encode(st)
	require.NoError(t, s.Append(ctx, id, u1, a1, att, lastPromptEntry(id, "first", att.UUID), u2))
	require.NoError(t, s.Flush(ctx))

	r, err := Resume(ctx, s, id)
	require.NoError(t, err)
	require.Len(t, r.Messages, 2, "u1 and a1 (the attachment after it adds nothing); not the stray branch")
	assert.Equal(t, "one", r.Messages[1].Text())
	assert.Equal(t, att.UUID, r.LeafUUID, "the entry to continue from is the named one")
	assert.Equal(t, NotInterrupted, r.Interruption)

	rec, err := ContinueRecorder(s, r, Stamp{})
	require.NoError(t, err)
	require.NoError(t, rec.Record(ctx, llm.Message{ID: "n1", Role: llm.RoleUser, Content: []llm.Block{llm.MetaBlock("<system-reminder>\nctx\n</system-reminder>"), llm.TextBlock("second")}},
		llm.Message{ID: "n2", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("two")}}))
	entries, err := s.Load(ctx, id)
	require.NoError(t, err)
	var meta, prompt Entry
	for _, e := range entries {
		switch {
		case e.Type == TypeUser && e.IsMeta:
			meta = e
		case e.Type == TypeUser && e.Text() == "second":
			prompt = e
		}
	}
	assert.Equal(t, att.UUID, meta.Parent(), "the new turn continues from the named leaf")
	assert.Equal(t, meta.UUID, prompt.Parent(), "the context block is recorded before the prompt, where it was sent")
	last := entries[len(entries)-1]
	require.Equal(t, TypeLastPrompt, last.Type)
	assert.Equal(t, "second", last.LastPrompt)

	r, err = Resume(ctx, s, id)
	require.NoError(t, err)
	assert.Equal(t, last.LeafUUID, r.LeafUUID)
	msgs := ToLLM(r.Messages)
	require.Len(t, msgs, 4)
	assert.True(t, msgs[2].Content[0].Meta, "the context block comes back as context, before the prompt")
	assert.Equal(t, "second", msgs[2].Content[1].Text)
	assert.Equal(t, "two", msgs[3].Text())
}

// TestClaudeCode2_1_332Transcript: a session the real Claude Code 2.1.332
// wrote (-p, then --resume; its fields rowSource and sentAtMs on user
// entries, thread on api-request lines), with a hybrid-organization and a
// host-row line as 2.1.332 writes them in sessions -p does not make, is
// listed, searched and resumed, and survives a rewrite byte for byte.
func TestClaudeCode2_1_332Transcript(t *testing.T) {
	const id = "80ccc899-0226-4cf9-acc7-2963ca8d1f96"
	ctx := context.Background()
	src := filepath.Join("..", "testdata", "transcripts", "cc-2.1.332", "-work-shop")
	orig, err := os.ReadFile(filepath.Join(src, id+".jsonl"))
	require.NoError(t, err)
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/p/"+id+".jsonl", orig, 0o600))
	s, err := NewJSONLStore(fsys, "/p", Options{})
	require.NoError(t, err)

	infos, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, "step:again", infos[0].FirstPrompt, "the last prompt, as Claude Code lists it")
	assert.Equal(t, "master", infos[0].GitBranch)
	hits, err := Search(ctx, s, "again", 10)
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, id, hits[0].SessionID)

	r, err := Resume(ctx, s, id)
	require.NoError(t, err)
	var conv []string
	for _, m := range ToLLM(r.Messages) {
		for _, b := range m.Content {
			if !b.Meta {
				conv = append(conv, string(m.Role)+": "+b.Text)
			}
		}
	}
	assert.Equal(t, []string{"user: step:probe it", "assistant: done.", "user: step:again", "assistant: done."}, conv)
	assert.Equal(t, NotInterrupted, r.Interruption)
	entries, err := s.Load(ctx, id)
	require.NoError(t, err)
	var leaf string
	types := map[string]bool{}
	for _, e := range entries {
		types[e.Type] = true
		if e.Type == TypeLastPrompt {
			leaf = e.LeafUUID
		}
	}
	assert.True(t, types["hybrid-organization"] && types["host-row"] && types["api-request"], "every line is read")
	assert.Equal(t, leaf, r.LeafUUID, "the leaf Claude Code named")

	// Rewritten through the store, every line comes back as it was.
	require.NoError(t, s.Append(ctx, NewUUID())) // nothing: no file
	copyStore, err := NewJSONLStore(fsys, "/copy", Options{})
	require.NoError(t, err)
	require.NoError(t, copyStore.Append(ctx, id, entries...))
	require.NoError(t, copyStore.Flush(ctx))
	got, err := afero.ReadFile(fsys, "/copy/"+id+".jsonl")
	require.NoError(t, err)
	assert.Equal(t, string(orig), string(got), "unknown fields and entry types are kept")

	// Continuing it leaves what Claude Code wrote as it was.
	rec, err := ContinueRecorder(s, r, Stamp{})
	require.NoError(t, err)
	require.NoError(t, rec.Record(ctx, llm.Message{ID: "n1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("third")}}))
	after, err := afero.ReadFile(fsys, "/p/"+id+".jsonl")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(after), string(orig)))
	r, err = Resume(ctx, s, id)
	require.NoError(t, err)
	assert.Equal(t, "third", r.Messages[len(r.Messages)-2].Text(), "the new prompt follows Claude Code's last turn")
}

// TestForkKeepsEveryField: a fork of Claude Code 2.1.332's session keeps
// the fields this package does not model on each copied entry.
func TestForkKeepsEveryField(t *testing.T) {
	const id = "80ccc899-0226-4cf9-acc7-2963ca8d1f96"
	ctx := context.Background()
	orig, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", "cc-2.1.332", "-work-shop", id+".jsonl"))
	require.NoError(t, err)
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/p/"+id+".jsonl", orig, 0o600))
	s, err := NewJSONLStore(fsys, "/p", Options{})
	require.NoError(t, err)
	forked, err := s.Fork(ctx, id, Stamp{})
	require.NoError(t, err)
	entries, err := s.Load(ctx, forked)
	require.NoError(t, err)
	require.Len(t, entries, 4)
	parent := ""
	for _, e := range entries {
		assert.Equal(t, forked, e.SessionID)
		assert.Equal(t, parent, e.Parent(), "one chain")
		assert.NotContains(t, string(e.Raw), id)
		parent = e.UUID
	}
	assert.Contains(t, string(entries[0].Raw), `"rowSource":"local"`)
	assert.Contains(t, string(entries[0].Raw), `"sentAtMs":`)
	assert.Contains(t, string(entries[1].Raw), `"requestedModel":`)
	r, err := Resume(ctx, s, forked)
	require.NoError(t, err)
	assert.Equal(t, "step:again", r.Messages[2].Text())
}

// countingFs counts the bytes read through every file it opens.
type countingFs struct {
	afero.Fs
	mu      sync.Mutex
	perFile map[string]int64
}

type countingFile struct {
	afero.File
	fs   *countingFs
	name string
}

func (c *countingFs) Open(name string) (afero.File, error) {
	f, err := c.Fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c, name: name}, nil
}

func (f *countingFile) add(n int) {
	f.fs.mu.Lock()
	f.fs.perFile[f.name] += int64(n)
	f.fs.mu.Unlock()
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.add(n)
	return n, err
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.add(n)
	return n, err
}

// sparseSessions writes n transcripts of size bytes each on the real disk:
// real entries in the first and last few KiB, a hole between (sparse, so
// 1,000 files of 1 MB cost almost no disk).
func sparseSessions(b testing.TB, n int, size int64) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "projects", "-work")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := NewUUID()
		stamp := Stamp{SessionID: id, Cwd: "/work", GitBranch: "main"}
		first := MessageEntry{Type: TypeUser, Message: Message{Role: "user", Content: mustJSON(fmt.Sprintf("session %d: fix the flaky test", i))}}.Encode(stamp)
		head := string(first.Raw) + "\n"
		tail := "\n" + string(metadataEntry(TypeCustomTitle, id, fmt.Sprintf("Session %d", i)).Raw) + "\n" + string(metadataEntry(TypeTag, id, "ci").Raw) + "\n"
		f, err := os.Create(filepath.Join(dir, id+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = f.WriteString(head)
		_, _ = f.WriteAt([]byte(tail), size-int64(len(tail)))
		f.Close()
	}
	return dir
}

// BenchmarkList lists 1,000 sessions of 1 MB each: it reports the most
// bytes read from one file (at most two 64 KiB windows) and x-floor, the
// time against a bare stat walk plus reading the same windows, in the
// same run.
func BenchmarkList(b *testing.B) {
	dir := sparseSessions(b, 1000, 1<<20)
	ctx := context.Background()
	s, err := NewJSONLStore(afero.NewOsFs(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var list, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		infos, err := s.List(ctx)
		list += time.Since(start)
		if err != nil || len(infos) != 1000 {
			b.Fatalf("listed %d sessions: %v", len(infos), err)
		}
		b.StopTimer()
		start = time.Now()
		fsys := afero.NewOsFs()
		_ = fswalk.Walk(ctx, fsys, dir, func(e fswalk.Entry) error {
			f, err := fsys.Open(e.Abs)
			if err != nil {
				return nil
			}
			info, _ := f.Stat()
			buf := make([]byte, windowBytes)
			_, _ = f.ReadAt(buf, 0)
			_, _ = f.ReadAt(buf, info.Size()-windowBytes)
			f.Close()
			return nil
		})
		floor += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	// The same listing through a filesystem that counts what it reads.
	cfs := &countingFs{Fs: afero.NewOsFs(), perFile: map[string]int64{}}
	cs, err := NewJSONLStore(cfs, dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.List(ctx); err != nil {
		b.Fatal(err)
	}
	var most int64
	for _, n := range cfs.perFile {
		most = max(most, n)
	}
	if most > 2*windowBytes {
		b.Fatalf("read %d bytes of one file", most)
	}
	b.ReportMetric(float64(most), "bytes-read/file")
	b.ReportMetric(float64(list)/float64(floor), "x-floor")
}

// heapPeak samples the live heap while fn runs and returns the peak above
// the heap before it.
func heapPeak(fn func()) int64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := int64(sample[0].Value.Uint64())
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := int64(s[0].Value.Uint64()); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return peak.Load() - base
}

// BenchmarkResume50MB resumes a 50 MB transcript (no compact boundary, so
// all of it counts) and reports the peak live heap over the file's size:
// it must stay under 2.
func BenchmarkResume50MB(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "p")
	s, err := NewJSONLStore(afero.NewOsFs(), dir, Options{BatchEntries: 1 << 20, BatchBytes: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	id := NewUUID()
	stamp := Stamp{SessionID: id, Cwd: "/work"}
	text := strings.Repeat("a line of the conversation about the flaky checkout test. ", 80)
	parent := ""
	for i := 0; i < 10_400; i++ {
		typ, role := TypeUser, "user"
		if i%2 == 1 {
			typ, role = TypeAssistant, "assistant"
		}
		e := MessageEntry{Type: typ, Parent: parent, Message: Message{ID: fmt.Sprintf("msg_%d", i), Role: role,
			Content: mustJSON([]Block{{Type: "text", Text: fmt.Sprintf("%d %s", i, text)}})}}.Encode(stamp)
		parent = e.UUID
		if err := s.Append(ctx, id, e); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(s.Path(id))
	if err != nil {
		b.Fatal(err)
	}
	var worst float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var r *Resumed
		peak := heapPeak(func() {
			var err error
			if r, err = Resume(ctx, s, id); err != nil {
				b.Fatal(err)
			}
		})
		if len(r.Messages) != 10_400 {
			b.Fatalf("resumed %d messages", len(r.Messages))
		}
		worst = max(worst, float64(peak)/float64(info.Size()))
	}
	if worst >= 2 {
		b.Fatalf("peak heap %.2fx the file", worst)
	}
	b.ReportMetric(float64(info.Size())/1e6, "file-MB")
	b.ReportMetric(worst, "x-file-size")
}

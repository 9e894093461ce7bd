package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func echoTool() llm.Tool {
	return llm.Tool{
		Spec: llm.ToolSpec{Name: "echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Call: func(_ context.Context, in json.RawMessage) (string, error) { return "echo " + string(in), nil },
	}
}

func failTool() llm.Tool {
	return llm.Tool{
		Spec: llm.ToolSpec{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Call: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("disk is full") },
	}
}

func TestFinalAnswerOnFirstTurn(t *testing.T) {
	m := llmtest.New(llmtest.Text("nothing to save"))
	res, err := llm.RunAgent(context.Background(), m, llm.Task{Purpose: llm.PurposeExtractMemories, System: "sys", Prompt: "go", Tools: []llm.Tool{echoTool()}})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Turns)
	assert.Equal(t, "nothing to save", res.Final)
	assert.Empty(t, res.ToolCalls)
	assert.Equal(t, llm.Usage{InputTokens: 10, OutputTokens: 5}, res.Usage)
	reqs := m.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, llm.PurposeExtractMemories, reqs[0].Purpose)
	assert.Equal(t, "sys", reqs[0].System)
	assert.Equal(t, "echo", reqs[0].Tools[0].Name)
	assert.Equal(t, "go", reqs[0].Messages[0].Text())
}

func TestToolsAcrossTurns(t *testing.T) {
	m := llmtest.New(
		llmtest.ToolUse("t1", "echo", map[string]string{"a": "1"}),
		llmtest.ToolUse("t2", "echo", map[string]string{"b": "2"}),
		llmtest.Text("done"),
	)
	res, err := llm.RunAgent(context.Background(), m, llm.Task{Prompt: "go", Tools: []llm.Tool{echoTool()}})
	require.NoError(t, err)
	assert.Equal(t, 3, res.Turns)
	require.Len(t, res.ToolCalls, 2)
	assert.Equal(t, `echo {"a":"1"}`, res.ToolCalls[0].Output)
	assert.Equal(t, llm.Usage{InputTokens: 50, OutputTokens: 21}, res.Usage)
	// The third request carries the whole task transcript: prompt, call,
	// result, call, result.
	reqs := m.Requests()
	require.Len(t, reqs, 3)
	msgs := reqs[2].Messages
	require.Len(t, msgs, 5)
	assert.Equal(t, llm.BlockToolResult, msgs[2].Content[0].Type)
	assert.Equal(t, "t1", msgs[2].Content[0].ToolUseID)
	assert.Equal(t, `echo {"b":"2"}`, msgs[4].Content[0].Text)
	ids := map[string]bool{}
	for _, msg := range res.Messages {
		assert.NotEmpty(t, msg.ID)
		assert.False(t, ids[msg.ID], "message IDs are unique")
		ids[msg.ID] = true
	}
}

func TestTurnLimit(t *testing.T) {
	m := llmtest.New()
	for i := 0; i < 10; i++ {
		m.Add(llmtest.ToolUse("t", "echo", map[string]int{"i": i}))
	}
	res, err := llm.RunAgent(context.Background(), m, llm.Task{Prompt: "go", Tools: []llm.Tool{echoTool()}, MaxTurns: 3})
	require.ErrorIs(t, err, llm.ErrMaxTurns)
	assert.Equal(t, 3, res.Turns)
	assert.Len(t, res.ToolCalls, 3)
	assert.Equal(t, 7, m.Remaining())

	m = llmtest.New()
	for i := 0; i < 10; i++ {
		m.Add(llmtest.ToolUse("t", "echo", map[string]int{"i": i}))
	}
	res, err = llm.RunAgent(context.Background(), m, llm.Task{Prompt: "go", Tools: []llm.Tool{echoTool()}})
	require.ErrorIs(t, err, llm.ErrMaxTurns)
	assert.Equal(t, 5, res.Turns, "the default bound")
}

func TestDeniedToolModelContinues(t *testing.T) {
	m := llmtest.New(
		llmtest.ToolUse("t1", "echo", map[string]string{"path": "/etc/passwd"}),
		llmtest.ToolUse("t2", "echo", map[string]string{"path": "/mem/a.md"}),
		llmtest.Text("ok"),
	)
	ran := 0
	tool := echoTool()
	inner := tool.Call
	tool.Call = func(ctx context.Context, in json.RawMessage) (string, error) { ran++; return inner(ctx, in) }
	perm := func(_ context.Context, c llm.ToolCall) llm.Decision {
		if strings.Contains(string(c.Input), "/etc") {
			return llm.Deny("only the memory directory is allowed")
		}
		return llm.Allow()
	}
	res, err := llm.RunAgent(context.Background(), m, llm.Task{Prompt: "go", Tools: []llm.Tool{tool}, Permission: perm})
	require.NoError(t, err)
	assert.Equal(t, 1, ran, "the denied call never ran")
	require.Len(t, res.ToolCalls, 2)
	assert.True(t, res.ToolCalls[0].Denied)
	assert.Equal(t, "only the memory directory is allowed", res.ToolCalls[0].Reason)
	second := m.Requests()[1].Messages[2].Content[0]
	assert.True(t, second.IsError)
	assert.Equal(t, "Permission denied: only the memory directory is allowed", second.Text)
	assert.False(t, res.ToolCalls[1].Denied)
}

func TestToolErrorAndUnknownTool(t *testing.T) {
	m := llmtest.New(
		llmtest.ToolUse("t1", "fail", map[string]string{}),
		llmtest.ToolUse("t2", "nope", map[string]string{}),
		llmtest.Text("gave up"),
	)
	res, err := llm.RunAgent(context.Background(), m, llm.Task{Prompt: "go", Tools: []llm.Tool{failTool()}})
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 2)
	assert.True(t, res.ToolCalls[0].Failed)
	assert.Equal(t, "Error: disk is full", res.ToolCalls[0].Output)
	assert.True(t, res.ToolCalls[1].Failed)
	assert.Contains(t, res.ToolCalls[1].Output, `no tool named "nope"`)
	assert.True(t, m.Requests()[1].Messages[2].Content[0].IsError)
}

func TestModelError(t *testing.T) {
	apiErr := &llm.APIError{StatusCode: 529, Type: "overloaded_error", Message: "busy"}
	m := llmtest.New(llmtest.ToolUse("t1", "echo", map[string]string{}), llmtest.Fail(apiErr))
	res, err := llm.RunAgent(context.Background(), m, llm.Task{Prompt: "go", Tools: []llm.Tool{echoTool()}})
	var got *llm.APIError
	require.ErrorAs(t, err, &got)
	assert.Equal(t, 529, got.StatusCode)
	assert.True(t, got.Retryable())
	assert.Equal(t, 2, res.Turns)
	assert.Len(t, res.ToolCalls, 1)

	_, err = llm.RunAgent(context.Background(), nil, llm.Task{})
	assert.ErrorIs(t, err, llm.ErrNoModel)
}

func TestCancelDuringModelCall(t *testing.T) {
	before := runtime.NumGoroutine()
	started := make(chan struct{})
	m := llmtest.New(llmtest.Step{Block: true, Started: started})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := llm.RunAgent(ctx, m, llm.Task{Prompt: "go"})
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("RunAgent did not return after cancel")
	}
	waitGoroutines(t, before)
}

func TestCancelDuringToolCall(t *testing.T) {
	before := runtime.NumGoroutine()
	started := make(chan struct{})
	slow := llm.Tool{
		Spec: llm.ToolSpec{Name: "slow", InputSchema: json.RawMessage(`{}`)},
		Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		},
	}
	m := llmtest.New(llmtest.ToolUse("t1", "slow", map[string]string{}), llmtest.Text("never"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var res llm.Result
	go func() {
		var err error
		res, err = llm.RunAgent(ctx, m, llm.Task{Prompt: "go", Tools: []llm.Tool{slow}})
		done <- err
	}()
	<-started
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, 1, res.Turns)
	assert.Equal(t, 1, m.Remaining(), "no model call after cancellation")
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	for i := 0; i < 200 && runtime.NumGoroutine() > want; i++ {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), want, "goroutines left behind")
}

func TestMessageHelpers(t *testing.T) {
	msg := llm.Message{Content: []llm.Block{llm.TextBlock("a"), llm.ToolUseBlock("1", "x", nil), llm.TextBlock("b")}}
	assert.Equal(t, "a\nb", msg.Text())
	assert.Len(t, msg.ToolUses(), 1)
	assert.Equal(t, "llm: API error 400 invalid_request_error: bad", (&llm.APIError{StatusCode: 400, Type: "invalid_request_error", Message: "bad"}).Error())
	assert.False(t, (&llm.APIError{StatusCode: 400}).Retryable())
	resp, err := llm.ModelFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Content: []llm.Block{llm.TextBlock("hi")}}}, nil
	}).Generate(context.Background(), llm.Request{})
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Text())
}

func TestScriptExhausted(t *testing.T) {
	_, err := llm.RunAgent(context.Background(), llmtest.New(), llm.Task{Prompt: "go"})
	assert.ErrorIs(t, err, llmtest.ErrScriptExhausted)
}

func TestToolCallFields(t *testing.T) {
	in, err := llm.ToolCall{Name: "Write", Input: json.RawMessage(`{"file_path":"/m/team/x.md","n":3}`)}.Fields()
	if err != nil || in["file_path"] != "/m/team/x.md" || in["n"] != float64(3) {
		t.Fatalf("Fields = %v, %v", in, err)
	}
	if in, err := (llm.ToolCall{Name: "List"}).Fields(); err != nil || len(in) != 0 {
		t.Fatalf("no input: %v, %v; want an empty map", in, err)
	}
	if _, err := (llm.ToolCall{Name: "Write", Input: json.RawMessage(`[1,2]`)}).Fields(); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("an array input gave %v", err)
	}
}

func TestMessagesAfter(t *testing.T) {
	msgs := []llm.Message{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	assert.Equal(t, msgs[2:], llm.MessagesAfter(msgs, "b"))
	assert.Empty(t, llm.MessagesAfter(msgs, "c"))
	assert.Equal(t, msgs, llm.MessagesAfter(msgs, ""))
	assert.Equal(t, msgs, llm.MessagesAfter(msgs, "gone"), "a cursor no longer present means everything")
}

func TestRenderTranscript(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("fix the build")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("looking"), llm.ToolUseBlock("1", "Read", json.RawMessage(`{"file_path":"/w/main.go"}`)), llm.ToolUseBlock("2", "Think", nil)}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("1", strings.Repeat("x", 600), false)}},
	}
	got := llm.RenderTranscript(msgs, llm.TranscriptOptions{})
	assert.Equal(t, "user: fix the build\n\nassistant: looking\n[used Read on /w/main.go]\n[used Think]\n\nuser: [result: "+strings.Repeat("x", 500)+" ...]\n", got)
	assert.NotContains(t, llm.RenderTranscript(msgs, llm.TranscriptOptions{ToolResultBytes: -1}), "[result")
	long := []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(strings.Repeat("é", 10_000))}}}
	cut := llm.RenderTranscript(long, llm.TranscriptOptions{MaxBytes: 1000})
	assert.True(t, strings.HasPrefix(cut, "[earlier messages left out]\n"))
	assert.LessOrEqual(t, len(cut), 1000+40)
	assert.True(t, strings.HasSuffix(cut, "é\n"), "never splits a character")
}

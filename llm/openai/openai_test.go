package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/llm/openai"
	"github.com/agentmem-sdk/agentmem/recall"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// standIn is a stand-in for the Chat Completions API: it records each
// request body and answers with the given status and body.
func standIn(t *testing.T, status int, reply string) (*httptest.Server, *[]map[string]any) {
	return standInAt(t, "/chat/completions", status, reply)
}

func standInAt(t *testing.T, path string, status int, reply string) (*httptest.Server, *[]map[string]any) {
	t.Helper()
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, path, r.URL.Path)
		assert.Equal(t, "Bearer test-key", r.Header.Get("Authorization"))
		raw, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body))
		got = append(got, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(reply))
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func newModel(t *testing.T, srv *httptest.Server) *openai.Model {
	t.Helper()
	m, err := openai.New(openai.Options{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1,
		Models: map[llm.Purpose]string{llm.PurposeMemoryRelevance: "gpt-5-nano"}})
	require.NoError(t, err)
	return m
}

const textReply = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-5-mini-2026","choices":[{"index":0,"message":{"role":"assistant","content":"Deploys freeze on Fridays."},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`

func TestText(t *testing.T) {
	srv, got := standIn(t, 200, textReply)
	resp, err := newModel(t, srv).Generate(context.Background(), llm.Request{System: "You keep memory.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("When do deploys freeze?")}}}, MaxTokens: 100})
	require.NoError(t, err)
	assert.Equal(t, "Deploys freeze on Fridays.", resp.Message.Text())
	assert.Equal(t, llm.RoleAssistant, resp.Message.Role)
	assert.Equal(t, llm.StopEndTurn, resp.StopReason)
	assert.Equal(t, llm.Usage{InputTokens: 42, OutputTokens: 7}, resp.Usage)
	assert.Equal(t, "gpt-5-mini-2026", resp.Model)
	require.Len(t, *got, 1)
	body := (*got)[0]
	assert.Equal(t, "gpt-5-mini", body["model"])
	assert.Equal(t, float64(100), body["max_completion_tokens"])
	assert.Equal(t, []any{
		map[string]any{"role": "system", "content": "You keep memory."},
		map[string]any{"role": "user", "content": "When do deploys freeze?"},
	}, body["messages"])
}

func TestToolsAndHistory(t *testing.T) {
	srv, got := standIn(t, 200, `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-5-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"Write","arguments":"{\"file_path\":\"/m/deploy.md\",\"content\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)
	resp, err := newModel(t, srv).Generate(context.Background(), llm.Request{
		Purpose: llm.PurposeExtractMemories,
		Tools:   []llm.ToolSpec{{Name: "Read", Description: "Read a file", InputSchema: schema}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Save what matters.")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Reading first."), llm.ToolUseBlock("call_1", "Read", json.RawMessage(`{"file_path":"/m/MEMORY.md"}`))}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("call_1", "no such file", true), llm.TextBlock("Go on.")}},
		}})
	require.NoError(t, err)
	assert.Equal(t, llm.StopToolUse, resp.StopReason)
	uses := resp.Message.ToolUses()
	require.Len(t, uses, 1)
	assert.Equal(t, "call_2", uses[0].ToolUseID)
	assert.Equal(t, "Write", uses[0].ToolName)
	assert.JSONEq(t, `{"file_path":"/m/deploy.md","content":"x"}`, string(uses[0].Input))
	body := (*got)[0]
	assert.Equal(t, []any{
		map[string]any{"role": "user", "content": "Save what matters."},
		map[string]any{"role": "assistant", "content": "Reading first.", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "Read", "arguments": `{"file_path":"/m/MEMORY.md"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "Error: no such file"},
		map[string]any{"role": "user", "content": "Go on."},
	}, body["messages"], "a tool result answers its call before the turn's text")
	assert.Equal(t, []any{map[string]any{"type": "function", "function": map[string]any{"name": "Read", "description": "Read a file",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"file_path": map[string]any{"type": "string"}}, "required": []any{"file_path"}}}}}, body["tools"])
}

func TestStructuredOutput(t *testing.T) {
	srv, got := standIn(t, 200, `{"id":"c3","object":"chat.completion","created":1,"model":"gpt-5-nano","choices":[{"index":0,"message":{"role":"assistant","content":"{\"selected_memories\":[\"deploy.md\"]}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	schema := json.RawMessage(`{"type":"object","properties":{"selected_memories":{"type":"array","items":{"type":"string"}}},"required":["selected_memories"],"additionalProperties":false}`)
	resp, err := newModel(t, srv).Generate(context.Background(), llm.Request{Purpose: llm.PurposeMemoryRelevance, OutputSchema: schema,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Which memories?")}}}})
	require.NoError(t, err)
	var out struct {
		Selected []string `json:"selected_memories"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Message.Text()), &out))
	assert.Equal(t, []string{"deploy.md"}, out.Selected)
	body := (*got)[0]
	assert.Equal(t, "gpt-5-nano", body["model"], "a purpose routes to its model")
	rf := body["response_format"].(map[string]any)
	assert.Equal(t, "json_schema", rf["type"])
	js := rf["json_schema"].(map[string]any)
	assert.Equal(t, openai.OutputSchemaName, js["name"])
	assert.Equal(t, "object", js["schema"].(map[string]any)["type"])
}

func TestStopReasons(t *testing.T) {
	for finish, want := range map[string]llm.StopReason{"length": llm.StopMaxTokens, "content_filter": llm.StopRefusal, "stop": llm.StopEndTurn} {
		srv, _ := standIn(t, 200, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"cut"},"finish_reason":"`+finish+`"}],"usage":{}}`)
		resp, err := newModel(t, srv).Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}})
		require.NoError(t, err)
		assert.Equal(t, want, resp.StopReason, finish)
	}
	srv, _ := standIn(t, 200, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{}}`)
	resp, err := newModel(t, srv).Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}})
	require.NoError(t, err)
	assert.Equal(t, llm.StopRefusal, resp.StopReason)
	assert.Equal(t, "I can't help with that.", resp.Message.Text())
}

func TestAPIErrors(t *testing.T) {
	srv, _ := standIn(t, 401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	_, err := newModel(t, srv).Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}})
	var apiErr *llm.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 401, apiErr.StatusCode)
	assert.Equal(t, "invalid_request_error", apiErr.Type)
	assert.Equal(t, "Incorrect API key provided.", apiErr.Message)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, _ := standIn(t, 200, textReply)
	_, err = newModel(t, ok).Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestRequestValidation(t *testing.T) {
	_, err := openai.New(openai.Options{})
	assert.ErrorIs(t, err, openai.ErrNoAPIKey)
	srv, got := standIn(t, 200, textReply)
	m := newModel(t, srv)
	for name, req := range map[string]llm.Request{
		"provider tool":         {Tools: []llm.ToolSpec{{Name: "memory", Type: "memory_20250818"}}},
		"bad role":              {Messages: []llm.Message{{Role: "system", Content: []llm.Block{llm.TextBlock("x")}}}},
		"tool use in user turn": {Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.ToolUseBlock("a", "b", nil)}}}},
		"bad schema":            {Tools: []llm.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`[1]`)}}},
	} {
		_, err := m.Generate(context.Background(), req)
		assert.Error(t, err, name)
	}
	assert.Empty(t, *got, "a refused request sends nothing")
}

// TestAgentLoop runs llm.RunAgent's tool loop through the adapter: a tool
// call, its result sent back, then the final text.
func TestAgentLoop(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		if calls == 1 {
			_, _ = w.Write([]byte(`{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\"s\":\"hi\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`))
			return
		}
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		last := body.Messages[len(body.Messages)-1]
		assert.Equal(t, "tool", last["role"])
		assert.Equal(t, "echo: hi", last["content"])
		_, _ = w.Write([]byte(textReply))
	}))
	defer srv.Close()
	echo := llm.Tool{Spec: llm.ToolSpec{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`)},
		Call: func(_ context.Context, in json.RawMessage) (string, error) {
			var v struct{ S string }
			if err := json.Unmarshal(in, &v); err != nil {
				return "", err
			}
			return "echo: " + v.S, nil
		}}
	res, err := llm.RunAgent(context.Background(), newModel(t, srv), llm.Task{Purpose: llm.PurposeExtractMemories, Prompt: "say hi", Tools: []llm.Tool{echo}, MaxTurns: 3})
	require.NoError(t, err)
	assert.Equal(t, 2, calls)
	assert.Equal(t, "Deploys freeze on Fridays.", res.Final)
	assert.Equal(t, llm.Usage{InputTokens: 45, OutputTokens: 9}, res.Usage)
}

// TestEmbed: a Model embeds through the Embeddings API, in the order of
// the texts whatever the reply's order, and is a recall.Embedder.
func TestEmbed(t *testing.T) {
	srv, got := standInAt(t, "/embeddings", 200, `{"object":"list","model":"text-embedding-3-small","data":[`+
		`{"object":"embedding","index":1,"embedding":[0,1]},{"object":"embedding","index":0,"embedding":[1,0.5]}],"usage":{"prompt_tokens":4,"total_tokens":4}}`)
	m, err := openai.New(openai.Options{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1, EmbeddingDimensions: 2})
	require.NoError(t, err)
	var e recall.Embedder = m
	vecs, err := e.Embed(context.Background(), []string{"deploy window", "pager"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 0.5}, {0, 1}}, vecs)
	require.Len(t, *got, 1)
	assert.Equal(t, "text-embedding-3-small", (*got)[0]["model"])
	assert.Equal(t, []any{"deploy window", "pager"}, (*got)[0]["input"])
	assert.Equal(t, float64(2), (*got)[0]["dimensions"])

	short, _ := standInAt(t, "/embeddings", 200, `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[1]}],"usage":{}}`)
	m2, err := openai.New(openai.Options{APIKey: "test-key", BaseURL: short.URL, MaxRetries: -1})
	require.NoError(t, err)
	_, err = m2.Embed(context.Background(), []string{"a", "b"})
	assert.ErrorContains(t, err, "no vector for text 1")

	down, _ := standInAt(t, "/embeddings", 429, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
	m3, err := openai.New(openai.Options{APIKey: "test-key", BaseURL: down.URL, MaxRetries: -1})
	require.NoError(t, err)
	_, err = m3.Embed(context.Background(), []string{"a"})
	var apiErr *llm.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 429, apiErr.StatusCode)
}

// chatStandIn answers Chat Completions calls with replies, in the API's
// shape (as server-sent chunks when the request asks to stream), and reads
// every request back into an llm.Request.
func chatStandIn(t *testing.T, replies []llm.Response) (llm.Model, func() []llm.Request) {
	return chatStandInWith(t, replies, openai.Options{})
}

func chatStandInWith(t *testing.T, replies []llm.Response, cfg openai.Options) (llm.Model, func() []llm.Request) {
	var mu sync.Mutex
	var seen []llm.Request
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, readChatRequest(t, raw))
		i := n
		n++
		mu.Unlock()
		if i >= len(replies) {
			http.Error(w, `{"error":{"message":"no reply left","type":"server_error"}}`, 500)
			return
		}
		if wantsStream(raw) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, chunk := range chatChunks(replies[i]) {
				_, _ = w.Write([]byte("data: " + string(chunk) + "\n\n"))
			}
			_, _ = w.Write([]byte("data: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(chatReply(replies[i]))
	}))
	t.Cleanup(srv.Close)
	cfg.APIKey, cfg.BaseURL, cfg.MaxRetries = "test-key", srv.URL, -1
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, func() []llm.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]llm.Request(nil), seen...)
	}
}

func wantsStream(raw []byte) bool {
	var body struct {
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(raw, &body)
	return body.Stream && body.StreamOptions.IncludeUsage
}

// chatChunks is r as the API streams it: the text in pieces, each tool
// call's arguments in two pieces, the finish reason, then the usage.
func chatChunks(r llm.Response) [][]byte {
	var out [][]byte
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "stand-in",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		out = append(out, b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, piece := range strings.SplitAfter(r.Message.Text(), " ") {
		if piece != "" {
			chunk(map[string]any{"content": piece}, nil)
		}
	}
	for i, u := range r.Message.ToolUses() {
		args := string(u.Input)
		half := len(args) / 2
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": u.ToolUseID, "type": "function",
			"function": map[string]any{"name": u.ToolName, "arguments": args[:half]}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": args[half:]}}}}, nil)
	}
	chunk(map[string]any{}, finishReason(r.StopReason))
	usage, _ := json.Marshal(map[string]any{"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "stand-in",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": r.Usage.InputTokens, "completion_tokens": r.Usage.OutputTokens}})
	return append(out, usage)
}

func finishReason(s llm.StopReason) string {
	finish := map[llm.StopReason]string{llm.StopToolUse: "tool_calls", llm.StopMaxTokens: "length", llm.StopRefusal: "content_filter"}[s]
	if finish == "" {
		finish = "stop"
	}
	return finish
}

func chatReply(r llm.Response) []byte {
	msg := map[string]any{"role": "assistant", "content": nil}
	if text := r.Message.Text(); text != "" {
		msg["content"] = text
	}
	var calls []any
	for _, u := range r.Message.ToolUses() {
		calls = append(calls, map[string]any{"id": u.ToolUseID, "type": "function", "function": map[string]any{"name": u.ToolName, "arguments": string(u.Input)}})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	finish := finishReason(r.StopReason)
	out, _ := json.Marshal(map[string]any{"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "stand-in",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": r.Usage.InputTokens, "completion_tokens": r.Usage.OutputTokens}})
	return out
}

// readChatRequest reads a Chat Completions request back into llm terms:
// tool messages become tool results of the next user turn.
func readChatRequest(t *testing.T, raw []byte) llm.Request {
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Errorf("the request is not JSON: %v", err)
	}
	var req llm.Request
	userTurn := func() *llm.Message {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleUser {
			return &req.Messages[n-1]
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser})
		return &req.Messages[len(req.Messages)-1]
	}
	for _, m := range body.Messages {
		text, _ := m.Content.(string)
		switch m.Role {
		case "system":
			req.System = text
		case "user":
			u := userTurn()
			u.Content = append(u.Content, llm.TextBlock(text))
		case "tool":
			u := userTurn()
			isErr := strings.HasPrefix(text, "Error: ")
			u.Content = append(u.Content, llm.ToolResultBlock(m.ToolCallID, strings.TrimPrefix(text, "Error: "), isErr))
		case "assistant":
			a := llm.Message{Role: llm.RoleAssistant}
			if text != "" {
				a.Content = append(a.Content, llm.TextBlock(text))
			}
			for _, c := range m.ToolCalls {
				a.Content = append(a.Content, llm.ToolUseBlock(c.ID, c.Function.Name, json.RawMessage(c.Function.Arguments)))
			}
			req.Messages = append(req.Messages, a)
		}
	}
	for _, tool := range body.Tools {
		req.Tools = append(req.Tools, llm.ToolSpec{Name: tool.Function.Name})
	}
	return req
}

func TestConformance(t *testing.T) {
	llmtest.Conformance(t, llmtest.Provider{New: chatStandIn})
}

// TestConformanceStreaming runs the same suite with Options.Stream: the
// replies come as server-sent chunks and must assemble to the same results.
func TestConformanceStreaming(t *testing.T) {
	var pieces []string
	var mu sync.Mutex
	llmtest.Conformance(t, llmtest.Provider{New: func(t *testing.T, replies []llm.Response) (llm.Model, func() []llm.Request) {
		return chatStandInWith(t, replies, openai.Options{Stream: true, OnText: func(p string) { mu.Lock(); pieces = append(pieces, p); mu.Unlock() }})
	}})
	mu.Lock()
	defer mu.Unlock()
	if len(pieces) < 2 {
		t.Errorf("OnText saw %d pieces of streamed text, want the text piece by piece", len(pieces))
	}
}

// TestStreamCut: a stream that ends before its finish reason is an error,
// not a shorter reply.
func TestStreamCut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Half a "},"finish_reason":null}]}` + "\n\n"))
	}))
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Options{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}}})
	if !errors.Is(err, openai.ErrStreamCut) {
		t.Fatalf("a cut stream gave %v, want ErrStreamCut", err)
	}
}

package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
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

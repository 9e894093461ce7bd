package anthropic_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "record the request bodies the adapter sends into testdata")

// recording is one request/response pair under testdata/.
type recording struct {
	Request  json.RawMessage `json:"request,omitempty"`
	Status   int             `json:"status"`
	Response json.RawMessage `json:"response"`
}

// replay serves the recorded response of name and checks that the request
// body equals the recorded one (as JSON values).
func replay(t *testing.T, name string) (*httptest.Server, *int) {
	t.Helper()
	path := filepath.Join("testdata", name+".json")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var rec recording
	require.NoError(t, json.Unmarshal(raw, &rec))
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		assert.Equal(t, "/v1/messages", r.URL.Path)
		assert.True(t, r.Header.Get("X-Api-Key") == "test-key" || r.Header.Get("Authorization") == "Bearer test-key",
			"the API key must be sent")
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		if *update {
			var pretty any
			require.NoError(t, json.Unmarshal(body, &pretty))
			rec.Request, _ = json.MarshalIndent(pretty, "  ", "  ")
			out, _ := json.MarshalIndent(rec, "", "  ")
			require.NoError(t, os.WriteFile(path, append(out, '\n'), 0o644))
		} else {
			require.NotEmpty(t, rec.Request, "no recorded request in %s; run with -update", path)
			var want, got any
			require.NoError(t, json.Unmarshal(rec.Request, &want))
			require.NoError(t, json.Unmarshal(body, &got))
			assert.Equal(t, want, got, "request body differs from %s", path)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Status)
		_, _ = w.Write(rec.Response)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func newModel(t *testing.T, srv *httptest.Server, mutate func(*anthropic.Options)) *anthropic.Model {
	t.Helper()
	cfg := anthropic.Options{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1,
		Models: map[llm.Purpose]string{llm.PurposeMemoryRelevance: "claude-haiku-4-5"}}
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := anthropic.New(cfg)
	require.NoError(t, err)
	return m
}

var relevanceSchema = json.RawMessage(`{"type":"object","properties":{"selected_memories":{"type":"array","items":{"type":"string"}}},"required":["selected_memories"],"additionalProperties":false}`)

func TestText(t *testing.T) {
	srv, _ := replay(t, "text")
	resp, err := newModel(t, srv, nil).Generate(context.Background(), llm.Request{
		Purpose:   llm.PurposeExtractMemories,
		System:    "You extract memories.",
		Messages:  []llm.Message{{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Anything to save?")}}},
		MaxTokens: 512,
	})
	require.NoError(t, err)
	assert.Equal(t, "Nothing worth saving.", resp.Text())
	assert.Equal(t, "msg_01text", resp.Message.ID)
	assert.Equal(t, llm.RoleAssistant, resp.Message.Role)
	assert.Equal(t, llm.StopEndTurn, resp.StopReason)
	assert.Equal(t, llm.Usage{InputTokens: 1200, OutputTokens: 7}, resp.Usage)
	assert.Equal(t, "claude-sonnet-4-5", resp.Model)
}

func TestToolsAndHistory(t *testing.T) {
	srv, _ := replay(t, "tools")
	req := llm.Request{
		Purpose: llm.PurposeMemoryRelevance, // routed to the small model
		System:  "sys",
		Tools: []llm.ToolSpec{{Name: "Write", Description: "Write a file",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"],"additionalProperties":false}`)}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Save the policy.")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("toolu_01", "Write", json.RawMessage(`{"file_path":"/etc/x","content":"y"}`))}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("toolu_01", "Permission denied: only the memory directory", true)}},
		},
	}
	resp, err := newModel(t, srv, nil).Generate(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, llm.StopToolUse, resp.StopReason)
	assert.Equal(t, "I will save the testing policy.", resp.Text())
	uses := resp.Message.ToolUses()
	require.Len(t, uses, 1)
	assert.Equal(t, "toolu_02", uses[0].ToolUseID)
	assert.Equal(t, "Write", uses[0].ToolName)
	assert.JSONEq(t, `{"file_path":"/m/testing_policy.md","content":"---\nname: Testing policy\n---\nUse the real DB.\n"}`, string(uses[0].Input))
}

func TestStructuredForcedTool(t *testing.T) {
	srv, _ := replay(t, "structured_tool")
	resp, err := newModel(t, srv, nil).Generate(context.Background(), llm.Request{
		Purpose:      llm.PurposeMemoryRelevance,
		System:       "Select memories.",
		Messages:     []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Query: how do we test?")}}},
		OutputSchema: relevanceSchema,
		MaxTokens:    256,
	})
	require.NoError(t, err)
	var got struct {
		Selected []string `json:"selected_memories"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Text()), &got))
	assert.Equal(t, []string{"testing_policy.md", "user_role.md"}, got.Selected)
	assert.Equal(t, llm.StopEndTurn, resp.StopReason)
	assert.Empty(t, resp.Message.ToolUses())
}

func TestStructuredJSONOutput(t *testing.T) {
	srv, _ := replay(t, "structured_json")
	resp, err := newModel(t, srv, func(c *anthropic.Options) { c.Structured = anthropic.StructuredJSONOutput; c.Models = nil }).
		Generate(context.Background(), llm.Request{
			Purpose:      llm.PurposeMemoryRelevance,
			Messages:     []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Query: hello")}}},
			OutputSchema: relevanceSchema,
			MaxTokens:    256,
		})
	require.NoError(t, err)
	assert.JSONEq(t, `{"selected_memories":[]}`, resp.Text())
}

func TestMaxTokensStop(t *testing.T) {
	srv, _ := replay(t, "max_tokens")
	resp, err := newModel(t, srv, func(c *anthropic.Options) { c.MaxTokens = 16 }).Generate(context.Background(), llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Describe the memory directory.")}}},
	})
	require.NoError(t, err)
	assert.Equal(t, llm.StopMaxTokens, resp.StopReason)
}

func TestAPIErrors(t *testing.T) {
	for name, want := range map[string]llm.APIError{
		"rate_limited": {StatusCode: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit"},
		"invalid":      {StatusCode: 400, Type: "invalid_request_error", Message: "max_tokens: must be greater than 0"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, calls := replay(t, name)
			_, err := newModel(t, srv, nil).Generate(context.Background(), llm.Request{
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}},
			})
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, want, *apiErr)
			assert.Equal(t, want.StatusCode == 429, apiErr.Retryable())
			assert.Equal(t, 1, *calls, "retries disabled in tests")
		})
	}
}

func TestRequestValidation(t *testing.T) {
	_, err := anthropic.New(anthropic.Options{})
	assert.ErrorIs(t, err, anthropic.ErrNoAPIKey)
	m, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "system", Content: []llm.Block{llm.TextBlock("x")}}}})
	assert.ErrorContains(t, err, "unknown role")
	_, err = m.Generate(context.Background(), llm.Request{Tools: []llm.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}})
	assert.ErrorContains(t, err, "not a JSON object")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestProviderDefinedMemoryTool(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(raw, &body))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`))
	}))
	defer srv.Close()
	m := newModel(t, srv, nil)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}}
	_, err := m.Generate(context.Background(), llm.Request{Messages: msgs, Tools: []llm.ToolSpec{{Name: "memory", Type: "memory_20250818"}}})
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"type": "memory_20250818", "name": "memory"}}, body["tools"], "sent by type and name only")

	body = nil
	for _, spec := range []llm.ToolSpec{{Name: "memory", Type: "bash_20250124"}, {Name: "notes", Type: "memory_20250818"}} {
		_, err = m.Generate(context.Background(), llm.Request{Messages: msgs, Tools: []llm.ToolSpec{spec}})
		assert.Error(t, err, "%+v", spec)
	}
	assert.Nil(t, body, "a refused tool never reaches the API")
}

// TestCacheUsage: the prompt cache's reads and writes count in the usage,
// and InputTokens is every input token, cached ones included.
func TestCacheUsage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":50,"output_tokens":7,"cache_read_input_tokens":900,"cache_creation_input_tokens":100}}`))
	}))
	defer srv.Close()
	resp, err := newModel(t, srv, nil).Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("x")}}}})
	require.NoError(t, err)
	assert.Equal(t, llm.Usage{InputTokens: 1050, OutputTokens: 7, CacheReadTokens: 900, CacheWriteTokens: 100}, resp.Usage)
}

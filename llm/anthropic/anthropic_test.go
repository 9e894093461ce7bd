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
	"strings"
	"sync"
	"testing"

	"github.com/agentmem-sdk/agentmem/extract"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
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

// messagesStandIn answers Messages API calls with replies, in the API's
// shape, and reads every request back into an llm.Request.
func messagesStandIn(t *testing.T, replies []llm.Response) (llm.Model, func() []llm.Request) {
	var mu sync.Mutex
	var seen []llm.Request
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req, forced := readMessagesRequest(t, raw)
		mu.Lock()
		seen = append(seen, req)
		i := n
		n++
		mu.Unlock()
		if i >= len(replies) {
			http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no reply left"}}`, 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(messagesReply(replies[i], forced))
	}))
	t.Cleanup(srv.Close)
	m, err := anthropic.New(anthropic.Options{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m, func() []llm.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]llm.Request(nil), seen...)
	}
}

// messagesReply writes a reply; with a forced tool, the text is the tool's
// input, as a model answers a forced structured-output call.
func messagesReply(r llm.Response, forced string) []byte {
	var content []any
	for _, b := range r.Message.Content {
		switch {
		case b.Type == llm.BlockText && forced != "":
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_s", "name": forced, "input": json.RawMessage(b.Text)})
		case b.Type == llm.BlockText:
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		case b.Type == llm.BlockToolUse:
			content = append(content, map[string]any{"type": "tool_use", "id": b.ToolUseID, "name": b.ToolName, "input": b.Input})
		}
	}
	stop := string(r.StopReason)
	if stop == "" || forced != "" {
		stop = map[bool]string{true: "tool_use", false: "end_turn"}[forced != ""]
	}
	out, _ := json.Marshal(map[string]any{"id": "msg_x", "type": "message", "role": "assistant", "model": "stand-in", "content": content,
		"stop_reason": stop, "usage": map[string]any{"input_tokens": r.Usage.InputTokens, "output_tokens": r.Usage.OutputTokens}})
	return out
}

// readMessagesRequest reads a Messages API request back into llm terms,
// and names the tool a structured request forces (left out of Tools).
func readMessagesRequest(t *testing.T, raw []byte) (llm.Request, string) {
	var body struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   any             `json:"content"`
				IsError   bool            `json:"is_error"`
			} `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		ToolChoice struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tool_choice"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Errorf("the request is not JSON: %v", err)
	}
	var req llm.Request
	for _, s := range body.System {
		req.System += s.Text
	}
	for _, m := range body.Messages {
		msg := llm.Message{Role: llm.Role(m.Role)}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				msg.Content = append(msg.Content, llm.TextBlock(b.Text))
			case "tool_use":
				msg.Content = append(msg.Content, llm.ToolUseBlock(b.ID, b.Name, b.Input))
			case "tool_result":
				text, _ := b.Content.(string)
				if parts, ok := b.Content.([]any); ok {
					for _, p := range parts {
						if pm, ok := p.(map[string]any); ok {
							s, _ := pm["text"].(string)
							text += s
						}
					}
				}
				msg.Content = append(msg.Content, llm.ToolResultBlock(b.ToolUseID, text, b.IsError))
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	forced := ""
	if body.ToolChoice.Type == "tool" {
		forced = body.ToolChoice.Name
	}
	for _, tool := range body.Tools {
		if tool.Name != forced {
			req.Tools = append(req.Tools, llm.ToolSpec{Name: tool.Name})
		}
	}
	return req, forced
}

func TestConformance(t *testing.T) {
	llmtest.Conformance(t, llmtest.Provider{New: messagesStandIn})
}

// cachingStandIn is a Messages API stand-in with a prompt cache: a request
// whose system prompt and tools (with a cache breakpoint) were sent before
// reads them from the cache, and is billed so (one token per 4 bytes).
type cachingStandIn struct {
	mu     sync.Mutex
	cached map[string]bool
	bodies [][]byte
}

func (s *cachingStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		System   json.RawMessage `json:"system"`
		Tools    json.RawMessage `json:"tools"`
		Messages json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(raw, &body)
	prefix := string(body.System) + string(body.Tools)
	s.mu.Lock()
	s.bodies = append(s.bodies, raw)
	read, write := 0, 0
	if s.cached[prefix] {
		read = len(prefix) / 4
	} else {
		write = len(prefix) / 4
		s.cached[prefix] = true
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	out, _ := json.Marshal(map[string]any{"id": "msg_x", "type": "message", "role": "assistant", "model": "stand-in",
		"content": []any{map[string]any{"type": "text", "text": "Nothing worth saving."}}, "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": len(body.Messages) / 4, "output_tokens": 5, "cache_read_input_tokens": read, "cache_creation_input_tokens": write}})
	_, _ = w.Write(out)
}

// TestForkSharesTheParentsCachedPrefix: with the main agent's Prefix, the
// extraction fork's request starts with the parent's system prompt and
// tools byte for byte, cache breakpoints included, so it reads them from
// the prompt cache; the share of its input read from the cache is
// reported.
func TestForkSharesTheParentsCachedPrefix(t *testing.T) {
	stand := &cachingStandIn{cached: map[string]bool{}}
	srv := httptest.NewServer(stand)
	defer srv.Close()
	model, err := anthropic.New(anthropic.Options{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1, PromptCache: true})
	require.NoError(t, err)
	ctx := context.Background()
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)
	prefix := llm.Prefix{System: "You are a coding agent. Follow the project's conventions and keep changes small.",
		Tools: []llm.ToolSpec{{Name: "Read", Description: "Read a file", InputSchema: schema}, {Name: "Write", Description: "Write a file", InputSchema: schema},
			{Name: "Bash", Description: "Run a command", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}}
	conv := []llm.Message{
		{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("We deploy on Tuesdays; remember that.")}},
		{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Noted.")}},
	}
	// The main agent's own request.
	_, err = model.Generate(ctx, llm.Request{System: prefix.System, Tools: prefix.Tools, Messages: conv[:1]})
	require.NoError(t, err)

	dir, err := memdir.NewDir(afero.NewOsFs(), t.TempDir(), memdir.DirOptions{})
	require.NoError(t, err)
	var usage llm.Usage
	ex, err := extract.New(dir, model, extract.Options{Observer: func(e extract.Event) {
		if e.Kind == extract.EventFinished {
			usage = e.Usage
		}
	}})
	require.NoError(t, err)
	ex.OnTurnEnd(ctx, conv, extract.TurnInfo{Prefix: &prefix})
	require.NoError(t, ex.Drain(ctx))
	require.NoError(t, ex.Close())

	stand.mu.Lock()
	defer stand.mu.Unlock()
	require.Len(t, stand.bodies, 2)
	var parent, fork struct {
		System json.RawMessage `json:"system"`
		Tools  json.RawMessage `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(stand.bodies[0], &parent))
	require.NoError(t, json.Unmarshal(stand.bodies[1], &fork))
	assert.Equal(t, string(parent.System), string(fork.System), "the same system prompt, byte for byte")
	assert.Equal(t, string(parent.Tools), string(fork.Tools), "the same tools, byte for byte")
	assert.Contains(t, string(fork.Tools), `"cache_control":{"type":"ephemeral"}`)
	require.Positive(t, usage.CacheReadTokens, "the fork read the parent's prefix from the cache")
	t.Logf("the fork read %d of its %d input tokens from the prompt cache (%.0f%%)", usage.CacheReadTokens, usage.InputTokens,
		100*float64(usage.CacheReadTokens)/float64(usage.InputTokens))
}

// BenchmarkForkCacheReadShare runs the extraction fork after a main-agent
// request with a system prompt and tools of a realistic size (about 12 KB
// and 7 tools) against the caching stand-in, and reports the share of the
// fork's input read from the prompt cache (cache-read-share), with and
// without Turn's Prefix.
func BenchmarkForkCacheReadShare(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path"]}`)
	var tools []llm.ToolSpec
	for _, name := range []string{"Read", "Write", "Edit", "MultiEdit", "Grep", "Glob", "Bash"} {
		tools = append(tools, llm.ToolSpec{Name: name, Description: "The " + name + " tool of the coding agent, described at length. " + strings.Repeat("It has rules. ", 40), InputSchema: schema})
	}
	prefix := llm.Prefix{System: strings.Repeat("You are a careful coding agent; follow the project's conventions. ", 190), Tools: tools}
	conv := []llm.Message{
		{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("We deploy on Tuesdays; remember that.")}},
		{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Noted.")}},
	}
	for _, shared := range []bool{true, false} {
		name := "prefix=shared"
		if !shared {
			name = "prefix=own"
		}
		b.Run(name, func(b *testing.B) {
			stand := &cachingStandIn{cached: map[string]bool{}}
			srv := httptest.NewServer(stand)
			defer srv.Close()
			model, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1, PromptCache: true})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := model.Generate(ctx, llm.Request{System: prefix.System, Tools: prefix.Tools, Messages: conv[:1]}); err != nil {
				b.Fatal(err)
			}
			var read, input int
			for range b.N {
				dir, err := memdir.NewDir(afero.NewOsFs(), b.TempDir(), memdir.DirOptions{})
				if err != nil {
					b.Fatal(err)
				}
				ex, err := extract.New(dir, model, extract.Options{Observer: func(e extract.Event) {
					if e.Kind == extract.EventFinished {
						read += e.Usage.CacheReadTokens
						input += e.Usage.InputTokens
					}
				}})
				if err != nil {
					b.Fatal(err)
				}
				info := extract.TurnInfo{}
				if shared {
					info.Prefix = &prefix
				}
				ex.OnTurnEnd(ctx, conv, info)
				if err := ex.Drain(ctx); err != nil {
					b.Fatal(err)
				}
				_ = ex.Close()
			}
			b.ReportMetric(float64(read)/float64(max(input, 1)), "cache-read-share")
		})
	}
}

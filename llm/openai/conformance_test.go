package openai_test

import (
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
)

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

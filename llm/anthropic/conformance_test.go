package anthropic_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
)

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

package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem-sdk/agentmem/extract"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

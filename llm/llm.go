package llm

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// Model is a language model. Implementations must honour ctx: return
// promptly with ctx.Err() once it is cancelled.
type Model interface {
	Generate(ctx context.Context, req Request) (Response, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, req Request) (Response, error)

// Generate calls f.
func (f ModelFunc) Generate(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }

// Purpose tags a request with the background job that makes it, so a host
// can route each job to a different model (a small fast one for
// relevance, a stronger one for consolidation).
type Purpose string

// The purposes agentmem's jobs use.
const (
	PurposeExtractMemories Purpose = "extract_memories"
	PurposeMemoryRelevance Purpose = "memory_relevance"
	PurposeAutoDream       Purpose = "auto_dream"
	PurposeSessionMemory   Purpose = "session_memory"
	// PurposeMemorySynthesis distils a message's recalled memories into
	// one paragraph (agentmem.Options.SynthesizeRecall).
	PurposeMemorySynthesis Purpose = "memory_synthesis"
	// PurposeReviewJudge is the team server's judge of writes waiting
	// for review (teamserver.ModelJudge).
	PurposeReviewJudge Purpose = "review_judge"
)

// Role is who wrote a message.
type Role string

// The two conversation roles; system text travels in Request.System.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType is the kind of a content block.
type BlockType string

// The block types.
const (
	BlockText       BlockType = "text"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
)

// Block is one piece of a message: text, a tool call by the assistant, or
// the result of a tool call sent back by the user side.
type Block struct {
	Type BlockType
	// Text is the text of a text block, or the content of a tool result.
	Text string
	// ToolUseID identifies a tool call; a tool result carries the ID of the
	// call it answers.
	ToolUseID string
	// ToolName and Input describe a tool call (Input is a JSON object).
	ToolName string
	Input    json.RawMessage
	// IsError marks a tool result that reports a failure or a refusal.
	IsError bool
	// Meta marks a text block the host or a library added for the model
	// (recalled memories, a reminder), not typed by the user. Models see it
	// as any text; transcripts record it apart (Claude Code's isMeta), so
	// session titles and prompt search never show it as the user's words.
	Meta bool
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: BlockText, Text: text} }

// MetaBlock returns a text block that is not the user's own words (see
// Block.Meta).
func MetaBlock(text string) Block { return Block{Type: BlockText, Text: text, Meta: true} }

// ToolUseBlock returns a tool call block.
func ToolUseBlock(id, name string, input json.RawMessage) Block {
	return Block{Type: BlockToolUse, ToolUseID: id, ToolName: name, Input: input}
}

// ToolResultBlock returns the result of the tool call with the given ID.
func ToolResultBlock(id, content string, isError bool) Block {
	return Block{Type: BlockToolResult, ToolUseID: id, Text: content, IsError: isError}
}

// Message is one turn of a conversation. ID is stable: hosts use it as a
// cursor ("everything after message X").
type Message struct {
	ID      string
	Role    Role
	Content []Block
}

// Text returns the message's text blocks joined by newlines.
func (m Message) Text() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolUses returns the message's tool call blocks.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema for the tool's input object.
	InputSchema json.RawMessage
	// Type names a tool the provider defines itself, such as Anthropic's
	// "memory_20250818": the adapter sends the type and name only (the
	// provider knows the schema). Empty for a tool described here.
	Type string
}

// Prefix is the start of a request a prompt cache keys on: the system
// prompt and the tools, in order. A background job that sends its
// parent's Prefix byte for byte reads the parent's cached prefix instead of
// paying for it again.
type Prefix struct {
	System string
	Tools  []ToolSpec
}

// Request is one call to a model.
type Request struct {
	Purpose  Purpose
	System   string
	Messages []Message
	Tools    []ToolSpec
	// OutputSchema, when set, asks for a reply that is one JSON document
	// following this JSON Schema; Response.Text() then returns it.
	OutputSchema json.RawMessage
	// MaxTokens bounds the reply; 0 lets the adapter choose.
	MaxTokens int
}

// StopReason says why the model stopped.
type StopReason string

// Common stop reasons.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
)

// Usage counts tokens. InputTokens counts every input token, the cached
// ones included; CacheReadTokens of them were read from the provider's
// prompt cache, and CacheWriteTokens were written to it (where the
// provider says).
type Usage struct {
	InputTokens      int
	OutputTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens}
}

// Response is a model's reply.
type Response struct {
	// Message is the assistant message (Role is RoleAssistant).
	Message    Message
	StopReason StopReason
	Usage      Usage
	// Model names the model that answered, when the provider says.
	Model string
}

// Text returns the reply's text.
func (r Response) Text() string { return r.Message.Text() }

// APIError is a provider's refusal of a request: an HTTP status and the
// provider's error type and message. Adapters return it so callers can
// branch on StatusCode (429 and 5xx are worth a retry; 4xx others are
// not) without knowing the provider.
type APIError struct {
	StatusCode int
	Type       string
	Message    string
}

func (e *APIError) Error() string {
	s := "llm: API error " + strconv.Itoa(e.StatusCode)
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Retryable reports whether the request may succeed if sent again later.
func (e *APIError) Retryable() bool {
	return e.StatusCode == 429 || e.StatusCode == 408 || e.StatusCode == 529 || e.StatusCode >= 500
}

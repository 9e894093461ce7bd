// Package anthropic adapts the Anthropic Messages API to llm.Model, over
// the official Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// It maps agentmem's provider-neutral requests (system text, messages
// with text, tool-use and tool-result blocks, tool specs, structured
// output, max tokens) to the Messages API and back (text, tool use, stop
// reason, usage). Structured output uses a forced tool by default, which
// every tool-capable model supports, or the API's JSON output format.
// Errors from the API come back as *llm.APIError with the HTTP status.
//
// # Concurrency
//
// A *Model is safe for concurrent use.
package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmem-sdk/agentmem/llm"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Defaults.
const (
	// DefaultModel answers when Options names none for a purpose.
	DefaultModel = "claude-sonnet-4-5"
	// defaultMaxTokens bounds a reply when the request sets no limit.
	defaultMaxTokens = 4096
	// StructuredOutputTool is the name of the tool used to force a JSON
	// reply in StructuredForcedTool mode.
	StructuredOutputTool = "structured_output"
)

// StructuredMode chooses how a request's OutputSchema is enforced.
type StructuredMode int

const (
	// StructuredForcedTool offers one tool whose input schema is the
	// output schema and forces the model to call it.
	StructuredForcedTool StructuredMode = iota
	// StructuredJSONOutput uses the API's JSON output format.
	StructuredJSONOutput
)

// Options configures a Model. The zero value of each optional field means
// its default.
type Options struct {
	// APIKey authenticates (a host reads it from ANTHROPIC_API_KEY).
	APIKey string
	// Model is used for every purpose not in Models (default DefaultModel).
	Model string
	// Models routes purposes to models, such as a small model for
	// llm.PurposeMemoryRelevance.
	Models map[llm.Purpose]string
	// MaxTokens bounds replies when a request sets none (default 4,096).
	MaxTokens int
	// Structured selects how OutputSchema is enforced.
	Structured StructuredMode
	// BaseURL replaces the API endpoint (a proxy, or a test server).
	BaseURL string
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient option.HTTPClient
	// MaxRetries is the SDK's retry count for 429, 5xx and network
	// errors; negative disables retries (default: the SDK's).
	MaxRetries int
	// Options are passed to the SDK client as they are.
	Options []option.RequestOption
	// PromptCache marks cache breakpoints at the end of the system prompt
	// and of the tools, so requests that share them (a main agent and the
	// background jobs forked from it with the same llm.Prefix) read them
	// from the prompt cache.
	PromptCache bool
}

// Model is an llm.Model backed by the Messages API.
type Model struct {
	client sdk.Client
	cfg    Options
}

var _ llm.Model = (*Model)(nil)

// ErrNoAPIKey is returned by New when no key and no options are given.
var ErrNoAPIKey = errors.New("anthropic: no API key given (set Options.APIKey, e.g. from ANTHROPIC_API_KEY)")

// New returns a Model. It makes no network call.
func New(cfg Options) (*Model, error) {
	if cfg.APIKey == "" && len(cfg.Options) == 0 {
		return nil, ErrNoAPIKey
	}
	opts := []option.RequestOption{}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	switch {
	case cfg.MaxRetries < 0:
		opts = append(opts, option.WithMaxRetries(0))
	case cfg.MaxRetries > 0:
		opts = append(opts, option.WithMaxRetries(cfg.MaxRetries))
	}
	opts = append(opts, cfg.Options...)
	cfg.Model = cmp.Or(cfg.Model, DefaultModel)
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = defaultMaxTokens
	}
	return &Model{client: sdk.NewClient(opts...), cfg: cfg}, nil
}

// Generate sends one request to the Messages API.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	msg, err := m.client.Messages.New(ctx, params)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return llm.Response{}, ctxErr
		}
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) {
			return llm.Response{}, &llm.APIError{StatusCode: apiErr.StatusCode, Type: string(apiErr.Type()), Message: apiErr.Message}
		}
		return llm.Response{}, fmt.Errorf("anthropic: %w", err)
	}
	return m.response(req, msg), nil
}

func (m *Model) modelFor(p llm.Purpose) string {
	if name, ok := m.cfg.Models[p]; ok && name != "" {
		return name
	}
	return m.cfg.Model
}

func (m *Model) params(req llm.Request) (sdk.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.cfg.MaxTokens
	}
	p := sdk.MessageNewParams{
		Model:     sdk.Model(m.modelFor(req.Purpose)),
		MaxTokens: int64(maxTokens),
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for i, msg := range req.Messages {
		blocks := make([]sdk.ContentBlockParamUnion, 0, len(msg.Content))
		for _, b := range msg.Content {
			switch b.Type {
			case llm.BlockText:
				blocks = append(blocks, sdk.NewTextBlock(b.Text))
			case llm.BlockToolUse:
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(b.ToolUseID, input, b.ToolName))
			case llm.BlockToolResult:
				blocks = append(blocks, sdk.NewToolResultBlock(b.ToolUseID, b.Text, b.IsError))
			default:
				return p, fmt.Errorf("anthropic: message %d has a block of unknown type %q", i, b.Type)
			}
		}
		switch msg.Role {
		case llm.RoleUser:
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		case llm.RoleAssistant:
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		default:
			return p, fmt.Errorf("anthropic: message %d has unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		if t.Type != "" {
			tool, err := providerTool(t)
			if err != nil {
				return p, err
			}
			p.Tools = append(p.Tools, tool)
			continue
		}
		tool, err := toolParam(t.Name, t.Description, t.InputSchema)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if m.cfg.PromptCache {
		if n := len(p.System); n > 0 {
			p.System[n-1].CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		if n := len(p.Tools); n > 0 && p.Tools[n-1].OfTool != nil {
			p.Tools[n-1].OfTool.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
	}
	if len(req.OutputSchema) > 0 {
		switch m.cfg.Structured {
		case StructuredJSONOutput:
			var schema map[string]any
			if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
				return p, fmt.Errorf("anthropic: output schema is not a JSON object: %w", err)
			}
			p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: schema}}
		default:
			tool, err := toolParam(StructuredOutputTool, "Give your answer by calling this tool with the required fields.", req.OutputSchema)
			if err != nil {
				return p, err
			}
			p.Tools = append(p.Tools, tool)
			p.ToolChoice = sdk.ToolChoiceParamOfTool(StructuredOutputTool)
		}
	}
	return p, nil
}

// memoryToolType is the provider-defined memory tool's type.
const memoryToolType = "memory_20250818"

// providerTool maps a provider-defined tool by its type; the API fixes
// its name.
func providerTool(t llm.ToolSpec) (sdk.ToolUnionParam, error) {
	switch t.Type {
	case memoryToolType:
		if t.Name != "" && t.Name != "memory" {
			return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: the %s tool is named \"memory\", not %q", t.Type, t.Name)
		}
		return sdk.ToolUnionParam{OfMemoryTool20250818: &sdk.MemoryTool20250818Param{}}, nil
	}
	return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: unknown provider tool type %q (known: %s)", t.Type, memoryToolType)
}

// toolParam maps a JSON Schema object to the SDK's tool input schema.
func toolParam(name, desc string, schema json.RawMessage) (sdk.ToolUnionParam, error) {
	var fields map[string]any
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &fields); err != nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: input schema of tool %q is not a JSON object: %w", name, err)
		}
	}
	in := sdk.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range fields {
		switch k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if s, ok := r.(string); ok {
						in.Required = append(in.Required, s)
					}
				}
			}
		default:
			in.ExtraFields[k] = v
		}
	}
	tool := sdk.ToolUnionParamOfTool(in, name)
	if desc != "" {
		tool.OfTool.Description = sdk.String(desc)
	}
	return tool, nil
}

func (m *Model) response(req llm.Request, msg *sdk.Message) llm.Response {
	out := llm.Response{
		Message:    llm.Message{ID: msg.ID, Role: llm.RoleAssistant},
		StopReason: llm.StopReason(msg.StopReason),
		Usage: llm.Usage{InputTokens: int(msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens + msg.Usage.CacheCreationInputTokens),
			OutputTokens: int(msg.Usage.OutputTokens), CacheReadTokens: int(msg.Usage.CacheReadInputTokens),
			CacheWriteTokens: int(msg.Usage.CacheCreationInputTokens)},
		Model: string(msg.Model),
	}
	structured := len(req.OutputSchema) > 0 && m.cfg.Structured == StructuredForcedTool
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Message.Content = append(out.Message.Content, llm.TextBlock(b.Text))
		case "tool_use":
			if structured && b.Name == StructuredOutputTool {
				// The forced tool's input is the whole structured answer;
				// any text around it would break a JSON parse of Text().
				out.Message.Content = []llm.Block{llm.TextBlock(string(b.Input))}
				out.StopReason = llm.StopEndTurn
				return out
			}
			out.Message.Content = append(out.Message.Content, llm.ToolUseBlock(b.ID, b.Name, append(json.RawMessage(nil), b.Input...)))
		}
	}
	return out
}

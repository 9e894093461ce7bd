// Package openai adapts OpenAI's Chat Completions API to llm.Model, over
// the official Go SDK (github.com/openai/openai-go/v3), so a host on
// OpenAI models (or any server that speaks the same API) runs agentmem's
// background jobs without writing its own adapter.
//
// It maps agentmem's provider-neutral requests to chat messages: the
// system text as a system message; text and tool-use blocks of the
// assistant as one assistant message with tool calls; each tool-result
// block as a tool message answering its call (before any text of the same
// user turn); tool specs as function tools; OutputSchema as a JSON-schema
// response format; MaxTokens as max_completion_tokens. Replies come back
// as text, tool use, stop reason and usage. Errors from the API come back
// as *llm.APIError with the HTTP status. With Options.Stream the reply comes
// as server-sent events and is assembled into the same result.
//
// # Concurrency
//
// A *Model is safe for concurrent use.
package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/agentmem-sdk/agentmem/llm"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Defaults.
const (
	// defaultModel answers when Options names none for a purpose.
	defaultModel = "gpt-5-mini"
	// defaultMaxTokens bounds a reply when the request sets no limit.
	defaultMaxTokens = 4096
	// outputSchemaName names the response format of a structured request.
	outputSchemaName = "output"
	// DefaultEmbeddingModel is what Embed uses when Options names none.
	DefaultEmbeddingModel = "text-embedding-3-small"
)

// Options configures a Model. The zero value of each optional field means
// its default.
type Options struct {
	// APIKey authenticates (a host reads it from OPENAI_API_KEY).
	APIKey string
	// Model is used for every purpose not in Models (default gpt-5-mini).
	Model string
	// Models routes purposes to models, such as a small model for
	// llm.PurposeMemoryRelevance.
	Models map[llm.Purpose]string
	// MaxTokens bounds replies when a request sets none (default 4,096).
	MaxTokens int
	// BaseURL replaces the API endpoint (a proxy, a compatible server, or
	// a test server); it ends before "/chat/completions".
	BaseURL string
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient option.HTTPClient
	// MaxRetries is the SDK's retry count for 429, 5xx and network
	// errors; negative disables retries (default: the SDK's).
	MaxRetries int
	// Options are passed to the SDK client as they are.
	Options []option.RequestOption
	// Stream receives each reply as server-sent events (stream: true,
	// usage in the last chunk) and assembles it: the result is the same as
	// without it, but no connection idles for a whole reply (proxies that
	// cut quiet requests), and OnText sees the text as it comes.
	Stream bool
	// OnText receives each piece of reply text as it streams in (with
	// Stream only; called on the Generate goroutine, keep it quick).
	OnText func(piece string)
	// EmbeddingModel is the model Embed uses (default
	// DefaultEmbeddingModel).
	EmbeddingModel string
	// EmbeddingDimensions shortens the vectors (models that allow it);
	// 0 means the model's own length.
	EmbeddingDimensions int
}

// Model is an llm.Model backed by the Chat Completions API.
type Model struct {
	client sdk.Client
	cfg    Options
}

var _ llm.Model = (*Model)(nil)

// ErrNoAPIKey is returned by New when no key and no options are given.
var ErrNoAPIKey = errors.New("openai: no API key given (set Options.APIKey, e.g. from OPENAI_API_KEY)")

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
	cfg.Model = cmp.Or(cfg.Model, defaultModel)
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = defaultMaxTokens
	}
	return &Model{client: sdk.NewClient(opts...), cfg: cfg}, nil
}

// Generate sends one request to the Chat Completions API.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	var out *sdk.ChatCompletion
	if m.cfg.Stream {
		out, err = m.stream(ctx, params)
	} else {
		out, err = m.client.Chat.Completions.New(ctx, params)
	}
	if err != nil {
		return llm.Response{}, apiError(ctx, err)
	}
	return response(out)
}

// EmbedderID names what Embed returns: the endpoint, the embedding model
// and its dimensions (recall.IdentifiedEmbedder: recall's vector cache is
// then found without embedding anything, and another model gets its own).
func (m *Model) EmbedderID() string {
	model := cmp.Or(m.cfg.EmbeddingModel, DefaultEmbeddingModel)
	url := m.cfg.BaseURL
	if url == "" {
		url = os.Getenv("OPENAI_BASE_URL") // what the client falls back to
	}
	return fmt.Sprintf("openai %s %s %d", url, model, m.cfg.EmbeddingDimensions)
}

// Embed returns one embedding per text, in order, from the Embeddings
// API: a Model is a recall.Embedder, for hybrid recall
// (recall.FinderOptions.Embedder, agentmem.Options.Embedder).
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	model := cmp.Or(m.cfg.EmbeddingModel, DefaultEmbeddingModel)
	p := sdk.EmbeddingNewParams{Model: sdk.EmbeddingModel(model), Input: sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}}
	if m.cfg.EmbeddingDimensions > 0 {
		p.Dimensions = sdk.Int(int64(m.cfg.EmbeddingDimensions))
	}
	res, err := m.client.Embeddings.New(ctx, p)
	if err != nil {
		return nil, apiError(ctx, err)
	}
	out := make([][]float32, len(texts))
	for _, e := range res.Data {
		if e.Index < 0 || int(e.Index) >= len(texts) || out[e.Index] != nil {
			return nil, fmt.Errorf("openai: the embeddings reply has an entry at index %d for %d texts", e.Index, len(texts))
		}
		v := make([]float32, len(e.Embedding))
		for i, x := range e.Embedding {
			v[i] = float32(x)
		}
		out[e.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("openai: the embeddings reply has no vector for text %d", i)
		}
	}
	return out, nil
}

// ErrStreamCut is returned when a streamed reply ends before its last
// choice finished: what came is not a whole reply, so none of it is used.
var ErrStreamCut = errors.New("openai: the streamed reply ended before it finished (retry the request)")

// stream sends params with stream: true and assembles the chunks.
func (m *Model) stream(ctx context.Context, params sdk.ChatCompletionNewParams) (*sdk.ChatCompletion, error) {
	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	s := m.client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc sdk.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		if !acc.AddChunk(chunk) {
			return nil, errors.New("openai: the streamed reply has chunks that do not fit together")
		}
		if m.cfg.OnText != nil {
			for _, ch := range chunk.Choices {
				if ch.Index == 0 && ch.Delta.Content != "" {
					m.cfg.OnText(ch.Delta.Content)
				}
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		return nil, ErrStreamCut
	}
	return &acc.ChatCompletion, nil
}

// apiError maps an SDK failure: a cancelled context as itself, an API
// error as *llm.APIError.
func apiError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return &llm.APIError{StatusCode: apiErr.StatusCode, Type: apiErr.Type, Message: apiErr.Message}
	}
	return fmt.Errorf("openai: %w", err)
}

func (m *Model) modelFor(p llm.Purpose) string {
	if name, ok := m.cfg.Models[p]; ok && name != "" {
		return name
	}
	return m.cfg.Model
}

func (m *Model) params(req llm.Request) (sdk.ChatCompletionNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.cfg.MaxTokens
	}
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.modelFor(req.Purpose)), MaxCompletionTokens: sdk.Int(int64(maxTokens))}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleUser:
			var text string
			for _, b := range msg.Content {
				switch b.Type {
				case llm.BlockToolResult:
					content := b.Text
					if b.IsError {
						content = "Error: " + content
					}
					p.Messages = append(p.Messages, sdk.ToolMessage(content, b.ToolUseID))
				case llm.BlockText:
					text = joinText(text, b.Text)
				default:
					return p, fmt.Errorf("openai: message %d (user) has a block of type %q, which a user message cannot carry", i, b.Type)
				}
			}
			if text != "" {
				p.Messages = append(p.Messages, sdk.UserMessage(text))
			}
		case llm.RoleAssistant:
			var a sdk.ChatCompletionAssistantMessageParam
			var text string
			for _, b := range msg.Content {
				switch b.Type {
				case llm.BlockText:
					text = joinText(text, b.Text)
				case llm.BlockToolUse:
					args := cmp.Or(string(b.Input), "{}")
					a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID: b.ToolUseID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.ToolName, Arguments: args}}})
				default:
					return p, fmt.Errorf("openai: message %d (assistant) has a block of type %q, which an assistant message cannot carry", i, b.Type)
				}
			}
			if text != "" {
				a.Content.OfString = sdk.String(text)
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("openai: message %d has unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		if t.Type != "" {
			return p, fmt.Errorf("openai: the provider-defined tool %q (%s) exists only on Anthropic's API", t.Name, t.Type)
		}
		params, err := schemaObject(t.InputSchema)
		if err != nil {
			return p, fmt.Errorf("openai: input schema of tool %q: %w", t.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fn.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	if len(req.OutputSchema) > 0 {
		schema, err := schemaObject(req.OutputSchema)
		if err != nil {
			return p, fmt.Errorf("openai: output schema: %w", err)
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: outputSchemaName, Schema: map[string]any(schema)}}}
	}
	return p, nil
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}

// schemaObject reads a JSON Schema object (empty: any object).
func schemaObject(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(raw) == 0 {
		return shared.FunctionParameters{"type": "object"}, nil
	}
	var out shared.FunctionParameters
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return out, nil
}

// response maps the first choice of a completion.
func response(c *sdk.ChatCompletion) (llm.Response, error) {
	if len(c.Choices) == 0 {
		return llm.Response{}, errors.New("openai: the reply has no choices")
	}
	ch := c.Choices[0]
	out := llm.Response{
		Message: llm.Message{ID: c.ID, Role: llm.RoleAssistant},
		Usage: llm.Usage{InputTokens: int(c.Usage.PromptTokens), OutputTokens: int(c.Usage.CompletionTokens),
			CacheReadTokens: int(c.Usage.PromptTokensDetails.CachedTokens)},
		Model: c.Model,
	}
	if ch.Message.Content != "" {
		out.Message.Content = append(out.Message.Content, llm.TextBlock(ch.Message.Content))
	}
	for _, tc := range ch.Message.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if !json.Valid(args) {
			return llm.Response{}, fmt.Errorf("openai: tool call %s has arguments that are not JSON", tc.ID)
		}
		out.Message.Content = append(out.Message.Content, llm.ToolUseBlock(tc.ID, tc.Function.Name, args))
	}
	switch ch.FinishReason {
	case "tool_calls", "function_call":
		out.StopReason = llm.StopToolUse
	case "length":
		out.StopReason = llm.StopMaxTokens
	case "content_filter":
		out.StopReason = llm.StopRefusal
	default:
		out.StopReason = llm.StopEndTurn
	}
	if ch.Message.Refusal != "" {
		out.StopReason = llm.StopRefusal
		out.Message.Content = append(out.Message.Content, llm.TextBlock(ch.Message.Refusal))
	}
	return out, nil
}

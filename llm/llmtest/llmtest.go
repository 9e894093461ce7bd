// Package llmtest provides a scripted llm.Model for tests: it replies in
// order, records every request, and can fail or block until cancelled.
package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentmem-sdk/agentmem/llm"
)

// ErrScriptExhausted is returned when the model is called more often than
// it has steps.
var ErrScriptExhausted = errors.New("llmtest: no scripted reply left")

// Step is one scripted reply: a response, an error, or a block until the
// request's context is cancelled.
type Step struct {
	Response llm.Response
	Err      error
	// Block waits for ctx.Done() and returns ctx.Err().
	Block bool
	// Started, when set, is closed as the step begins (to sync a test with
	// a blocked call).
	Started chan struct{}
}

// Model is a scripted llm.Model. Safe for concurrent use.
type Model struct {
	mu       sync.Mutex
	steps    []Step
	requests []llm.Request
}

// New returns a Model that plays steps in order.
func New(steps ...Step) *Model { return &Model{steps: steps} }

// Add appends steps to the script.
func (m *Model) Add(steps ...Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, steps...)
}

// Generate plays the next step.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, cloneRequest(req))
	if len(m.steps) == 0 {
		m.mu.Unlock()
		return llm.Response{}, ErrScriptExhausted
	}
	step := m.steps[0]
	m.steps = m.steps[1:]
	m.mu.Unlock()
	if step.Started != nil {
		close(step.Started)
	}
	if step.Block {
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	return step.Response, step.Err
}

// Requests returns copies of the requests received so far.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.requests...)
}

// Remaining reports how many scripted steps are left.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps)
}

func cloneRequest(r llm.Request) llm.Request {
	r.Messages = append([]llm.Message(nil), r.Messages...)
	r.Tools = append([]llm.ToolSpec(nil), r.Tools...)
	return r
}

// Text is a step that answers with text and stops.
func Text(text string) Step {
	return Step{Response: llm.Response{
		Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(text)}},
		StopReason: llm.StopEndTurn,
		Usage:      llm.Usage{InputTokens: 10, OutputTokens: 5},
	}}
}

// ToolUse is a step that calls one tool with input (marshalled to JSON).
func ToolUse(id, name string, input any) Step {
	raw, err := json.Marshal(input)
	if err != nil {
		panic(fmt.Sprintf("llmtest: tool input: %v", err))
	}
	return Step{Response: llm.Response{
		Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(id, name, raw)}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 20, OutputTokens: 8},
	}}
}

// Fail is a step that returns err.
func Fail(err error) Step { return Step{Err: err} }

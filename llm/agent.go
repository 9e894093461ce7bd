package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// defaultMaxTurns bounds an agent task when Task.MaxTurns is zero.
const defaultMaxTurns = 5

// ErrMaxTurns is returned (with the partial Result) when the model still
// wanted tools after the last allowed turn.
var ErrMaxTurns = errors.New("llm: agent stopped at its turn limit")

// ErrNoModel is returned by RunAgent when no model is given.
var ErrNoModel = errors.New("llm: no model given")

// Tool is something the agent may call: a spec for the model and the
// function that runs it. Call returns the text the model sees; an error
// is also shown to the model (as a failed tool result), so it must not
// carry secrets or host details.
type Tool struct {
	Spec ToolSpec
	Call func(ctx context.Context, input json.RawMessage) (string, error)
}

// ToolCall is a tool call the model asked for: the one form every layer
// takes (permission functions, the memory's write checks, the team
// detectors), whatever API it came from.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Fields decodes Input, a JSON object, into a map (no input: an empty
// map).
func (c ToolCall) Fields() (map[string]any, error) {
	m := map[string]any{}
	if len(c.Input) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(c.Input, &m); err != nil {
		return nil, fmt.Errorf("the input of tool %s is not a JSON object: %w", c.Name, err)
	}
	return m, nil
}

// Decision is a permission function's answer.
type Decision struct {
	Allow bool
	// Reason is shown to the model when a call is denied.
	Reason string
}

// Allow and Deny build decisions.
func Allow() Decision { return Decision{Allow: true} }

// Deny refuses a call with a reason the model will read.
func Deny(reason string) Decision { return Decision{Reason: reason} }

// PermissionFunc decides whether a tool call may run.
type PermissionFunc func(ctx context.Context, call ToolCall) Decision

// Task is one bounded background run of a model with tools: the "forked
// agent". It starts from its own prompt and never sees or changes the
// caller's conversation.
type Task struct {
	Purpose Purpose
	System  string
	// Prompt is the first user message.
	Prompt string
	Tools  []Tool
	// Permission decides every call before it runs; nil allows all.
	Permission PermissionFunc
	// MaxTurns bounds the model calls (default 5).
	MaxTurns int
	// MaxTokens bounds each reply (0: the adapter's default).
	MaxTokens int
}

// ToolCallRecord is what happened to one tool call.
type ToolCallRecord struct {
	ToolCall
	// Denied is true when the permission function refused the call;
	// Reason is what the model was told.
	Denied bool
	Reason string
	// Failed is true when the tool ran and returned an error (or the tool
	// does not exist).
	Failed bool
	// Output is the text the model saw.
	Output string
}

// Result is the outcome of RunAgent.
type Result struct {
	// Turns is the number of model calls made.
	Turns int
	Usage Usage
	// ToolCalls lists every call the model asked for, in order.
	ToolCalls []ToolCallRecord
	// Final is the text of the last reply.
	Final      string
	StopReason StopReason
	// Messages is the task's own transcript.
	Messages []Message
}

// RunAgent runs task until the model answers without asking for a tool,
// or MaxTurns model calls have been made (then it returns ErrMaxTurns
// with the partial Result). Tool calls run one after another in the
// calling goroutine; each is first put to the permission function, and a
// denied or failed call is reported to the model, which continues. A
// cancelled ctx stops the run between and during calls (model and tools
// receive ctx) and returns ctx's error. A model error ends the run.
func RunAgent(ctx context.Context, model Model, task Task) (Result, error) {
	if model == nil {
		return Result{}, ErrNoModel
	}
	maxTurns := task.MaxTurns
	if maxTurns <= 0 {
		maxTurns = defaultMaxTurns
	}
	tools := make(map[string]Tool, len(task.Tools))
	specs := make([]ToolSpec, 0, len(task.Tools))
	for _, t := range task.Tools {
		tools[t.Spec.Name] = t
		specs = append(specs, t.Spec)
	}
	var res Result
	res.Messages = []Message{{ID: "task-u0", Role: RoleUser, Content: []Block{TextBlock(task.Prompt)}}}
	for res.Turns < maxTurns {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		resp, err := model.Generate(ctx, Request{
			Purpose: task.Purpose, System: task.System, Messages: res.Messages,
			Tools: specs, MaxTokens: task.MaxTokens,
		})
		res.Turns++
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return res, ctxErr
			}
			return res, fmt.Errorf("llm: model call %d: %w", res.Turns, err)
		}
		res.Usage = res.Usage.Add(resp.Usage)
		reply := resp.Message
		reply.Role = RoleAssistant
		if reply.ID == "" {
			reply.ID = fmt.Sprintf("task-a%d", res.Turns)
		}
		res.Messages = append(res.Messages, reply)
		res.Final = reply.Text()
		res.StopReason = resp.StopReason
		uses := reply.ToolUses()
		if len(uses) == 0 {
			return res, nil
		}
		results := make([]Block, 0, len(uses))
		for _, use := range uses {
			rec := runTool(ctx, tools, task.Permission, ToolCall{ID: use.ToolUseID, Name: use.ToolName, Input: use.Input})
			if err := ctx.Err(); err != nil {
				res.ToolCalls = append(res.ToolCalls, rec)
				return res, err
			}
			res.ToolCalls = append(res.ToolCalls, rec)
			results = append(results, ToolResultBlock(use.ToolUseID, rec.Output, rec.Denied || rec.Failed))
		}
		res.Messages = append(res.Messages, Message{ID: fmt.Sprintf("task-u%d", res.Turns), Role: RoleUser, Content: results})
	}
	return res, ErrMaxTurns
}

func runTool(ctx context.Context, tools map[string]Tool, perm PermissionFunc, call ToolCall) ToolCallRecord {
	rec := ToolCallRecord{ToolCall: call}
	tool, ok := tools[call.Name]
	if !ok {
		rec.Failed = true
		rec.Output = fmt.Sprintf("There is no tool named %q.", call.Name)
		return rec
	}
	if perm != nil {
		if d := perm(ctx, call); !d.Allow {
			rec.Denied = true
			rec.Reason = cmp.Or(d.Reason, "This call is not permitted.")
			rec.Output = "Permission denied: " + rec.Reason
			return rec
		}
	}
	out, err := tool.Call(ctx, call.Input)
	if err != nil {
		rec.Failed = true
		rec.Output = "Error: " + err.Error()
		return rec
	}
	rec.Output = out
	return rec
}

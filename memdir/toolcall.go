package memdir

import (
	"encoding/json"
	"fmt"
)

// ToolCall is one tool use by a model, in a form any LLM API can fill:
// the tool's name and its JSON input decoded into a map. Write guards
// (teammem.WriteGuard) and permission rules read it.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// ToolCallFromJSON builds a ToolCall from a tool name and the raw JSON
// object of its input.
func ToolCallFromJSON(name string, input []byte) (ToolCall, error) {
	var m map[string]any
	if len(input) > 0 {
		if err := json.Unmarshal(input, &m); err != nil {
			return ToolCall{}, fmt.Errorf("memdir: tool input for %s is not a JSON object: %w", name, err)
		}
	}
	return ToolCall{Name: name, Input: m}, nil
}

// String returns the named input field, or "" when absent or not text.
func (c ToolCall) String(field string) string {
	s, _ := c.Input[field].(string)
	return s
}

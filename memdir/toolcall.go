package memdir

import (
	"github.com/agentmem-sdk/agentmem/llm"
)

// toolInput is a tool call's input, decoded.
type toolInput map[string]any

// decodeCall decodes call's input (llm.ToolCall.Fields).
func decodeCall(call llm.ToolCall) (toolInput, error) {
	m, err := call.Fields()
	return toolInput(m), err
}

// str returns the named input field, or "" when absent or not text.
func (in toolInput) str(field string) string {
	s, _ := in[field].(string)
	return s
}

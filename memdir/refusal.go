package memdir

import (
	"errors"

	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/agentmem-sdk/agentmem/secrets"
)

// ToolError is a refusal or a failure worded for a model: the text of a
// tool result marked as an error. The memory tools, the memory tool
// handler and the MCP server return it, and word every refusal of the write
// gate one way, with Refusal.
type ToolError struct{ Msg string }

func (e *ToolError) Error() string { return e.Msg }

// Refusal words the write gate's refusal of a call for the model: path
// and root as the model knows them (its own path, "" to name none, and
// the directory it was given, such as "memory" or "/memories"). Every
// refusal starts "refused:". It returns nil when err is not a refusal (a
// *PathTraversalError, a *secrets.Error, a *screen.Error, ErrCrossRoot,
// a *NotMainAgentError or a *PausedError).
func Refusal(path, root string, err error) *ToolError {
	what := "the path"
	if path != "" {
		what = path
	}
	var pte *PathTraversalError
	var se *secrets.Error
	var sc *screen.Error
	var nm *NotMainAgentError
	var pe *PausedError
	switch {
	case errors.As(err, &sc) && sc.Screen == screen.ScreenInvisible:
		return &ToolError{Msg: "refused: " + what + " would hold an invisible character, " + sc.CodePointName() + " (" + sc.RuleID + "), at " + sc.Where() + "; remove it and try again"}
	case errors.As(err, &sc) && sc.Screen == screen.ScreenIndexLink:
		return &ToolError{Msg: "refused: " + what + " would get an index line whose links are not one link to a memory file in this directory (" + sc.RuleID + ") at " + sc.Where() + "; a pointer line links its memory file only, so take other links out and try again"}
	case errors.As(err, &sc):
		return &ToolError{Msg: "refused: " + what + " would hold " + sc.Label + " (" + sc.RuleID + ") at " + sc.Where() + ", and this memory is shared; state it as a fact about the project instead and try again"}
	case errors.As(err, &pte) && pte.Reason == ReasonNotMemoryPath:
		return &ToolError{Msg: "refused: " + what + " is outside the " + root + " directory"}
	case errors.As(err, &pte):
		return &ToolError{Msg: "refused: " + what + " would escape the " + root + " directory (" + string(pte.Reason) + ")"}
	case errors.As(err, &se) && se.Synced:
		return &ToolError{Msg: "refused: " + what + " would hold a credential (" + se.Label + "), and this memory is synced to your account; remove the secret and try again"}
	case errors.As(err, &se):
		return &ToolError{Msg: "refused: " + what + " would hold a credential (" + se.Label + "), and team memory is shared with every contributor; remove the secret and try again"}
	case errors.Is(err, ErrCrossRoot):
		return &ToolError{Msg: "refused: " + what + " cannot move into or out of the team directory; move its files one by one"}
	case errors.As(err, &nm):
		return &ToolError{Msg: "refused: " + what + " is shared memory, which only the session's main agent changes, and this call comes from " + nm.Agent.described() + "; nothing was changed: keep it in private memory instead, or leave it to the main agent"}
	case errors.As(err, &pe):
		return &ToolError{Msg: "refused: memory writes are paused by the person; nothing was written, and only the person resumes them"}
	}
	return nil
}

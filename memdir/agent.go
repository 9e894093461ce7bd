package memdir

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// Agent says which agent of a session a write comes from: its main
// agent (the zero value), a sub-agent it started, a fork of it, or a
// background query. A host says it on the context of the tool call
// (WithAgent); writes through the background doors (extraction,
// consolidation, the session summary) are a background query's
// whatever the context says.
type Agent string

const (
	AgentMain       Agent = ""
	AgentSub        Agent = "subagent"
	AgentFork       Agent = "fork"
	AgentBackground Agent = "background"
)

type agentKey struct{}

// described names the agent in words: "a sub-agent", "a fork", "a
// background query".
func (a Agent) described() string {
	switch a {
	case AgentSub:
		return "a sub-agent"
	case AgentFork:
		return "a fork"
	case AgentBackground:
		return "a background query"
	case AgentMain:
		return "the main agent"
	}
	return "another agent (" + string(a) + ")"
}

// WithAgent returns ctx saying the writes made with it come from agent.
func WithAgent(ctx context.Context, agent Agent) context.Context {
	return context.WithValue(ctx, agentKey{}, agent)
}

// AgentFrom returns the agent ctx names (AgentMain when none).
func AgentFrom(ctx context.Context) Agent {
	a, _ := ctx.Value(agentKey{}).(Agent)
	return a
}

// ErrNotMainAgent is what a *NotMainAgentError matches.
var ErrNotMainAgent = errors.New("memdir: shared memory is written by the main agent only")

// NotMainAgentError refuses a write to shared memory (team memory and
// the memory stores mounted in it) that comes from another agent than
// the session's main one, while the host allows only the main agent
// there (Dir.SharedWritesMainAgentOnly). Nothing was written; the
// session's private memory is not affected.
type NotMainAgentError struct {
	Door  string // the door of the refused write (Dir.WithDoor)
	Agent Agent
}

func (e *NotMainAgentError) Error() string {
	return fmt.Sprintf("shared memory is written by the session's main agent only, and this %s write comes from %s: nothing was written; write private memory, or leave it to the main agent", e.Door, e.Agent.described())
}

func (e *NotMainAgentError) Is(target error) bool { return target == ErrNotMainAgent }

// MainAgentOnly says what a write to shared memory (team memory and the
// memory stores mounted in it) from another agent than the session's main
// one meets: a sub-agent's, a fork's (WithAgent) or a background query's
// (the extraction, consolidation and session-summary doors).
type MainAgentOnly int32

const (
	// MainAgentOnlyOff: every agent writes shared memory.
	MainAgentOnlyOff MainAgentOnly = iota
	// MainAgentOnlyRefuse: the write is refused with a
	// *NotMainAgentError; nothing is written.
	MainAgentOnlyRefuse
	// MainAgentOnlyPropose: the write is made and recorded with the
	// origin other-agent, which the sync clients send with it: a repo or
	// store under the review policy keeps it for a person, whoever's
	// token syncs it; under open it is stored, its origin recorded. What
	// cannot carry that origin is refused as under MainAgentOnlyRefuse:
	// a deletion or a move (a sync sends a deletion with no file to
	// record it on). A write the host makes itself after its permission
	// check (Dir.CheckToolCallFrom, Memory.Guard) is recorded by that
	// check, before it is made.
	MainAgentOnlyPropose
)

// SharedWritesMainAgentOnly sets what another agent's write to shared
// memory meets, through every handle of the directory in this process (a
// host's own writes, with no door, and a sync's are never affected).
func (d *Dir) SharedWritesMainAgentOnly(mode MainAgentOnly) {
	d.gate.provState.mainOnly.Store(int32(mode))
}

// backgroundDoor reports whether writes through door are a background
// query's, whatever the context says.
func backgroundDoor(door string) bool {
	switch door {
	case teamwire.DoorExtraction, teamwire.DoorConsolidation, teamwire.DoorSessionSummary:
		return true
	}
	return false
}

// checkAgent refuses a write to shared memory from another agent than
// the main one while the directory allows only the main agent there.
// With markable false (a deletion, a move) a write that
// MainAgentOnlyPropose would mark is refused too.
func (g *WriteGate) checkAgent(ctx context.Context, t Target, markable bool) error {
	agent := g.otherAgent(ctx, t)
	if agent == AgentMain {
		return nil
	}
	if mode := MainAgentOnly(g.provState.mainOnly.Load()); mode == MainAgentOnlyRefuse || !markable && mode == MainAgentOnlyPropose {
		return &NotMainAgentError{Door: g.prov.Door, Agent: agent}
	}
	return nil
}

// otherAgent returns the agent a write to t through this gate comes
// from when the main-agent-only rule covers it (a shared target, an
// agent's door, the rule on), AgentMain otherwise.
func (g *WriteGate) otherAgent(ctx context.Context, t Target) Agent {
	if !t.Team || MainAgentOnly(g.provState.mainOnly.Load()) == MainAgentOnlyOff || !agentDoor(g.prov.Door) {
		return AgentMain
	}
	agent := AgentFrom(ctx)
	if agent == AgentMain && backgroundDoor(g.prov.Door) {
		agent = AgentBackground
	}
	return agent
}

// proposedOrigin is the origin a write to t records: under
// MainAgentOnlyPropose another agent's write is marked other-agent, as
// less trusted as origin already says.
func (g *WriteGate) proposedOrigin(ctx context.Context, t Target, origin string) string {
	if g.otherAgent(ctx, t) != AgentMain && MainAgentOnly(g.provState.mainOnly.Load()) == MainAgentOnlyPropose {
		return LeastTrusted(origin, teamwire.OriginOtherAgent)
	}
	return origin
}

// mayWrite checks what refuses a write whatever its path and content: a
// pause, and another agent than the main one in shared memory.
func (g *WriteGate) mayWrite(ctx context.Context, t Target) error {
	return g.may(ctx, t, true)
}

// CheckRemove reports whether a removal of abs through this gate would
// be refused before it is tried (its path, a pause, another agent's
// removal in shared memory), so a caller that removes after writing (a
// move made of a write and a removal) can refuse the whole of it first.
func (g *WriteGate) CheckRemove(ctx context.Context, abs string) error {
	t, err := g.CheckPath(abs)
	if err != nil {
		return err
	}
	return g.mayRemove(ctx, t)
}

// mayRemove is mayWrite for what leaves no file behind to record an
// origin on: a deletion, the source of a move.
func (g *WriteGate) mayRemove(ctx context.Context, t Target) error {
	return g.may(ctx, t, false)
}

func (g *WriteGate) may(ctx context.Context, t Target, markable bool) error {
	if err := g.checkPaused(t); err != nil {
		return err
	}
	return g.checkAgent(ctx, t, markable)
}

package memdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/spf13/afero"
)

// PauseMarkerName is the file whose presence in a memory directory
// pauses the agents' writes to it, in every process (agentmem pause
// writes it, agentmem resume removes it).
const PauseMarkerName = ".memory-writes-paused"

// ErrPaused is what a *PausedError matches.
var ErrPaused = errors.New("memdir: memory writes are paused")

// PausedError refuses an agent's write while the person has paused
// memory writes (Dir.PauseWrites for this process, PauseDirectory for
// every process). Nothing was written.
type PausedError struct {
	// Door is the door of the refused write (its handle's, Dir.WithDoor).
	Door string
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("memory writes are paused by the person (%s write refused): nothing was written; only the person resumes them (agentmem resume, or Memory.ResumeWrites)", e.Door)
}

func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// agentDoor reports whether writes through door are an agent's, which a
// pause stops: a memory tool, the file tools, MCP and the background
// jobs. The host's own writes (no door), a sync's and the person's CLI
// go on.
func agentDoor(door string) bool {
	switch door {
	case teamwire.DoorMemoryTool, teamwire.DoorFileTools, teamwire.DoorMCP,
		teamwire.DoorExtraction, teamwire.DoorConsolidation, teamwire.DoorSessionSummary:
		return true
	}
	return false
}

// PauseWrites pauses the agents' writes through every handle of the
// directory in this process (the memory tools, MCP, extraction,
// consolidation): each is refused with a *PausedError until
// ResumeWrites. A person's action: no tool offers to resume.
func (d *Dir) PauseWrites() { d.gate.provState.paused.Store(true) }

// ResumeWrites lifts PauseWrites.
func (d *Dir) ResumeWrites() { d.gate.provState.paused.Store(false) }

// WritesPaused reports whether the agents' writes are paused: by
// PauseWrites, or by the marker PauseDirectory left in the directory.
func (d *Dir) WritesPaused() bool {
	return d.gate.provState.paused.Load() || markerIn(d.gate.fs, d.path)
}

// PauseDirectory pauses the agents' writes to the memory directory dir
// in every process until ResumeDirectory (it writes PauseMarkerName).
func PauseDirectory(fsys afero.Fs, dir string) error {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(fsys, filepath.Join(dir, PauseMarkerName), []byte("paused by the person\n"), 0o644)
}

// ResumeDirectory lifts PauseDirectory.
func ResumeDirectory(fsys afero.Fs, dir string) error {
	err := fsys.Remove(filepath.Join(dir, PauseMarkerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func markerIn(fsys afero.Fs, dir string) bool {
	_, err := fsys.Stat(filepath.Join(dir, PauseMarkerName))
	return err == nil
}

// checkPaused refuses an agent's write to t while writes are paused.
func (g *WriteGate) checkPaused(t Target) error {
	if !agentDoor(g.prov.Door) {
		return nil
	}
	dir := t.Root
	if t.Team {
		dir = filepath.Dir(t.Root) // the memory directory above the team one
	}
	if g.provState.paused.Load() || markerIn(g.fs, dir) {
		return &PausedError{Door: g.prov.Door}
	}
	return nil
}

package memdir

// Tool names: Claude Code's names for the file tools, the one table every
// layer uses (the memory tools, the write checks, the team detectors, the
// jobs' permission rules). A host whose tools are named otherwise maps
// its names to these (agentmem.Options.ToolNames).
const (
	ToolRead  = "Read"
	ToolWrite = "Write"
	ToolEdit  = "Edit"
	// ToolMultiEdit applies several Edit replacements to one file at once.
	ToolMultiEdit = "MultiEdit"
	// ToolNotebookEdit replaces a cell of a Jupyter notebook.
	ToolNotebookEdit = "NotebookEdit"
	ToolGrep         = "Grep"
	ToolGlob         = "Glob"
	// ToolList lists a directory (agentmem's own memory tool).
	ToolList = "List"
)

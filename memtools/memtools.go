package memtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// Options bounds what the tools read and return. The zero value means the
// defaults given for each field.
type Options struct {
	// MaxReadLines is how many lines one Read returns (default 2,000).
	MaxReadLines int
	// MaxLineLength cuts longer lines in Read and Grep output (default 2,000).
	MaxLineLength int
	// MaxOutputBytes bounds any tool's output (default 64 KiB).
	MaxOutputBytes int
	// MaxFileBytes is the largest file Read, Edit and Grep will open
	// (default 10 MiB); Write refuses content larger than it.
	MaxFileBytes int64
	// MaxResults bounds the files or lines Grep, Glob and List report
	// (default 200).
	MaxResults int

	// ReadState is the agent's memory of what it read and wrote, which
	// Write and Edit check (read-before-write). Nil means a new one for
	// this Toolset; pass one to share it across toolsets of one agent.
	ReadState *filehistory.ReadState
	// BlindWrites turns the read-before-write check off: Write and Edit
	// then overwrite files the agent has not read. Only for hosts whose
	// model cannot read first.
	BlindWrites bool
}

func (o Options) withDefaults() Options {
	if o.MaxReadLines <= 0 {
		o.MaxReadLines = 2000
	}
	if o.MaxLineLength <= 0 {
		o.MaxLineLength = 2000
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = 64 << 10
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 10 << 20
	}
	if o.MaxResults <= 0 {
		o.MaxResults = 200
	}
	if o.ReadState == nil {
		o.ReadState = filehistory.NewReadState(filehistory.ReadStateOptions{})
	}
	return o
}

// Toolset is a set of file tools confined to memory directories. Every
// tool checks its path itself (absolute, inside a root, no symbolic link
// leading out), whatever the permission function decided. Safe for
// concurrent use.
type Toolset struct {
	fs    afero.Fs
	roots []string
	gate  *memdir.WriteGate
	opts  Options
	reads *filehistory.ReadState

	mu      sync.Mutex
	written []string
}

// New returns tools confined to the memory directory d (or a view of it,
// and to the roots d.WithRoots added): every write goes through d's gate,
// with d's scanner, synced flag and, for a d made WithHistory, its
// history, so each file's version is recorded under the write's lock and
// the turn can be rewound.
func New(d *memdir.Dir, opts Options) (*Toolset, error) {
	if d == nil {
		return nil, errors.New("memtools: no memory directory given (memdir.NewDir)")
	}
	d = d.WithDoor(teamwire.DoorFileTools) // its shared writes go with its door
	gate := d.Gate()
	opts = opts.withDefaults()
	return &Toolset{fs: d.FS(), roots: gate.Roots(), gate: gate, opts: opts, reads: opts.ReadState}, nil
}

// Tools returns the seven tools: Read, Write, Edit, MultiEdit, Grep, Glob,
// List.
func (t *Toolset) Tools() []llm.Tool {
	return []llm.Tool{t.readTool(), t.writeTool(), t.editTool(), t.multiEditTool(), t.grepTool(), t.globTool(), t.listTool()}
}

// Tool returns the tool of that name (memdir.ToolRead, ToolWrite,
// ToolEdit, ToolMultiEdit, ToolGrep, ToolGlob or ToolList) and whether
// the set has it.
func (t *Toolset) Tool(name string) (llm.Tool, bool) {
	for _, tool := range t.Tools() {
		if tool.Spec.Name == name {
			return tool, true
		}
	}
	return llm.Tool{}, false
}

// Written returns the absolute paths the Write and Edit tools changed, in
// the order first written.
func (t *Toolset) Written() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.written...)
}

// ChangedFiles returns the files the tools wrote that someone else has
// changed or deleted since, each reported once, for the host to tell the
// model on its next turn.
func (t *Toolset) ChangedFiles() []filehistory.Change {
	return t.reads.Changes(func(p string) ([]byte, error) {
		f, err := t.gate.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, t.opts.MaxFileBytes))
	})
}

// checkWrite applies the read-before-write rule to clean, which holds old
// (exists false: absent); whole is a Write, else an Edit. It runs inside
// the gate's locked update cycle, just before the atomic write.
func (t *Toolset) checkWrite(clean string, old []byte, exists, whole bool) error {
	if t.opts.BlindWrites {
		return nil
	}
	switch err := t.reads.CheckWrite(clean, old, exists, whole); {
	case errors.Is(err, filehistory.ErrNotRead):
		return toolErr("%s has not been read yet (or only part of it, for Write); Read it first, then write", clean)
	case errors.Is(err, filehistory.ErrModifiedSinceRead):
		return toolErr("%s has been modified since you read it (by the user, a teammate's sync or another agent); nothing was written; Read it again, then write", clean)
	}
	return nil
}

func (t *Toolset) recordWrite(p string, content []byte) {
	t.reads.RecordWrite(p, content)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(t.written, p) {
		t.written = append(t.written, p)
	}
}

// toolErr is an error a tool reports to the model: a *memdir.ToolError,
// the one type (and one wording of every refusal) of the memory tools, the
// memory tool handler and the MCP server. Its text names no host path but
// the ones the model gave.
func toolErr(format string, args ...any) error {
	return &memdir.ToolError{Msg: fmt.Sprintf(format, args...)}
}

// resolve checks that p is an absolute path inside one of the roots, with
// no symbolic link leading out (the memory WriteGate's check), and returns
// it cleaned. A path equal to a root is allowed when allowRoot is set (for
// directory tools).
func (t *Toolset) resolve(p string, allowRoot bool) (string, error) {
	if p == "" {
		return "", toolErr("a path is required")
	}
	if !filepath.IsAbs(p) {
		return "", toolErr("the path must be absolute (one of the memory directories: %s)", strings.Join(t.roots, ", "))
	}
	clean := filepath.Clean(p)
	if allowRoot && slices.Contains(t.roots, clean) {
		return clean, nil // a root is trusted as configured
	}
	target, err := t.gate.CheckPath(clean)
	if err != nil {
		return "", t.refusal(err)
	}
	return target.Path, nil
}

// refusal words a WriteGate error for the model (memdir.Refusal, naming
// no path: the tools' errors never hold a host path), or returns nil for
// any other error.
func (t *Toolset) refusal(err error) error {
	if r := memdir.Refusal("", "memory", err); r != nil {
		return r
	}
	return nil
}

// describe turns a filesystem error into model-readable text naming only
// the memory path the model gave.
func describe(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return toolErr("%s does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return toolErr("%s: permission denied", p)
	}
	return toolErr("%s: the operation failed", p)
}

// decode parses a tool input into v, with a model-readable error.
func decode(input json.RawMessage, v any) error {
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(input, v); err != nil {
		return toolErr("the tool input is not valid: %v", err)
	}
	return nil
}

func tool(name, desc, schema string, call func(context.Context, json.RawMessage) (string, error)) llm.Tool {
	return llm.Tool{Spec: llm.ToolSpec{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}, Call: call}
}

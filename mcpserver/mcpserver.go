// Package mcpserver serves a memory directory to MCP clients (the Model
// Context Protocol): the tools memory_list, memory_read, memory_save,
// memory_delete, memory_recall and memory_search, the index and every
// memory file as resources (memory://index, memory://files/{+file}),
// and the memory prompt. Every write goes through the directory's write
// gate, as the memory tools' do. New builds the server; run it on any
// MCP transport (through AnswerAll for stdio, so a client that pipes
// requests and closes its input gets every answer), or serve it over
// streamable HTTP with HTTPHandler.
package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/memtools"
	"github.com/agentmem-sdk/agentmem/recall"
)

// MaxList bounds memory_list and the file resources, newest first (the
// prompt's manifest keeps 200; a client asking for the list wants more,
// but a model cannot use an unbounded one).
const MaxList = 1000

// MCP names, fixed by the contract.
const (
	mcpIndexURI     = "memory://index"
	mcpFilePrefix   = "memory://files/"
	mcpFileTemplate = "memory://files/{+file}"
	mcpPromptName   = "memory"
	// mcpMaxRead bounds memory_read and a resource read.
	mcpMaxRead = 1 << 20
	// mcpDefaultRecall and mcpMaxRecall bound memory_recall's limit.
	mcpDefaultRecall = 5
	mcpMaxRecall     = 20
	// mcpRecallBytes bounds each recalled memory's content.
	mcpRecallBytes = 4096
)

// memoryServer serves one memory directory over MCP.
type memoryServer struct {
	fs     afero.Fs
	dir    *memdir.Dir
	finder *recall.Finder
	grep   llm.Tool // the memory tools' Grep
	now    func() time.Time

	mu       sync.Mutex
	listed   map[string]bool // file resources currently registered
	resource *mcp.Server
}

// Options tune the server.
type Options struct {
	// Version is reported to clients as the implementation's version.
	Version string
	// Agent is the agent every call is taken to come from (default the
	// main agent): MCP does not say which agent of a client calls, so a
	// host that gives its sub-agents, forks or background queries their
	// own server names it here, and the Dir's SharedWritesMainAgentOnly
	// then refuses or proposes their shared writes. A call may also name
	// a sub-agent, fork or background query itself in its _meta
	// (AgentMetaKey); it is never taken as the main agent's when Agent is
	// another.
	Agent memdir.Agent
}

// AgentMetaKey is the _meta key of a tools/call by which a client says
// the call comes from a sub-agent ("subagent"), a fork ("fork") or a
// background query ("background") of its session; "main" leaves it to
// Options.Agent, and any other value is taken as a sub-agent's.
const AgentMetaKey = "agentmem/agent"

// callAgent is the agent a tools/call is taken to come from: the one its
// _meta names when that is another than the main agent, a sub-agent when
// its _meta says something else than "main" or a known agent, else agent.
func callAgent(req *mcp.CallToolRequest, agent memdir.Agent) memdir.Agent {
	if req.Params == nil {
		return agent
	}
	claim, said := req.Params.Meta[AgentMetaKey]
	if !said {
		return agent
	}
	switch named, _ := claim.(string); memdir.Agent(named) {
	case memdir.AgentSub, memdir.AgentFork, memdir.AgentBackground:
		return memdir.Agent(named)
	case "main":
		return agent
	}
	return memdir.AgentSub // a claim it cannot read is never the main agent's
}

// New returns the MCP server of the memory directory d (created on the
// first save): every save and tool call writes through d, with its
// scanner, synced flag, lock and history.
func New(d *memdir.Dir, opts Options) (*mcp.Server, error) {
	if d == nil {
		return nil, errors.New("mcpserver: New needs the memory directory (memdir.NewDir)")
	}
	d = d.WithDoor(teamwire.DoorMCP) // its shared writes go with its door
	fsys := d.FS()
	finder, err := recall.NewFinder(d, recall.FinderOptions{MaxSelected: mcpMaxRecall})
	if err != nil {
		return nil, err
	}
	tools, err := memtools.New(d, memtools.Options{})
	if err != nil {
		return nil, err
	}
	grep, _ := tools.Tool(memdir.ToolGrep)
	ms := &memoryServer{fs: fsys, dir: d, finder: finder, grep: grep, now: time.Now, listed: map[string]bool{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentmem", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "Long-term memory for this project: Markdown files with a name, a one-line description and a type " +
			"(user, feedback, project, reference), indexed in MEMORY.md. Call memory_recall with the user's request to find " +
			"what is relevant, memory_read to read one, and memory_save to keep something worth remembering across sessions.",
	})
	ms.resource = srv
	ms.addTools(srv)
	srv.AddResource(&mcp.Resource{URI: mcpIndexURI, Name: "MEMORY.md", Title: "Memory index", MIMEType: "text/markdown",
		Description: "The index of the memory directory: one line per memory file."}, ms.readResource)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: mcpFileTemplate, Name: "memory file", MIMEType: "text/markdown",
		Description: "One memory file, by its path in the memory directory (team/ for team memory)."}, ms.readResource)
	srv.AddPrompt(&mcp.Prompt{Name: mcpPromptName, Title: "Memory",
		Description: "The memory section of the system prompt: how to use memory, and the index."}, ms.prompt)
	// The file resources follow the disk: a resources/list rescans (its
	// first page; later pages read the same listing).
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ListResourcesRequest); ok && (r.Params == nil || r.Params.Cursor == "") {
				ms.syncResources(ctx)
			}
			if r, ok := req.(*mcp.CallToolRequest); ok {
				ctx = memdir.WithAgent(ctx, callAgent(r, opts.Agent))
			}
			return next(ctx, method, req)
		}
	})
	return srv, nil
}

// proposed reports whether the shared file at rel was recorded as
// another agent's write (memdir.MainAgentOnlyPropose) or as written from
// untrusted input: a sync sends it so that a repo or store under review
// keeps it for a person.
func (ms *memoryServer) proposed(rel string) bool {
	if !strings.HasPrefix(filepath.ToSlash(rel), "team/") {
		return false
	}
	abs := filepath.Join(ms.dir.Path(), filepath.FromSlash(rel))
	data, err := afero.ReadFile(ms.fs, abs)
	if err != nil {
		return false
	}
	p, ok := ms.dir.Provenance(abs, data)
	return ok && teamwire.UntrustedOrigin(p.Origin)
}

// Tool inputs and outputs.
type (
	listIn struct{}
	fileIn struct {
		File string `json:"file" jsonschema:"the memory file, relative to the memory directory (e.g. deploys.md or team/ci.md)"`
	}
	saveIn struct {
		Name        string `json:"name" jsonschema:"a short title"`
		Description string `json:"description" jsonschema:"one line that says when this memory is relevant"`
		Type        string `json:"type" jsonschema:"user, feedback, project or reference"`
		Body        string `json:"body" jsonschema:"the memory itself; lead with the rule or fact"`
		File        string `json:"file,omitempty" jsonschema:"the file to write (relative, .md); default derived from name; team/... for team memory"`
		IfVersion   string `json:"if_version,omitempty" jsonschema:"new: create the file, never replace one; a version (from memory_read or an earlier save): replace the file only if it still holds that version"`
	}
	recallIn struct {
		Query string `json:"query" jsonschema:"the user's request or the topic to remember about"`
		Limit int    `json:"limit,omitempty" jsonschema:"at most this many memories (default 5, at most 20)"`
	}
	searchIn struct {
		Pattern string `json:"pattern" jsonschema:"a regular expression (RE2 syntax) matched against each line"`
	}

	// MemoryEntry is one memory in memory_list and memory_recall.
	MemoryEntry struct {
		File        string `json:"file"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Type        string `json:"type"`
		Age         string `json:"age"`
		Content     string `json:"content,omitempty"`
		// Scope and Author, in memory_recall: "personal" or "team", and
		// who wrote a team or store memory as the last sync recorded
		// (agentmem.DescribeRecall).
		Scope  string `json:"scope,omitempty"`
		Author string `json:"author,omitempty"`
	}
	// ListOutput is the structured result of memory_list and memory_recall.
	ListOutput struct {
		Memories []MemoryEntry `json:"memories"`
		// More reports whether older memories were left out of the list.
		More bool `json:"more,omitempty"`
		// Mode, in memory_recall, is "select": the memories as they are
		// (Claude Code's memory_recall event).
		Mode string `json:"mode,omitempty"`
	}
	// readOutput is the structured result of memory_read.
	readOutput struct {
		File    string `json:"file"`
		Content string `json:"content"`
		// Version is the file's version, for memory_save's if_version.
		Version string `json:"version"`
	}
	// SaveOutput is the structured result of memory_save.
	SaveOutput struct {
		File      string `json:"file"`
		IndexLine string `json:"index_line"`
		Replaced  bool   `json:"replaced"`
		// Version is the saved file's version, for a later if_version.
		Version string `json:"version"`
		// Notice says the save waits for review where the team keeps one
		// (another agent's write, or one from untrusted input), and that
		// the index nears or passes its load limit.
		Notice string `json:"notice,omitempty"`
	}
	// pauseOutput is the structured result of memory_pause.
	pauseOutput struct {
		Paused bool `json:"paused"`
	}
	// deleteOutput is the structured result of memory_delete.
	deleteOutput struct {
		File    string `json:"file"`
		Deleted bool   `json:"deleted"`
	}
	// searchOutput is the structured result of memory_search.
	searchOutput struct {
		Matches []searchMatch `json:"matches"`
	}
	// searchMatch is one line memory_search found.
	searchMatch struct {
		File string `json:"file"`
		Line int    `json:"line"`
		Text string `json:"text"`
	}
)

// safe turns a panic in a tool into a tool error.
func safe[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, errors.New("internal error in the memory server; nothing was changed by this call")
			}
		}()
		return h(ctx, req, in)
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (ms *memoryServer) addTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_list", Description: "List the memories (the newest 1,000): file, name, description, type and age, newest first."},
		safe(func(ctx context.Context, _ *mcp.CallToolRequest, _ listIn) (*mcp.CallToolResult, ListOutput, error) {
			entries, more, err := ms.list(ctx)
			if err != nil {
				return nil, ListOutput{}, err
			}
			if len(entries) == 0 {
				return text("No memories yet."), ListOutput{Memories: []MemoryEntry{}}, nil
			}
			var b strings.Builder
			for _, m := range entries {
				fmt.Fprintf(&b, "%s (%s, %s): %s — %s\n", m.File, m.Type, m.Age, m.Name, m.Description)
			}
			if more {
				fmt.Fprintf(&b, "(older memories not shown: only the newest %d are listed; find others with memory_recall or memory_search)\n", MaxList)
			}
			return text(b.String()), ListOutput{Memories: entries, More: more}, nil
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_read", Description: "Read one memory file (or MEMORY.md, the index) in full."},
		safe(func(ctx context.Context, _ *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, readOutput, error) {
			data, err := ms.read(in.File)
			if err != nil {
				return nil, readOutput{}, err
			}
			return text(string(data)), readOutput{File: in.File, Content: string(data), Version: memdir.MemoryVersion(data)}, nil
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_save", Description: "Save a memory: writes the file with its frontmatter and its pointer in MEMORY.md " +
		"(replacing the file and pointer when the file exists; if_version \"new\" refuses to replace one, and a version from memory_read replaces it only if unchanged since). Never save secrets; team/ files are shared with the team and are refused when they hold a credential."},
		safe(func(ctx context.Context, _ *mcp.CallToolRequest, in saveIn) (*mcp.CallToolResult, SaveOutput, error) {
			typ, ok := memdir.ParseMemoryType(in.Type)
			if !ok {
				return nil, SaveOutput{}, fmt.Errorf("type must be user, feedback, project or reference, not %q", in.Type)
			}
			if strings.TrimSpace(in.Name) == "" || strings.TrimSpace(in.Body) == "" {
				return nil, SaveOutput{}, errors.New("name and body are required")
			}
			res, err := ms.dir.Save(ctx, memdir.Memory{File: in.File, Name: in.Name, Description: in.Description, Type: typ, Body: in.Body, IfVersion: in.IfVersion})
			if err != nil {
				return nil, SaveOutput{}, toolError(in.File, err)
			}
			ms.noteFile(res.File, true)
			verb := "Saved"
			if res.ReplacedPointer {
				verb = "Updated"
			}
			answer := fmt.Sprintf("%s %s (version %s); MEMORY.md: %s", verb, res.File, res.Version, res.IndexLine)
			notice := ms.indexNotice(res.File)
			if ms.proposed(res.File) {
				notice = strings.TrimSpace("Recorded as another agent's write or as written from untrusted input: a team repo or store under review keeps it for a person's review before the team sees it.\n\n" + notice)
			}
			if notice != "" {
				answer += "\n\n" + notice
			}
			return text(answer), SaveOutput{File: res.File, IndexLine: res.IndexLine, Replaced: res.ReplacedPointer, Version: res.Version, Notice: notice}, nil
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_pause", Description: "Pause the agents' writes to this memory directory (saves, deletes; " +
		"the memory tools, extraction and consolidation of every process too) when the person asks for it, as Claude Code's /pause-memory does. " +
		"Only the person resumes them (agentmem resume); no tool does."},
		safe(func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, pauseOutput, error) {
			if err := memdir.PauseDirectory(ms.dir.FS(), ms.dir.Path()); err != nil {
				return nil, pauseOutput{}, fmt.Errorf("could not pause: %v", err)
			}
			return text("Memory writes are paused until the person runs agentmem resume."), pauseOutput{Paused: true}, nil
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_delete", Description: "Delete a memory file and its pointer in MEMORY.md."},
		safe(func(ctx context.Context, _ *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, deleteOutput, error) {
			if err := ms.dir.Delete(ctx, in.File); err != nil {
				return nil, deleteOutput{}, toolError(in.File, err)
			}
			ms.noteFile(in.File, false)
			return text("Deleted " + in.File), deleteOutput{File: in.File, Deleted: true}, nil
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_recall", Description: "Find the few memories relevant to a request, best first, with their content. " +
		"Returns nothing when no memory is relevant."},
		safe(func(ctx context.Context, _ *mcp.CallToolRequest, in recallIn) (*mcp.CallToolResult, ListOutput, error) {
			if strings.TrimSpace(in.Query) == "" {
				return nil, ListOutput{}, errors.New("query is required")
			}
			limit := in.Limit
			if limit <= 0 {
				limit = mcpDefaultRecall
			}
			limit = min(limit, mcpMaxRecall)
			found := ms.finder.Find(ctx, in.Query, nil, nil)
			found = found[:min(limit, len(found))]
			files := make([]string, len(found))
			for i, h := range found {
				files[i] = h.Filename
			}
			turn := agentmem.DescribeRecall(ms.fs, ms.dir.Path(), files)
			out := ListOutput{Memories: []MemoryEntry{}, Mode: turn.Mode}
			var b strings.Builder
			for i, h := range found {
				m := ms.entry(h)
				if data, err := ms.read(h.Filename); err == nil {
					m.Content = string(data[:min(len(data), mcpRecallBytes)])
				}
				m.Scope, m.Author = turn.Memories[i].Scope, turn.Memories[i].Author
				out.Memories = append(out.Memories, m)
				by := ""
				if m.Author != "" {
					by = ", by " + m.Author
				}
				fmt.Fprintf(&b, "## %s (%s, %s%s, saved %s)\n%s\n\n", m.File, m.Type, m.Scope, by, m.Age, strings.TrimSpace(m.Content))
			}
			if len(out.Memories) == 0 {
				return text("No memory is relevant to this."), out, nil
			}
			return text(b.String()), out, nil
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: "memory_search", Description: "Search every memory file for lines matching a regular expression (RE2); returns file:line:text."},
		safe(func(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOutput, error) {
			matches, more, err := ms.search(ctx, in.Pattern)
			if err != nil {
				return nil, searchOutput{}, err
			}
			if len(matches) == 0 {
				return text("No line matches."), searchOutput{Matches: []searchMatch{}}, nil
			}
			var b strings.Builder
			for _, m := range matches {
				fmt.Fprintf(&b, "%s:%d:%s\n", m.File, m.Line, m.Text)
			}
			if more {
				b.WriteString("(more matches not shown; narrow the pattern)\n")
			}
			return text(b.String()), searchOutput{Matches: matches}, nil
		}))
}

// toolError words a refusal for the model (memdir.Refusal), without host
// paths.
func toolError(file string, err error) error {
	if r := memdir.Refusal(file, "memory", err); r != nil {
		return r
	}
	if errors.Is(err, memdir.ErrMemoryNotFound) {
		return errors.New("no such memory file (see memory_list)")
	}
	if errors.Is(err, memdir.ErrVersionMismatch) {
		return errors.New(strings.TrimPrefix(err.Error(), "memdir: "))
	}
	return err
}

// indexNotice is what the model should know of the size of the index
// that file's pointer went into (memdir.IndexNotice), "" when nothing.
func (ms *memoryServer) indexNotice(file string) string {
	rel := memdir.EntrypointName
	if strings.HasPrefix(file, memdir.TeamDirName+"/") {
		rel = memdir.TeamDirName + "/" + memdir.EntrypointName
	}
	index, err := ms.read(rel)
	if err != nil {
		return ""
	}
	return memdir.IndexNotice(rel, string(index), memdir.IndexLimits{})
}

// list returns the newest MaxList memories, and whether there are more.
func (ms *memoryServer) list(ctx context.Context) ([]MemoryEntry, bool, error) {
	headers, err := memdir.ScanMemoryFiles(ctx, ms.fs, ms.dir.Path(), memdir.ScanOptions{MaxFiles: MaxList + 1})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, errors.New("the memory directory could not be read")
	}
	more := len(headers) > MaxList
	headers = headers[:min(len(headers), MaxList)]
	out := make([]MemoryEntry, 0, len(headers))
	for _, h := range headers {
		out = append(out, ms.entry(h))
	}
	return out, more, nil
}

func (ms *memoryServer) entry(h memdir.MemoryHeader) MemoryEntry {
	return MemoryEntry{File: h.Filename, Name: h.Name, Description: h.Description, Type: string(h.Type), Age: memdir.MemoryAge(h.ModTime, ms.now())}
}

// read returns a memory file or an index, opened confined to the memory
// directory.
func (ms *memoryServer) read(file string) ([]byte, error) {
	if file == "" {
		return nil, errors.New("file is required (see memory_list)")
	}
	if file != memdir.EntrypointName && file != memdir.TeamDirName+"/"+memdir.EntrypointName {
		if err := memdir.CheckFile(file); err != nil {
			return nil, fmt.Errorf("not a memory file: %s", strings.TrimPrefix(err.Error(), "memdir: invalid memory: "))
		}
	}
	f, err := ms.dir.Gate().Open(filepath.Join(ms.dir.Path(), filepath.FromSlash(file)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no such memory file (see memory_list)")
	}
	if err != nil {
		return nil, toolError(file, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, mcpMaxRead+1))
	if err != nil {
		return nil, errors.New("the file could not be read (is it a directory?)")
	}
	if len(data) > mcpMaxRead {
		return nil, fmt.Errorf("the file is over %d bytes; memory files should be short", mcpMaxRead)
	}
	return data, nil
}

// search runs the memory tools' Grep over the directory.
func (ms *memoryServer) search(ctx context.Context, pattern string) ([]searchMatch, bool, error) {
	if pattern == "" {
		return nil, false, errors.New("pattern is required")
	}
	if ok, _ := afero.DirExists(ms.fs, ms.dir.Path()); !ok {
		return nil, false, nil
	}
	out, err := ms.grep.Call(ctx, []byte(fmt.Sprintf(`{"pattern":%q,"output_mode":"content","glob":"*.md"}`, pattern)))
	if err != nil {
		return nil, false, err
	}
	var matches []searchMatch
	more := false
	prefix := ms.dir.Path() + string(filepath.Separator)
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			more = more || strings.HasPrefix(line, "(more")
			continue
		}
		file, after, _ := strings.Cut(rest, ":")
		num, txt, _ := strings.Cut(after, ":")
		var n int
		fmt.Sscan(num, &n)
		matches = append(matches, searchMatch{File: filepath.ToSlash(file), Line: n, Text: txt})
	}
	return matches, more, nil
}

// readResource serves memory://index and memory://files/<file>.
func (ms *memoryServer) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	file := memdir.EntrypointName
	if uri != mcpIndexURI {
		var ok bool
		if file, ok = strings.CutPrefix(uri, mcpFilePrefix); !ok || file == "" {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		// A client may percent-encode the path ("team%2Fci.md"); the name
		// is validated after decoding, so an encoded ".." is still refused.
		if decoded, err := url.PathUnescape(file); err == nil {
			file = decoded
		}
	}
	data, err := ms.read(file)
	if err != nil {
		if file == memdir.EntrypointName && strings.HasPrefix(err.Error(), "no such") {
			data = nil // an empty directory has an empty index
		} else {
			return nil, mcp.ResourceNotFoundError(uri)
		}
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: "text/markdown", Text: string(data)}
	if len(data) == 0 {
		// The SDK omits an empty text, and clients then reject contents
		// with neither text nor blob: an empty file is an empty blob.
		c.Blob = []byte{}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// syncResources registers one resource per memory file on disk and drops
// those of files that are gone.
func (ms *memoryServer) syncResources(ctx context.Context) {
	entries, _, err := ms.list(ctx)
	if err != nil {
		return
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	seen := map[string]bool{}
	for _, m := range entries {
		seen[m.File] = true
		ms.addResourceLocked(m)
	}
	var gone []string
	for f := range ms.listed {
		if !seen[f] {
			gone = append(gone, mcpFilePrefix+f)
			delete(ms.listed, f)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		ms.resource.RemoveResources(gone...)
	}
}

func (ms *memoryServer) addResourceLocked(m MemoryEntry) {
	ms.listed[m.File] = true
	ms.resource.AddResource(&mcp.Resource{URI: mcpFilePrefix + m.File, Name: m.File, Title: cmp.Or(m.Name, m.File), Description: m.Description, MIMEType: "text/markdown"}, ms.readResource)
}

// noteFile keeps the listed resources in step after a save or delete.
func (ms *memoryServer) noteFile(file string, exists bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if !exists {
		if ms.listed[file] {
			delete(ms.listed, file)
			ms.resource.RemoveResources(mcpFilePrefix + file)
		}
		return
	}
	data, err := ms.read(file)
	if err != nil {
		return
	}
	fm, _, _ := memdir.ParseFrontmatter(data)
	ms.addResourceLocked(MemoryEntry{File: file, Name: fm.Name, Description: fm.Description})
}

// prompt serves the memory section of the system prompt.
func (ms *memoryServer) prompt(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	team, _ := afero.DirExists(ms.fs, memdir.TeamMemPath(ms.dir.Path()))
	p, err := memdir.LoadMemoryPrompt(ctx, afero.NewReadOnlyFs(ms.fs), memdir.LoadPromptRequest{Enabled: true, AutoDir: ms.dir.Path(), TeamActive: team})
	if err != nil {
		return nil, errors.New("the memory prompt could not be built")
	}
	return &mcp.GetPromptResult{Description: "The memory section of the system prompt",
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: p.Text}}}}, nil
}

// HTTPHandler serves srv over the streamable HTTP transport. Cross-origin
// browser requests are refused (403): a web page must not reach a local
// memory server. There is no authentication: listen on loopback only.
func HTTPHandler(srv *mcp.Server) http.Handler {
	return http.NewCrossOriginProtection().Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}

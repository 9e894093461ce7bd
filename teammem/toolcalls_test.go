package teammem

import (
	"encoding/json"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/stretchr/testify/assert"
)

func call(name string, kv ...string) llm.ToolCall {
	in := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		in[kv[i]] = kv[i+1]
	}
	return llm.ToolCall{Name: name, Input: js(in)}
}

func TestToolDetection(t *testing.T) {
	d := ToolDetector{TeamDir: "/m/team/", AutoMemDir: "/m/"}
	cases := []struct {
		call          llm.ToolCall
		search, write bool
		summary       string
	}{
		{call("Edit", "file_path", "/m/team/notes/foo.md", "new_string", "x"), false, true, "Edited team/notes/foo.md"},
		{call("Write", "file_path", "/m/team/ci.md", "content", "x"), false, true, "Wrote team/ci.md"},
		{call("NotebookEdit", "notebook_path", "/m/team/nb.ipynb"), false, true, "Edited team/nb.ipynb"},
		{call("Grep", "pattern", "flaky", "path", "/m/team/decisions"), true, false, "Searched team/decisions/"},
		{call("Grep", "pattern", "flaky", "path", "/m/team"), true, false, "Searched team/"},
		{call("Glob", "pattern", "/m/team/**/*.md"), true, false, "Searched team/**/*.md"},
		{call("Edit", "file_path", "/m/private.md"), false, false, ""},
		{call("Edit", "file_path", "/m/team-evil/x.md"), false, false, ""},
		{call("Edit", "file_path", "/m/team/../x.md"), false, false, ""},
		{call("Write", "file_path", "team/relative.md"), false, false, ""},
		{call("Read", "file_path", "/m/team/a.md"), false, false, ""},
		{call("Grep", "pattern", "x"), false, false, ""},
		{call("Grep", "pattern", "x", "path", "/m/"), false, false, ""},
		{llm.ToolCall{Name: "Edit", Input: js(map[string]any{"file_path": 42})}, false, false, ""},
		{llm.ToolCall{Name: "Edit"}, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.call.Name+" "+c.summary, func(t *testing.T) {
			assert.Equal(t, c.search, d.IsTeamMemorySearch(c.call))
			assert.Equal(t, c.write, d.IsTeamMemoryWriteOrEdit(c.call, nil))
			parts := d.AppendTeamMemorySummaryParts([]string{"before"}, c.call, nil)
			if c.summary == "" {
				assert.Equal(t, []string{"before"}, parts)
			} else {
				assert.Equal(t, []string{"before", c.summary}, parts)
			}
		})
	}
}

func TestToolDetectionAllowList(t *testing.T) {
	d := ToolDetector{TeamDir: "/m/team/"}
	edit := call("Edit", "file_path", "/m/team/a.md")
	assert.False(t, d.IsTeamMemoryWriteOrEdit(edit, []string{"Write"}))
	assert.True(t, d.IsTeamMemoryWriteOrEdit(edit, []string{"Write", "Edit"}))
	assert.Empty(t, d.AppendTeamMemorySummaryParts(nil, edit, []string{}))
	assert.Equal(t, []string{"Edited team/a.md"}, d.AppendTeamMemorySummaryParts(nil, edit, nil))
}

// TestToolDetectionHostNames: the detectors know Claude Code's tool names;
// a host whose tools are named otherwise gives each call the name of the
// tool it stands for, and a name it does not map is not a write or search.
func TestToolDetectionHostNames(t *testing.T) {
	d := ToolDetector{TeamDir: "/m/team/"}
	asClaudeCode := map[string]string{"create_file": "Write", "str_replace": "Edit", "search": "Grep"}
	mapped := func(c llm.ToolCall) llm.ToolCall { c.Name = asClaudeCode[c.Name]; return c }
	assert.False(t, d.IsTeamMemoryWriteOrEdit(call("create_file", "file_path", "/m/team/a.md"), nil))
	assert.True(t, d.IsTeamMemoryWriteOrEdit(mapped(call("create_file", "file_path", "/m/team/a.md")), nil))
	assert.True(t, d.IsTeamMemoryWriteOrEdit(mapped(call("str_replace", "file_path", "/m/team/a.md")), nil))
	assert.Equal(t, []string{"Wrote team/a.md"}, d.AppendTeamMemorySummaryParts(nil, mapped(call("create_file", "file_path", "/m/team/a.md")), nil))
	assert.False(t, d.IsTeamMemorySearch(call("search", "path", "/m/team/x")))
	assert.True(t, d.IsTeamMemorySearch(mapped(call("search", "path", "/m/team/x"))))
}

// js is a tool input as a model sends it.
func js(in map[string]any) json.RawMessage {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return b
}

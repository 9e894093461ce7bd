package teammem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/spf13/afero"
)

func ExampleValidateTeamMemKey() {
	fsys := afero.NewMemMapFs()
	p, err := teammem.ValidateTeamMemKey(fsys, "/m/team/", "notes/ci.md")
	fmt.Println(p, err)
	for _, key := range []string{"../secrets.md", "%2e%2e%2fx.md", "．．／x.md", `a\b.md`, "/etc/passwd"} {
		_, err := teammem.ValidateTeamMemKey(fsys, "/m/team/", key)
		var pte *teammem.PathTraversalError
		fmt.Println(errors.As(err, &pte), pte.Reason)
	}
	// Output:
	// /m/team/notes/ci.md <nil>
	// true path escapes the team memory directory
	// true percent-encoded traversal in key
	// true Unicode-normalized traversal in key
	// true backslash in key
	// true absolute key
}

func ExampleValidateTeamMemWritePath() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	team := filepath.Join(dir, "team")
	_ = os.MkdirAll(team, 0o755)
	_ = os.Symlink("/etc", filepath.Join(team, "etc"))

	_, err := teammem.ValidateTeamMemWritePath(afero.NewOsFs(), team, filepath.Join(team, "etc", "hosts"))
	fmt.Println(err)
	_, err = teammem.ValidateTeamMemWritePath(afero.NewOsFs(), team, filepath.Join(dir, "team-evil", "x.md"))
	fmt.Println(err)
	// Output:
	// agentmem: path escapes the team memory directory through a symbolic link
	// agentmem: path escapes the team memory directory
}

func ExampleToolDetector() {
	d := teammem.ToolDetector{TeamDir: "/m/team/", AutoMemDir: "/m/"}
	calls := []llm.ToolCall{
		{Name: "Edit", Input: json.RawMessage(`{"file_path": "/m/team/notes/foo.md"}`)},
		{Name: "Grep", Input: json.RawMessage(`{"pattern": "flaky", "path": "/m/team/decisions"}`)},
		{Name: "Edit", Input: json.RawMessage(`{"file_path": "/m/private.md"}`)},
	}
	var parts []string
	for _, c := range calls {
		parts = d.AppendTeamMemorySummaryParts(parts, c, nil)
	}
	fmt.Println(parts)
	// Output:
	// [Edited team/notes/foo.md Searched team/decisions/]
}

package teammem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/rootfs"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/spf13/afero"
)

// A host wires the guard into its own Write tool: validate the path, scan
// the content, and write through a filesystem confined to the team dir.
func ExampleWriteGuard() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	autoDir := filepath.Join(dir, "memory")
	teamDir := teammem.TeamMemPath(autoDir)
	_ = os.MkdirAll(teamDir, 0o755)

	guard := teammem.NewWriteGuard(teamDir)
	confined, _ := rootfs.New(teamDir)
	defer confined.Close()

	// writeTool is what the model's Write tool call runs.
	writeTool := func(call llm.ToolCall) error {
		if err := guard.Check(afero.NewOsFs(), call); err != nil {
			return err // safe to show the model: no host paths, no secrets
		}
		var in struct {
			FilePath string `json:"file_path"`
			Content  string `json:"content"`
		}
		_ = json.Unmarshal(call.Input, &in)
		rel, _ := filepath.Rel(teamDir, in.FilePath)
		return afero.WriteFile(confined, rel, []byte(in.Content), 0o644)
	}
	write := func(path, content string) llm.ToolCall {
		input, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
		return llm.ToolCall{Name: "Write", Input: input}
	}

	ok := write(filepath.Join(teamDir, "ci.md"), "CI must stay green.")
	fmt.Println(writeTool(ok))

	// A link planted in the team dir that leads out of it.
	_ = os.Symlink(dir, filepath.Join(teamDir, "notes"))
	escape := write(filepath.Join(teamDir, "notes", "x.md"), "x")
	fmt.Println(writeTool(escape))

	secret := write(filepath.Join(teamDir, "deploy.md"), "token: "+"ghp_"+"aB3dE5fG7hJ9kL2mN4pQ6rS8tUaB3dE5fG7h")
	err := writeTool(secret)
	fmt.Println(errors.Is(err, secrets.ErrFound), err)
	// Output:
	// <nil>
	// agentmem: path escapes the team memory directory through a symbolic link
	// true refusing to write a GitHub PAT into team memory, which every contributor can read; remove the secret and write again
}

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

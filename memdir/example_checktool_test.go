package memdir_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/rootfs"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
)

// A host that syncs only the team directory wires the check into its own
// Write tool: the team view of the memory directory checks the path and
// the content, and the tool writes through a filesystem confined to the
// team directory.
func ExampleDir_CheckToolCall() {
	tmp, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(tmp)
	autoDir := filepath.Join(tmp, "memory")
	dir, _ := memdir.NewDir(afero.NewOsFs(), autoDir, memdir.DirOptions{})
	team, _ := dir.Sub(memdir.TeamDirName)
	_ = os.MkdirAll(team.Path(), 0o755)
	confined, _ := rootfs.New(team.Path())
	defer confined.Close()

	// writeTool is what the model's Write tool call runs.
	writeTool := func(call llm.ToolCall) error {
		if err := team.CheckToolCall(call); err != nil {
			return err // safe to show the model: no host paths, no secrets
		}
		var in struct {
			FilePath string `json:"file_path"`
			Content  string `json:"content"`
		}
		_ = json.Unmarshal(call.Input, &in)
		rel, _ := filepath.Rel(team.Path(), in.FilePath)
		return afero.WriteFile(confined, rel, []byte(in.Content), 0o644)
	}
	write := func(path, content string) llm.ToolCall {
		input, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
		return llm.ToolCall{Name: "Write", Input: input}
	}

	ok := write(filepath.Join(team.Path(), "ci.md"), "CI must stay green.")
	fmt.Println(writeTool(ok))

	// A link planted in the team dir that leads out of it.
	_ = os.Symlink(tmp, filepath.Join(team.Path(), "notes"))
	fmt.Println(writeTool(write(filepath.Join(team.Path(), "notes", "x.md"), "x")))

	// A folder beside it whose name starts like it.
	fmt.Println(writeTool(write(filepath.Join(autoDir, "team-evil", "x.md"), "x")))

	secret := write(filepath.Join(team.Path(), "deploy.md"), "token: "+"ghp_"+"aB3dE5fG7hJ9kL2mN4pQ6rS8tUaB3dE5fG7h")
	err := writeTool(secret)
	fmt.Println(errors.Is(err, secrets.ErrFound), err)
	// Output:
	// <nil>
	// agentmem: path escapes the team memory directory through a symbolic link
	// agentmem: path escapes the team memory directory
	// true refusing to write a GitHub PAT into team memory, which every contributor can read; remove the secret and write again
}

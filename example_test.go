package agentmem_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/agentmem/agentmem"
)

// A host gives its agent memory with one constructor; here offline, with
// no model, so the jobs that need one are left out.
func ExampleNew() {
	root, _ := os.MkdirTemp("", "agentmem-example-")
	defer os.RemoveAll(root)
	project := filepath.Join(root, "shop")
	_ = os.MkdirAll(project, 0o755)

	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{
		ProjectRoot: project, ConfigHome: filepath.Join(root, ".claude"),
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mem.Close()
	ctx := context.Background()
	section, _ := mem.SystemPrompt(ctx)
	fmt.Println(strings.Contains(section, mem.Dir()))

	_ = os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"),
		[]byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644)
	msg := mem.UserMessage(ctx, "can I deploy on Friday?") // the prompt, then the memories as their own block
	fmt.Println(strings.Contains(msg.Content[1].Text, "Never deploy on Fridays."))
	fmt.Println(len(mem.Tools()) > 0)
	// Output:
	// true
	// true
	// true
}

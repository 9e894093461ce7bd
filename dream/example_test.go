package dream_test

import (
	"context"
	"fmt"

	"github.com/agentmem-sdk/agentmem/dream"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

func ExampleDreamer_MaybeRun() {
	fsys := afero.NewMemMapFs()
	_ = fsys.MkdirAll("/home/u/.claude/projects/-work-shop/memory", 0o755)
	model := llmtest.New(llmtest.Text("Improved 0 memories.")) // the host's llm.Model
	dir, _ := memdir.NewDir(fsys, "/home/u/.claude/projects/-work-shop/memory", memdir.DirOptions{})
	d, _ := dream.New(dir, model, dream.Options{
		ConfigHome: "/home/u/.claude", OriginalCwd: "/work/shop", SessionID: "current",
	})
	out := d.MaybeRun(context.Background())
	fmt.Println(out.Ran, out.Stopped)
	out = d.Force(context.Background())
	fmt.Println(out.Ran, out.Err)
	// Output:
	// false not_enough_sessions
	// true <nil>
}

package memtools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/memtools"
	"github.com/spf13/afero"
)

func ExampleNew() {
	fsys := afero.NewMemMapFs()
	_ = afero.WriteFile(fsys, "/mem/ci.md", []byte("CI must stay green\nflaky tests are quarantined\n"), 0o644)
	dir, _ := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	tools, _ := memtools.New(dir, memtools.Options{})

	grep, _ := tools.Tool(memdir.ToolGrep)
	out, _ := grep.Call(context.Background(), json.RawMessage(`{"pattern":"flaky","output_mode":"content"}`))
	fmt.Print(out)

	read, _ := tools.Tool(memdir.ToolRead)
	_, err := read.Call(context.Background(), json.RawMessage(`{"file_path":"/etc/passwd"}`))
	fmt.Println(err)
	// Output:
	// /mem/ci.md:2:flaky tests are quarantined
	// refused: the path is outside the memory directory
}

func ExampleExtractPermission() {
	dir, _ := memdir.NewDir(afero.NewMemMapFs(), "/mem", memdir.DirOptions{})
	perm := memtools.ExtractPermission(dir, nil)
	for _, input := range []string{`{"file_path":"/mem/a.md","content":"x"}`, `{"file_path":"/home/u/.bashrc","content":"x"}`} {
		d := perm(context.Background(), llm.ToolCall{Name: memdir.ToolWrite, Input: json.RawMessage(input)})
		fmt.Println(strings.TrimSpace(fmt.Sprint(d.Allow, " ", d.Reason)))
	}
	// Output:
	// true
	// false you may only write inside /mem
}

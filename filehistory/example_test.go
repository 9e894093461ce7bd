package filehistory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/filehistory"
)

// A host snapshots before each prompt, tracks before each tool write, and
// rewinds when the user asks to undo a turn.
func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "filehistory-example")
	defer os.RemoveAll(root)
	notes := filepath.Join(root, "notes.md")
	_ = os.WriteFile(notes, []byte("keep the API small\n"), 0o644)

	tr, _ := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(root, ".claude"), "session-1", filehistory.Options{})

	_ = tr.MakeSnapshot(ctx, "msg-1") // the user's prompt arrives
	_ = tr.TrackEdit(ctx, notes)      // the agent's Write tool, before writing
	_ = os.WriteFile(notes, []byte("make the API huge\nand add flags\n"), 0o644)

	st, _ := tr.Rewind(ctx, "msg-1", filehistory.RewindOptions{})
	b, _ := os.ReadFile(notes)
	fmt.Printf("%d file, +%d -%d\n%s", len(st.FilesChanged), st.Insertions, st.Deletions, b)
	// Output:
	// 1 file, +1 -2
	// keep the API small
}

package dream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/secrets"
)

// TestConsolidationWritesThroughTheHostsDir: the consolidation's tools
// write through the Dir the host gave, so a directory synced to an
// account refuses a credential the consolidation copies into a memory,
// and the host's own scanner is the one that judges (one that knows no
// rule lets the same text through), for a run and for a stage.
func TestConsolidationWritesThroughTheHostsDir(t *testing.T) {
	token := "ghp_" + strings.Repeat("a1B2", 9)
	const stage = "/c/projects/-work-shop/stage"
	copying := func(dir string) *llmtest.Model {
		return llmtest.New(
			llmtest.ToolUse("1", "Write", map[string]any{"file_path": dir + "/deploys.md", "content": "---\nname: Deploys\ndescription: d\ntype: project\n---\nThe deploy token is " + token + "\n"}),
			llmtest.Text("Done."),
		)
	}
	run := func(t *testing.T, opts memdir.DirOptions, staged bool) afero.Fs {
		clock := &testClock{now: now0}
		fsys := tree(t, 1, now0.Add(-time.Hour))
		require.NoError(t, afero.WriteFile(fsys, autoDir+"/ci.md", []byte("---\nname: CI\ndescription: c\ntype: project\n---\nGreen.\n"), 0o644))
		dir, err := memdir.NewDir(fsys, autoDir, opts)
		require.NoError(t, err)
		target := autoDir
		if staged {
			target = stage
		}
		d, err := New(dir, copying(target), Options{ConfigHome: cfgHome, OriginalCwd: cwd, SessionID: current,
			Now: clock.Now, Lock: LockOptions{PID: 4242, Alive: func(int) bool { return true }}})
		require.NoError(t, err)
		if staged {
			st, err := d.ForceStaged(context.Background(), StageOptions{Dir: stage})
			require.NoError(t, err)
			if st != nil && st.Dir != "" {
				exists, _ := afero.Exists(fsys, st.Dir+"/deploys.md")
				if opts.Synced && opts.Scanner == nil {
					assert.False(t, exists, "the stage has the host's rules too")
				}
				require.NoError(t, st.Accept(context.Background()))
			}
			return fsys
		}
		out := d.Force(context.Background())
		require.NoError(t, out.Err)
		return fsys
	}
	for _, staged := range []bool{false, true} {
		fsys := run(t, memdir.DirOptions{Synced: true}, staged)
		exists, _ := afero.Exists(fsys, autoDir+"/deploys.md")
		assert.False(t, exists, "staged=%v: a synced directory refuses the credential", staged)

		fsys = run(t, memdir.DirOptions{Synced: true, Scanner: &secrets.Scanner{}}, staged)
		exists, _ = afero.Exists(fsys, autoDir+"/deploys.md")
		assert.True(t, exists, "staged=%v: the host's scanner judges", staged)

		fsys = run(t, memdir.DirOptions{}, staged)
		exists, _ = afero.Exists(fsys, autoDir+"/deploys.md")
		assert.True(t, exists, "staged=%v: a private directory keeps it", staged)
	}
}

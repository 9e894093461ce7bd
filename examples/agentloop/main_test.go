package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/docstest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/transcript"
)

// memoryDir is where a person's memory for their shop checkout lives.
func memoryDir(t *testing.T, home string) string {
	p, err := memdir.ResolveAutoMemPath(afero.NewOsFs(), memdir.AutoMemPathRequest{ConfigHome: filepath.Join(home, ".claude"), ProjectRoot: filepath.Join(home, "shop")})
	require.NoError(t, err)
	return p.Dir
}

func TestAgentLoopUsesEveryLayer(t *testing.T) {
	root := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), &out, root))
	log := out.String()
	ana, ben := filepath.Join(root, "ana"), filepath.Join(root, "ben")

	// Extraction saved the rule as team memory in the first session.
	anaMem := memoryDir(t, ana)
	rule, err := os.ReadFile(filepath.Join(anaMem, "team", "deploy_days.md"))
	require.NoError(t, err)
	assert.Contains(t, string(rule), "never deploy on Fridays")
	// Recall answered the later sessions from it.
	assert.Equal(t, 5, strings.Count(log, "ana> Can I deploy the release on Friday?\nagent> No: memory says"), log)
	// Team sync: Ben, in his own home, got it from the server and recall used it.
	assert.Contains(t, log, "ben> Can I deploy the release on Friday?\nagent> No: memory says")
	benRule, err := os.ReadFile(filepath.Join(memoryDir(t, ben), "team", "deploy_days.md"))
	require.NoError(t, err)
	assert.Contains(t, string(benRule), "never deploy on Fridays")

	// Transcripts: one Claude Code session file per session, each message once.
	store, err := transcript.NewJSONLStore(afero.NewOsFs(), transcript.ProjectDir(filepath.Join(ana, ".claude"), filepath.Join(ana, "shop")), transcript.Options{})
	require.NoError(t, err)
	sessions, err := store.List(context.Background())
	require.NoError(t, err)
	assert.Len(t, sessions, 6)
	hits, err := transcript.Search(context.Background(), store, "never deploy Fridays", 10)
	require.NoError(t, err)
	assert.NotEmpty(t, hits)

	// Session summaries: each session's notes got a title.
	summaries, _ := filepath.Glob(filepath.Join(ana, ".claude", "projects", "*", "*", "session-memory", "summary.md"))
	assert.Len(t, summaries, 6)
	if len(summaries) > 0 {
		notes, _ := os.ReadFile(summaries[0])
		assert.Contains(t, string(notes), "Release planning")
	}

	// Consolidation ran once five earlier sessions existed, and can be rewound.
	assert.Contains(t, string(rule), "(confirmed in six sessions)")
	h, err := filehistory.Open(afero.NewOsFs(), filepath.Join(ana, ".claude"), "dream-runs", filehistory.Options{})
	require.NoError(t, err)
	require.Len(t, h.Snapshots(), 1)
	// The extraction's run is in its own history.
	x, err := filehistory.Open(afero.NewOsFs(), filepath.Join(ana, ".claude"), "extract-runs", filehistory.Options{})
	require.NoError(t, err)
	assert.NotEmpty(t, x.Snapshots())
}

// TestHostCodeIsShort counts the host's lines in main.go: everything but
// comments, blank lines, the package clause and imports.
func TestHostCodeIsShort(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	n, inImport := 0, false
	for _, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case inImport:
			inImport = l != ")"
		case l == "import (":
			inImport = true
		case l == "" || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "package "):
		default:
			n++
		}
	}
	t.Logf("host code: %d lines", n)
	assert.Less(t, n, 40)
	// The guides quote the figure: it must be this one.
	readme := []byte(docstest.Text(t, filepath.Join("..", "..")))
	m := regexp.MustCompile(`agentloop\x60 gives a scripted agent memory in (\d+) lines of\s+host code`).FindSubmatch(readme)
	require.NotNil(t, m, "the guides state the host code's length")
	assert.Equal(t, strconv.Itoa(n), string(m[1]))
}

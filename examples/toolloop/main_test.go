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

	"github.com/agentmem-sdk/agentmem/internal/docstest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/transcript"
)

func TestToolLoop(t *testing.T) {
	root := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), &out, root))
	log := out.String()
	project, config := filepath.Join(root, "shop"), filepath.Join(root, ".claude")
	p, err := memdir.ResolveAutoMemPath(afero.NewOsFs(), memdir.AutoMemPathRequest{ConfigHome: config, ProjectRoot: project})
	require.NoError(t, err)

	// The host's own Write saved the memory: the guard let it.
	saved, err := os.ReadFile(filepath.Join(p.Dir, "deploy_days.md"))
	require.NoError(t, err)
	assert.Contains(t, string(saved), "We never deploy on Fridays.")
	assert.Contains(t, log, "tool Write: wrote "+filepath.Join(p.Dir, "deploy_days.md"))
	// The guard refused a token in team memory; nothing was written.
	assert.Contains(t, log, "tool Write: refused:")
	assert.NoFileExists(t, filepath.Join(p.Dir, "team", "deploy_token.md"))
	// After the compaction, recall brought the memory back.
	assert.Contains(t, log, "user> Which day is the release?\nagent> No: memory says we never deploy on Fridays.")
	// The resumed session went on in the same transcript, one chain.
	assert.Regexp(t, `resumed \d+ messages`, log)
	store, err := transcript.NewJSONLStore(afero.NewOsFs(), transcript.ProjectDir(config, project), transcript.Options{})
	require.NoError(t, err)
	sessions, err := store.List(context.Background())
	require.NoError(t, err)
	require.Len(t, sessions, 1, "a restart resumed the session instead of starting one")
	r, err := transcript.Resume(context.Background(), store, sessions[0].SessionID)
	require.NoError(t, err)
	all := transcript.ToLLM(r.Messages)
	assert.Contains(t, all[len(all)-1].Text(), "I don't know yet.", "the last answer is the chain's leaf")
	// The agent read the memory after the restart; the question recall
	// answered from it before does not bring it again.
	assert.Contains(t, log, "tool Read:")
	after := log[strings.Index(log, "tool Read:"):]
	assert.Contains(t, after, "user> Which day is the release?\nagent> I don't know yet.")
}

// TestHostCodeIsShort counts the host's lines in main.go (open and turn):
// everything but comments, blank lines, the package clause and imports,
// and checks the guides state the same number.
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
	readme := []byte(docstest.Text(t, filepath.Join("..", "..")))
	m := regexp.MustCompile(`toolloop\x60 is the host loop to copy, in (\d+) lines`).FindSubmatch(readme)
	require.NotNil(t, m, "the guides state the host code's length")
	want, _ := strconv.Atoi(string(m[1]))
	assert.Equal(t, want, n)
}

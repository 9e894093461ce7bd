package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Claude Code and `agentmem path` pick the same memory directory, and
// agree on whether memory is on: by default, with a user setting
// autoMemoryDirectory, with the path override, with a subdirectory of
// the git project as the working directory, and with memory turned off.
func TestClaudeCodeAndAgentmemAgreeOnTheMemoryDirectory(t *testing.T) {
	memoryLine := regexp.MustCompile("persistent file-based memory at `([^`]+)`")
	for _, c := range []struct {
		name    string
		setup   func(p *ccProject) (cwd, want string)
		enabled bool
	}{
		{"default", func(p *ccProject) (string, string) { return p.root, p.auto }, true},
		{"user setting", func(p *ccProject) (string, string) {
			writeJSON(t, filepath.Join(p.config, "settings.json"), map[string]any{"autoMemoryDirectory": "~/mem-elsewhere"})
			return p.root, filepath.Join(p.home, "mem-elsewhere") + "/"
		}, true},
		{"override", func(p *ccProject) (string, string) {
			dir := filepath.Join(p.home, "cowork", "mem")
			p.extraEnv = append(p.extraEnv, "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE="+dir)
			return p.root, dir + "/"
		}, true},
		{"subdirectory", func(p *ccProject) (string, string) {
			sub := filepath.Join(p.root, "services", "api")
			require.NoError(t, os.MkdirAll(sub, 0o755))
			return sub, p.auto // keyed on the git root
		}, true},
		{"off", func(p *ccProject) (string, string) {
			p.extraEnv = append(p.extraEnv, "CLAUDE_CODE_DISABLE_AUTO_MEMORY=1")
			return p.root, ""
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newCCProject(t)
			cwd, want := c.setup(p)
			p.claudeIn(cwd, "step:none where is memory")
			system := p.systemText("step:none")

			out, errOut, code := p.agentmemIn(cwd, "path")
			require.Equal(t, 0, code, errOut)
			fields := map[string]string{}
			for _, line := range strings.Split(out, "\n") {
				if k, v, ok := strings.Cut(line, "  "); ok {
					fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
			if !c.enabled {
				assert.NotRegexp(t, memoryLine, system, "Claude Code has no memory section")
				assert.True(t, strings.HasPrefix(fields["enabled"], "no"), "agentmem agrees memory is off: %s", out)
				return
			}
			m := memoryLine.FindStringSubmatch(system)
			require.NotNil(t, m, "Claude Code names its memory directory in the system prompt")
			assert.Equal(t, want, m[1], "Claude Code's directory")
			assert.Equal(t, m[1], fields["auto memory"], "the same directory: %s", out)
			assert.Equal(t, "yes", fields["enabled"])
		})
	}
}

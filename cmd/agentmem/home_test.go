package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain gives the tests, and every process they start, a home of their
// own: a test never reads or writes the user's ~/.claude, and two tests
// that run the binary without a --config-dir share nothing from an
// earlier run. The Go tool keeps its caches where they were.
func TestMain(m *testing.M) {
	os.Exit(runIsolated(m))
}

func runIsolated(m *testing.M) int {
	out, err := exec.Command("go", "env", "GOCACHE", "GOPATH", "GOMODCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env:", err)
		return 2
	}
	vals := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, k := range []string{"GOCACHE", "GOPATH", "GOMODCACHE"} {
		if i < len(vals) {
			os.Setenv(k, vals[i])
		}
	}
	home, err := os.MkdirTemp("", "agentmem-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(home)
	os.Setenv("HOME", home)
	os.Unsetenv("CLAUDE_CONFIG_DIR")
	return m.Run()
}

// Command quickstart shows agentmem end to end, offline: it opens the
// front door (agentmem.New) on a project, which resolves its memory
// directory the way Claude Code does, saves typed
// memories, lists them in the manifest a model chooses from, recalls the
// ones relevant to a message without a model, syncs the team directory
// with a teammate's through an in-process server, and renders the memory
// section of a system prompt. Everything happens in a temporary
// directory that is removed at the end.
//
//	go run ./examples/quickstart         # print the index part of the prompt
//	go run ./examples/quickstart -full   # print the whole prompt
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
)

func main() {
	full := flag.Bool("full", false, "print the whole memory prompt")
	flag.Parse()
	if err := run(os.Stdout, *full); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, full bool) error {
	step := func(format string, args ...any) { fmt.Fprintf(w, "==> "+format+"\n", args...) }
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "agentmem-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fsys := afero.NewOsFs()

	// A project checkout and a config home, as a host would have them.
	project := filepath.Join(tmp, "work", "shop")
	if err := os.MkdirAll(filepath.Join(project, ".git"), 0o755); err != nil {
		return err
	}
	configHome := filepath.Join(tmp, "home", ".claude")
	step("working in %s", tmp)

	// 1. The front door: one call resolves where memory lives (as Claude
	// Code does), applies the enable chain and wires every layer. No model
	// here, so the jobs that need one are left out.
	mem, err := agentmem.New(fsys, nil, agentmem.Options{ProjectRoot: project, ConfigHome: configHome, Getenv: os.Getenv,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	if err != nil {
		return err
	}
	defer mem.Close()
	step("auto memory enabled: %v", mem.Enabled())
	if !mem.Enabled() {
		return nil
	}
	memDir := mem.Dir()
	step("memory directory: %s", memDir)

	// 2. Save memories: each is a topic file plus a pointer in MEMORY.md.
	dir, err := memdir.NewDir(fsys, memDir, memdir.DirOptions{})
	if err != nil {
		return err
	}
	memories := []memdir.Memory{
		{
			Name: "Testing policy", Type: memdir.TypeFeedback,
			Description: "Integration tests hit the real database, never mocks",
			Body:        "Integration tests run against the real database started by `make db`.",
			Why:         "A mocked test hid a broken migration.",
			HowToApply:  "Use the testdb helper in every new integration test.",
		},
		{
			Name: "User role", Type: memdir.TypeUser,
			Description: "Backend engineer, new to the React frontend",
			Body:        "Explain frontend ideas by comparing them with server code.",
		},
		{
			File: "team/build_invariants.md", Name: "Build invariants", Type: memdir.TypeProject,
			Description: "Generated code is committed; CI fails on drift",
			Body:        "Run `make generate` after editing a .proto file and commit the result.",
		},
	}
	for _, m := range memories {
		res, err := dir.Save(context.Background(), m)
		if err != nil {
			return err
		}
		step("saved %-26s pointer: %s", res.File, res.IndexLine)
	}

	// 3. The manifest: what a model sees when it picks relevant memories.
	headers, err := memdir.ScanMemoryFiles(ctx, fsys, memDir, memdir.ScanOptions{})
	if err != nil {
		return err
	}
	step("manifest of %d memory files:\n%s", len(headers), indent(memdir.FormatManifest(headers)))

	// 4. A surfaced memory carries a freshness header; an old one a caveat.
	old := time.Now().Add(-40 * 24 * time.Hour)
	step("header for a memory saved 40 days ago:\n%s", indent(memdir.MemoryHeaderLine(headers[0].Path, old, time.Now())))

	// 5. Recall: the memories relevant to a user message, offline, with the
	// lexical ranking (recall.ModelSelector uses a model instead).
	query := "should the new integration test mock the database?"
	step("recall for %q:", query)
	fmt.Fprintln(w, indent(mem.Recalled(ctx, query)))

	// 6. Team memory: a sync server in this process, and a teammate's
	// checkout pulling what this one pushes.
	if err := syncTeams(ctx, step, fsys, memDir, tmp); err != nil {
		return err
	}

	// 7. The memory section of the system prompt (private + team).
	prompt, err := memdir.LoadMemoryPrompt(ctx, fsys, memdir.LoadPromptRequest{
		Enabled:    true,
		AutoDir:    memDir,
		TeamActive: true,
		IndividualMemoryFiles: []memdir.InstructionFile{
			{Path: filepath.Join(project, "CLAUDE.md"), Content: "Run `make check` before every commit."},
		},
	})
	if err != nil {
		return err
	}
	step("built the %s memory prompt: %d bytes", prompt.Mode, len(prompt.Text))
	text := prompt.Text
	if !full {
		text = "[...]\n" + text[strings.Index(text, "## MEMORY.md (private)"):]
	}
	fmt.Fprintln(w, indent(strings.TrimRight(text, "\n")))
	step("done; removing %s", tmp)
	return nil
}

// syncTeams pushes this project's team dir to an in-process server and
// pulls it into a second contributor's team dir.
func syncTeams(ctx context.Context, step func(string, ...any), fsys afero.Fs, autoDir, tmp string) error {
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	if err != nil {
		return err
	}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	step("team sync server listening on %s (in this process)", srv.URL)
	teammate := filepath.Join(tmp, "teammate", "memory", "team")
	for _, dir := range []string{teammem.TeamMemPath(autoDir), teammate} {
		team, err := memdir.NewDir(fsys, dir, memdir.DirOptions{Team: true})
		if err != nil {
			return err
		}
		c, err := teammem.New(team, teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: token})
		if err != nil {
			return err
		}
		res, err := c.Sync(ctx, &teammem.SyncState{})
		if err != nil {
			return err
		}
		step("synced %s: pushed %v, pulled %v", dir, res.Pushed, res.Pulled)
	}
	return nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

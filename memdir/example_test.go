package memdir_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/rootfs"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
)

func ExampleSanitizePath() {
	fmt.Println(memdir.SanitizePath("/home/u/proj"))
	fmt.Println(memdir.SanitizePath("/Users/zoë/app"))
	// Output:
	// -home-u-proj
	// -Users-zo--app
}

func ExampleValidateMemoryPath() {
	dir, err := memdir.ValidateMemoryPath("~/notes/memory", "/home/u")
	fmt.Println(dir, err)
	_, err = memdir.ValidateMemoryPath("~/..", "/home/u")
	fmt.Println(errors.Is(err, memdir.ErrInvalidMemoryPath), err)
	// Output:
	// /home/u/notes/memory/ <nil>
	// true memdir: invalid memory path: ~ expansion must name a directory below the home directory
}

func ExampleIsAutoMemoryEnabled() {
	env := map[string]string{"CLAUDE_CODE_SIMPLE": "1"}
	getenv := func(k string) string { return env[k] }
	fmt.Println(memdir.IsAutoMemoryEnabled(getenv, nil))
	env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = "false" // an explicit "on" wins
	fmt.Println(memdir.IsAutoMemoryEnabled(getenv, nil))
	// Output:
	// false
	// true
}

func ExampleResolveAutoMemPath() {
	fsys := afero.NewMemMapFs()
	_ = fsys.MkdirAll("/work/shop/.git", 0o755)
	p, err := memdir.ResolveAutoMemPath(fsys, memdir.AutoMemPathRequest{
		ConfigHome:  "/home/u/.claude",
		HomeDir:     "/home/u",
		ProjectRoot: "/work/shop/services/api",
		// Project settings never choose the memory directory.
		AutoMemoryDirectory: map[memdir.SettingSource]string{memdir.SourceProject: "~/.ssh"},
	})
	fmt.Println(p.Dir, p.Origin, err)
	// Output:
	// /home/u/.claude/projects/-work-shop/memory/ default <nil>
}

func ExampleFindCanonicalGitRoot() {
	fsys := afero.NewMemMapFs()
	_ = fsys.MkdirAll("/src/repo/.git", 0o755)
	_ = fsys.MkdirAll("/src/repo/pkg/x", 0o755)
	root, ok := memdir.FindCanonicalGitRoot(fsys, "/src/repo/pkg/x")
	fmt.Println(root, ok)
	// Output:
	// /src/repo true
}

func ExampleAgentMemoryDir() {
	dir, err := memdir.AgentMemoryDir(afero.NewMemMapFs(), memdir.AgentMemoryDirRequest{
		AgentType: "my-plugin:reviewer", Scope: memdir.ScopeProject, Cwd: "/work/shop",
	})
	fmt.Println(dir, err)
	// Output:
	// /work/shop/.claude/agent-memory/my-plugin-reviewer/ <nil>
}

func ExampleDailyLogPath() {
	day := time.Date(2026, 3, 5, 9, 30, 0, 0, time.Local)
	fmt.Println(memdir.DailyLogPath("/m/", day))
	// Output:
	// /m/logs/2026/03/2026-03-05.md
}

func ExampleIndexLimits_Truncate_defaults() {
	var index strings.Builder
	for i := 0; i < 250; i++ {
		fmt.Fprintf(&index, "- [Topic %d](topic_%d.md) — hook\n", i, i)
	}
	t := memdir.IndexLimits{}.Truncate(index.String())
	fmt.Println(t.LineCount, t.WasLineTruncated, t.WasByteTruncated)
	fmt.Println(strings.Count(t.Content, "\n- [Topic"))
	// Output:
	// 250 true false
	// 199
}

func ExampleParseFrontmatter() {
	file := "---\nname: Deploys\ndescription: Deploys: Tuesdays only\ntype: project\n---\nNo Friday deploys.\n"
	fm, body, err := memdir.ParseFrontmatter([]byte(file)) // the colon is fixed by the retry
	fmt.Printf("%q %q %q %q %v\n", fm.Name, fm.Description, fm.Type, body, err)
	// Output:
	// "Deploys" "Deploys: Tuesdays only" "project" "No Friday deploys.\n" <nil>
}

func ExampleDir_Save() {
	fsys := afero.NewMemMapFs()
	dir, _ := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	res, err := dir.Save(context.Background(), memdir.Memory{
		Name:        "Testing policy",
		Description: "Integration tests hit a real database",
		Type:        memdir.TypeFeedback,
		Body:        "Integration tests use the real database, never mocks.",
		Why:         "A mocked test hid a broken migration.",
		HowToApply:  "Use the test database helper in new integration tests.",
	})
	fmt.Println(res.File, err)
	index, _ := afero.ReadFile(fsys, "/mem/MEMORY.md")
	fmt.Print(string(index))
	// Output:
	// testing_policy.md <nil>
	// - [Testing policy](testing_policy.md) — Integration tests hit a real database
}

func ExampleScanMemoryFiles() {
	fsys := afero.NewMemMapFs()
	dir, _ := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	_, _ = dir.Save(context.Background(), memdir.Memory{File: "role.md", Description: "Data scientist", Type: memdir.TypeUser})
	_, _ = dir.Save(context.Background(), memdir.Memory{File: "team/ci.md", Description: "CI must stay green", Type: memdir.TypeProject})
	when := time.Date(2026, 3, 15, 10, 30, 0, 0, time.UTC)
	_ = fsys.Chtimes("/mem/role.md", when, when)
	_ = fsys.Chtimes("/mem/team/ci.md", when.Add(-time.Hour), when.Add(-time.Hour))

	headers, err := memdir.ScanMemoryFiles(context.Background(), fsys, "/mem", memdir.ScanOptions{})
	fmt.Println(err)
	fmt.Println(memdir.FormatManifest(headers))
	// Output:
	// <nil>
	// - [user] role.md (2026-03-15T10:30:00.000Z): Data scientist
	// - [project] team/ci.md (2026-03-15T09:30:00.000Z): CI must stay green
}

func ExampleMemoryAgeDays() {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	saved := now.Add(-72 * time.Hour)
	fmt.Println(memdir.MemoryAgeDays(saved, now), memdir.MemoryAge(saved, now))
	fmt.Println(memdir.MemoryHeaderLine("/mem/a.md", now.Add(-time.Hour), now))
	// Output:
	// 3 3 days ago
	// Memory: /mem/a.md:
}

// With team memory active, the prompt covers the private and the team
// directory and ends with both indexes.
func ExampleLoadMemoryPrompt_team() {
	fsys := afero.NewMemMapFs()
	dir, _ := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	_, _ = dir.Save(context.Background(), memdir.Memory{File: "team/ci.md", Name: "CI", Description: "CI must stay green", Type: memdir.TypeProject})
	p, err := memdir.LoadMemoryPrompt(context.Background(), fsys, memdir.LoadPromptRequest{
		Enabled: true, AutoDir: "/mem/", TeamActive: true,
		IndividualMemoryFiles: []memdir.InstructionFile{{Path: "CLAUDE.md", Content: "Run make check."}},
	})
	fmt.Println(err)
	i := strings.Index(p.Text, "## MEMORY.md (team)")
	fmt.Print(p.Text[i:])
	// Output:
	// <nil>
	// ## MEMORY.md (team)
	//
	// - [CI](ci.md) — CI must stay green
	//
	// Team memory files (read one when its name or index entry looks relevant):
	//
	// - ci.md
}

func ExampleLoadMemoryPrompt() {
	fsys := afero.NewMemMapFs()
	p, err := memdir.LoadMemoryPrompt(context.Background(), fsys, memdir.LoadPromptRequest{
		Enabled: memdir.IsAutoMemoryEnabled(func(string) string { return "" }, nil),
		AutoDir: "/home/u/.claude/projects/-work-shop/memory/",
	})
	fmt.Println(p.Mode, err)
	fmt.Println(strings.SplitN(p.Text, "\n", 2)[0])
	_, statErr := fsys.Stat("/home/u/.claude/projects/-work-shop/memory")
	fmt.Println(statErr == nil)
	// Output:
	// single <nil>
	// # Memory
	// true
}

func ExampleIndexLimits_Truncate() {
	t := memdir.IndexLimits{MaxLines: 2}.Truncate("- [a](a.md)\n- [b](b.md)\n- [c](c.md)")
	fmt.Println(t.Content)
	// Output:
	// - [a](a.md)
	// - [b](b.md)
	//
	// > NOTE: MEMORY.md holds 3 lines (the limit is 2), so only its beginning was loaded above. 1 of 3 lines were cut off, starting at line 3 ("- [c](c.md)"). Keep each index entry to a single line under about 200 characters and put the details in the topic files.
}

func ExampleFormatFileSize() {
	fmt.Println(memdir.FormatFileSize(900), memdir.FormatFileSize(25_000), memdir.FormatFileSize(3<<20))
	// Output:
	// 900 bytes 24.4KB 3MB
}

func ExampleFormatMemoryFile() {
	at := func() time.Time { return time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC) }
	out, _ := memdir.FormatMemoryFile(memdir.Memory{
		Name: "Deploys", Description: "Deploys: Tuesdays only", Type: memdir.TypeProject,
		Body: "No Friday deploys.", Why: "Two Friday outages.",
	}, memdir.FormatOptions{Now: at}) // Claude Code 2.1.328's layout; Layout2_1_88 for the older one
	fmt.Print(string(out))
	// Output:
	// ---
	// name: deploys
	// description: 'Deploys: Tuesdays only'
	// metadata:
	//   node_type: memory
	//   type: project
	//   modified: 2026-12-01T09:30:00.000Z
	// ---
	//
	// No Friday deploys.
	//
	// **Why:** Two Friday outages.
}

func ExampleIndexLine() {
	fmt.Println(memdir.IndexLine(memdir.Memory{Name: "CI", Description: "CI must stay green"}, "ci.md"))
	// Output:
	// - [CI](ci.md) — CI must stay green
}

func ExampleMemoryFreshnessNote() {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	fmt.Printf("%q\n", memdir.MemoryFreshnessNote(now.Add(-time.Hour), now))
	fmt.Println(strings.HasPrefix(memdir.MemoryFreshnessNote(now.AddDate(0, 0, -9), now), "<system-reminder>This memory was saved 9 days ago."))
	// Output:
	// ""
	// true
}

func ExampleBuildAgentMemoryPrompt() {
	prompt, _ := memdir.BuildAgentMemoryPrompt(context.Background(), afero.NewMemMapFs(), memdir.AgentMemoryPromptRequest{
		Dir: "/home/u/.claude/agent-memory/reviewer/", Scope: memdir.ScopeUser,
	})
	fmt.Println(strings.Contains(prompt, "Scope: user."), strings.Contains(prompt, "MEMORY.md"))
	// Output:
	// true false
}

func ExampleLoadMemoryPrompt_dailyLog() {
	p, _ := memdir.LoadMemoryPrompt(context.Background(), afero.NewMemMapFs(), memdir.LoadPromptRequest{Enabled: true, AutoDir: "/mem/", DailyLog: true})
	fmt.Println(p.Mode, strings.Contains(p.Text, "`/mem/logs/YYYY/MM/YYYY-MM-DD.md`"))
	// Output:
	// daily-log true
}

func ExampleLoadMemoryPrompt_index() {
	fsys := afero.NewMemMapFs()
	_ = afero.WriteFile(fsys, "/mem/MEMORY.md", []byte("- [Role](role.md) — data scientist\n"), 0o644)
	p, _ := memdir.LoadMemoryPrompt(context.Background(), fsys, memdir.LoadPromptRequest{Enabled: true, AutoDir: "/mem/"})
	fmt.Print(p.Text[strings.Index(p.Text, "## MEMORY.md"):])
	// Output:
	// ## MEMORY.md
	//
	// - [Role](role.md) — data scientist
}

func ExampleEnsureMemoryDir() {
	fsys := afero.NewMemMapFs()
	err := memdir.EnsureMemoryDir(fsys, memdir.TeamMemPath("/mem/"))
	_, statErr := fsys.Stat("/mem")
	fmt.Println(err, statErr == nil)
	// Output:
	// <nil> true
}

// A host opens the memory directory once, saves memories from its own
// code (the model can also write files itself), and builds the memory
// section of its system prompt, with the private and the team index.
func ExampleNewDir() {
	ctx := context.Background()
	fsys := afero.NewMemMapFs() // afero.NewOsFs() on the real disk
	dir, err := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = dir.Save(ctx, memdir.Memory{File: "testing.md", Name: "Testing policy", Type: memdir.TypeFeedback,
		Description: "Integration tests hit a real database", Body: "Never mock the database."})
	_, _ = dir.Save(ctx, memdir.Memory{File: "team/deploys.md", Name: "Deploy days", Type: memdir.TypeProject,
		Description: "Deploys happen on Tuesdays", Body: "We deploy on Tuesdays."})

	p, err := memdir.LoadMemoryPrompt(ctx, fsys, memdir.LoadPromptRequest{Enabled: true, AutoDir: dir.Path(), TeamActive: true})
	prompt := p.Text
	fmt.Println(err)
	for _, line := range strings.Split(prompt, "\n") {
		if strings.HasPrefix(line, "## MEMORY.md") || strings.HasPrefix(line, "- ") && strings.HasSuffix(line, ".md") ||
			strings.HasPrefix(line, "- [") {
			fmt.Println(line)
		}
	}
	// Output:
	// <nil>
	// ## MEMORY.md (private)
	// - [Testing policy](testing.md) — Integration tests hit a real database
	// ## MEMORY.md (team)
	// - [Deploy days](deploys.md) — Deploys happen on Tuesdays
	// - deploys.md
}

// A host that syncs only the team directory wires the check into its own
// Write tool: the team view of the memory directory checks the path and
// the content, and the tool writes through a filesystem confined to the
// team directory.
func ExampleDir_CheckToolCall() {
	tmp, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(tmp)
	autoDir := filepath.Join(tmp, "memory")
	dir, _ := memdir.NewDir(afero.NewOsFs(), autoDir, memdir.DirOptions{})
	team, _ := dir.Sub(memdir.TeamDirName)
	_ = os.MkdirAll(team.Path(), 0o755)
	confined, _ := rootfs.New(team.Path())
	defer confined.Close()

	// writeTool is what the model's Write tool call runs.
	writeTool := func(call llm.ToolCall) error {
		if err := team.CheckToolCall(call); err != nil {
			return err // safe to show the model: no host paths, no secrets
		}
		var in struct {
			FilePath string `json:"file_path"`
			Content  string `json:"content"`
		}
		_ = json.Unmarshal(call.Input, &in)
		rel, _ := filepath.Rel(team.Path(), in.FilePath)
		return afero.WriteFile(confined, rel, []byte(in.Content), 0o644)
	}
	write := func(path, content string) llm.ToolCall {
		input, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
		return llm.ToolCall{Name: "Write", Input: input}
	}

	ok := write(filepath.Join(team.Path(), "ci.md"), "CI must stay green.")
	fmt.Println(writeTool(ok))

	// A link planted in the team dir that leads out of it.
	_ = os.Symlink(tmp, filepath.Join(team.Path(), "notes"))
	fmt.Println(writeTool(write(filepath.Join(team.Path(), "notes", "x.md"), "x")))

	// A folder beside it whose name starts like it.
	fmt.Println(writeTool(write(filepath.Join(autoDir, "team-evil", "x.md"), "x")))

	secret := write(filepath.Join(team.Path(), "deploy.md"), "token: "+"ghp_"+"aB3dE5fG7hJ9kL2mN4pQ6rS8tUaB3dE5fG7h")
	err := writeTool(secret)
	fmt.Println(errors.Is(err, secrets.ErrFound), err)
	// Output:
	// <nil>
	// agentmem: path escapes the team memory directory through a symbolic link
	// agentmem: path escapes the team memory directory
	// true refusing to write a secret (GitHub PAT) into team memory, which every contributor can read; remove it and write again
}

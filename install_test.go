package agentmem_test

import (
	"archive/zip"
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modulePath = "github.com/agentmem-sdk/agentmem"

// releaseModules reads modules.txt: the version and the module folders in
// dependency order.
func releaseModules(t *testing.T) (string, []string) {
	t.Helper()
	data, err := os.ReadFile("modules.txt")
	require.NoError(t, err)
	var version string
	var dirs []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "version "):
			version = strings.TrimPrefix(line, "version ")
		default:
			dirs = append(dirs, line)
		}
	}
	require.NotEmpty(t, version, "modules.txt names no version")
	return version, dirs
}

func pathOf(dir string) string {
	if dir == "." {
		return modulePath
	}
	return modulePath + "/" + dir
}

// TestModulesList: modules.txt lists exactly go.work's modules, each
// module requires the others at the listed version and only those listed
// above it, no go.mod holds a replace line, and go.work maps every listed
// version to the tree.
func TestModulesList(t *testing.T) {
	version, dirs := releaseModules(t)
	work, err := os.ReadFile("go.work")
	require.NoError(t, err)
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err)
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	var used []string
	for _, d := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, d)
		require.NoError(t, err)
		used = append(used, filepath.ToSlash(rel))
	}
	assert.ElementsMatch(t, used, dirs, "modules.txt and go.work list the same modules")
	above := map[string]bool{}
	for _, dir := range dirs {
		gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		require.NoError(t, err)
		assert.NotContains(t, string(gomod), "replace ", "%s/go.mod: no replace lines (go install refuses them)", dir)
		for _, line := range strings.Split(string(gomod), "\n") {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
			if len(f) < 2 || !strings.HasPrefix(f[0], modulePath) {
				continue
			}
			assert.Equal(t, version, f[1], "%s/go.mod requires %s at the release version", dir, f[0])
			assert.True(t, above[f[0]], "%s/go.mod requires %s, which modules.txt does not list above it", dir, f[0])
		}
		assert.Contains(t, string(work), pathOf(dir)+" "+version+" => ./"+strings.TrimPrefix(dir, "."), "go.work maps %s", dir)
		above[pathOf(dir)] = true
	}
}

// proxyModule writes one module of the tree at version into a file://
// module proxy: the files git tracks in dir, without the folders of other
// modules, zipped as Go's module zips are.
func proxyModule(t *testing.T, proxy, dir, version string, nested []string) {
	t.Helper()
	path := pathOf(dir)
	at := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	out, err := exec.Command("git", "ls-files", "-z", "--", dir).Output()
	require.NoError(t, err)
	zf, err := os.Create(filepath.Join(at, version+".zip"))
	require.NoError(t, err)
	zw := zip.NewWriter(zf)
	files := 0
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		rel := f
		if dir != "." {
			rel = strings.TrimPrefix(f, dir+"/")
		}
		inner := false
		for _, n := range nested {
			if strings.HasPrefix(f+"/", n+"/") && n != dir {
				inner = true
			}
		}
		if inner || f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		w, err := zw.Create(path + "@" + version + "/" + rel)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
		files++
	}
	require.NoError(t, zw.Close())
	require.NoError(t, zf.Close())
	require.Positive(t, files, dir)
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644))
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, version, time.Now().UTC().Format(time.RFC3339))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), []byte(info), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))
}

// installCommands returns the commands of the README's Install section.
func installCommands(t *testing.T) []string {
	t.Helper()
	block := strings.Join(docstest.Block(t, ".", "\n## Install\n"), "\n")
	var cmds []string
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// hostImports is one package a host imports from each library module.
var hostImports = map[string]string{
	".":                      modulePath,
	"llm/anthropic":          modulePath + "/llm/anthropic",
	"llm/openai":             modulePath + "/llm/openai",
	"mcpserver":              modulePath + "/mcpserver",
	"teamserver/sqlite":      modulePath + "/teamserver/sqlite",
	"teamserver/postgres":    modulePath + "/teamserver/postgres",
	"teamserver/prommetrics": modulePath + "/teamserver/prommetrics",
}

// TestInstallFromAModuleProxy is a user's first step at a release: a
// module proxy holds this tree's modules at the release version; with an
// empty module cache, no workspace and no network, the README's install
// commands run as they stand (go install of the command, go get of every
// library module in a new host module), a host importing every library
// module builds, and the installed command reports the version. Building
// everything takes minutes on two cores: by default the go get lines run
// and the host's packages are loaded without compiling;
// AGENTMEM_TEST_INSTALL=1 (CI sets it for a run of this test alone) runs
// the whole of it.
//
// The third-party modules come from a second file:// proxy: a module
// cache filled first, by the same commands, from this machine's module
// cache and the network's module proxy (a module's own build can select
// other versions than this workspace's). Both runs build with -trimpath
// (through GOFLAGS, so the commands stay as written), which keeps the
// build cache valid across their two module caches.
func TestInstallFromAModuleProxy(t *testing.T) {
	version, dirs := releaseModules(t)
	proxy := t.TempDir()
	for _, dir := range dirs {
		proxyModule(t, proxy, dir, version, dirs)
	}
	goenv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	file := func(dir string) string { return "file://" + filepath.ToSlash(dir) }
	local := filepath.Join(goenv("GOMODCACHE"), "cache", "download")

	// Fill a module cache with every module the commands need.
	warm := t.TempDir()
	full := os.Getenv("AGENTMEM_TEST_INSTALL") == "1"
	installAll(t, version, warm, strings.Join([]string{file(proxy), file(local), goenv("GOPROXY")}, ","), full)
	if !full {
		return
	}
	// Then again with nothing but the two proxies on disk.
	installAll(t, version, t.TempDir(), file(proxy)+","+file(filepath.Join(warm, "go", "pkg", "mod", "cache", "download")), full)
}

// installAll runs the README's install commands in a new host module
// under home, with modules from goproxy only, builds a host of every
// library module, and checks the installed command's version. Unless
// full, it runs only the go get lines and loads the host's packages
// without compiling them: every module resolves from the proxy at the
// version, and every import is found (compiling it all takes minutes).
func installAll(t *testing.T, version, home, goproxy string, full bool) {
	t.Helper()
	gopath, bin, host := filepath.Join(home, "go"), filepath.Join(home, "bin"), filepath.Join(home, "host")
	require.NoError(t, os.MkdirAll(host, 0o755))
	env := append(os.Environ(),
		"GOPROXY="+goproxy, "GOPATH="+gopath, "GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"), "GOBIN="+bin,
		"GOWORK=off", "GOFLAGS=-mod=mod -trimpath", "GOSUMDB=off", "GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=", "GOTOOLCHAIN=local",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() {
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = env
		_ = clean.Run() // the module cache is read-only: remove it the way Go does
	})
	run := func(dir string, args ...string) string {
		t.Helper()
		name := args[0]
		if name == "agentmem" { // installed into GOBIN, which is on the commands' PATH but not this process's
			name = filepath.Join(bin, name)
		}
		cmd := exec.Command(name, args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	run(host, "go", "mod", "init", "example.com/host")

	cmds := installCommands(t)
	got := map[string]bool{}
	var printed string
	for _, c := range cmds {
		args := strings.Fields(c)
		if !full && (args[0] == "agentmem" || args[1] == "install") {
			continue
		}
		out := run(host, args...)
		if args[0] == "go" && len(args) == 3 && args[1] == "get" {
			path, v, _ := strings.Cut(args[2], "@")
			assert.Equal(t, version, v, c)
			got[path] = true
		}
		if args[0] == "agentmem" {
			printed = out
		}
	}
	assert.Contains(t, cmds, "go install "+modulePath+"/cmd/agentmem@"+version)
	if full {
		assert.True(t, strings.HasPrefix(printed, "agentmem "+version+" "), "agentmem version printed %q", printed)
	}

	var imports strings.Builder
	for dir, pkg := range hostImports {
		assert.True(t, got[pathOf(dir)], "the README gets %s", pathOf(dir))
		fmt.Fprintf(&imports, "\t_ %q\n", pkg)
	}
	main := "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "main.go"), []byte(main), 0o644))
	if full {
		run(host, "go", "build", "-o", filepath.Join(home, "hostbin"), ".")
	} else {
		deps := run(host, "go", "list", "-deps", ".")
		for _, pkg := range hostImports {
			assert.Contains(t, deps, pkg+"\n", "the host's packages load")
		}
	}
	gomod, err := os.ReadFile(filepath.Join(host, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(gomod), modulePath+" "+version)
}

// TestReleaseScript runs release.sh on a clone: it refuses a version that
// is not one and a work tree with changes, and otherwise moves every
// requirement and go.work's mapping to the version, commits, and tags the
// modules in modules.txt's order (the root as the version, the others as
// DIR/VERSION).
func TestReleaseScript(t *testing.T) {
	_, dirs := releaseModules(t)
	clone := filepath.Join(t.TempDir(), "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	out, err := exec.Command("git", "clone", "-q", ".", clone).CombinedOutput()
	require.NoError(t, err, "%s", out)
	release := func(version string) (string, error) {
		cmd := exec.Command("bash", "release.sh", version)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GOWORK=", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	_, err = release("9.9")
	require.Error(t, err, "not a version")
	_, err = release("v2.0.0")
	require.Error(t, err, "a major version that needs /v2 paths")
	require.NoError(t, os.WriteFile(filepath.Join(clone, "README.md"), []byte("changed"), 0o644))
	_, err = release("v0.9.9")
	require.Error(t, err, "a work tree with changes")
	git("checkout", "-q", "README.md")

	printed, err := release("v0.9.9")
	require.NoError(t, err, printed)
	var want []string
	for _, d := range dirs {
		tag := "v0.9.9"
		if d != "." {
			tag = d + "/v0.9.9"
		}
		want = append(want, tag)
	}
	assert.Equal(t, want, strings.Fields(printed), "the tags, in dependency order")
	assert.ElementsMatch(t, want, strings.Fields(git("tag")))
	assert.Contains(t, git("log", "-1", "--format=%s"), "release v0.9.9")
	assert.Empty(t, git("status", "--porcelain"))
	gomod, err := os.ReadFile(filepath.Join(clone, "cmd", "agentmem", "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(gomod), modulePath+" v0.9.9")
	assert.Contains(t, string(gomod), modulePath+"/llm/anthropic v0.9.9")
	work, err := os.ReadFile(filepath.Join(clone, "go.work"))
	require.NoError(t, err)
	assert.Contains(t, string(work), modulePath+"/llm/anthropic v0.9.9 => ./llm/anthropic")
	assert.NotContains(t, string(work), "v0.1.0", "the previous version's mapping is gone")
	list, err := os.ReadFile(filepath.Join(clone, "modules.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(list), "\nversion v0.9.9\n")
}

// TestBuildFromAClone runs the README's build-from-a-clone lines verbatim
// in a fresh clone of the repository's committed tree.
func TestBuildFromAClone(t *testing.T) {
	lines := docstest.Block(t, ".", "To build the command from a clone instead")
	clone := filepath.Join(t.TempDir(), "repo")
	out, err := exec.Command("git", "clone", "-q", ".", clone).CombinedOutput()
	require.NoError(t, err, "%s", out)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(lines, "\n"))
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "GOWORK=", "GOFLAGS=")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "the README's lines in a clean clone:\n%s\n%s", strings.Join(lines, "\n"), out)
	assert.Regexp(t, `(?m)^agentmem \S+ \(go1\.`, string(out), "agentmem version printed its version")
}

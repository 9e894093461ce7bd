package agentmem_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEIsShort keeps the README a page a newcomer reads in minutes;
// depth belongs in the guides under docs/.
func TestREADMEIsShort(t *testing.T) {
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	n := strings.Count(string(data), "\n")
	assert.Less(t, n, 420, "README.md has %d lines; move depth to a guide under docs/", n)
}

// TestDocLinksResolve checks every relative link of the README and the
// guides: the file exists and, for a Markdown page, so does the heading
// the link's #anchor names.
func TestDocLinksResolve(t *testing.T) {
	files, err := docstest.Files(".")
	require.NoError(t, err)
	require.Greater(t, len(files), 1, "the guides under docs/ exist")
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		anchors[filepath.Clean(f)] = headingAnchors(t, f)
	}
	link := regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^()\s]+)\)`)
	docLinks := 0
	for _, f := range files {
		for _, target := range pageLinks(t, f, link) {
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := filepath.Clean(f)
			if path != "" {
				dest = filepath.Clean(filepath.Join(filepath.Dir(f), path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link to %s: %s does not exist", f, target, dest)
					continue
				}
			}
			if f == "README.md" && strings.HasPrefix(dest, "docs"+string(filepath.Separator)) {
				docLinks++
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if _, ok := anchors[dest]; !ok {
				anchors[dest] = headingAnchors(t, dest)
			}
			if !anchors[dest][anchor] {
				t.Errorf("%s: link to %s: %s has no heading #%s", f, target, dest, anchor)
			}
		}
	}
	assert.Greater(t, docLinks, 8, "the README links its guides")
}

// pageLinks returns the link targets of a page outside fenced blocks and
// inline code.
func pageLinks(t *testing.T, file string, link *regexp.Regexp) []string {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var out []string
	fenced := regexp.MustCompile("(?ms)^```[^\n]*\n.*?^```[ \t]*$")
	code := regexp.MustCompile("`+[^`]*?`+")
	for _, part := range fenced.Split(string(data), -1) {
		spans := code.FindAllStringIndex(part, -1)
	links:
		for _, m := range link.FindAllStringSubmatchIndex(part, -1) {
			for _, s := range spans {
				if s[0] < m[0] && m[0] < s[1] {
					continue links
				}
			}
			out = append(out, part[m[2]:m[3]])
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a page's headings.
func headingAnchors(t *testing.T, file string) map[string]bool {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	out := map[string]bool{}
	inFence := false
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(title, " ") {
			continue
		}
		slug := drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), "")
		out[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return out
}

// notRun names the ```sh blocks of the guides that no test runs, by a
// marker just before each, with the reason. The list only shrinks.
var notRun = map[string]string{}

// blockCall is how a test names a block it runs: a call of
// docstest.Block (or of cmd/agentmem's readmeBlock, which wraps it) with
// the marker as a string literal.
var blockCall = regexp.MustCompile("(?:docstest\\.Block\\(t, [^,()]+|readmeBlock\\(t), (\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`)\\)")

// TestEveryShellBlockIsRun fails when a ```sh block of the README or a
// guide is run by no test: every block must be the one a test's
// docstest.Block call leads to, or be listed in notRun with the reason.
// It reads the test sources of every module of the workspace.
func TestEveryShellBlockIsRun(t *testing.T) {
	run := map[string][]string{} // "file:line" -> the tests' files
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range blockCall.FindAllStringSubmatch(string(src), -1) {
			marker, err := strconv.Unquote(m[1])
			require.NoError(t, err, "%s: %s", path, m[0])
			f, err := docstest.Locate(".", marker)
			if !assert.NoError(t, err, "%s runs a block that is gone", path) {
				continue
			}
			key := f.File + ":" + strconv.Itoa(f.Line)
			run[key] = append(run[key], path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, run, "the tests' docstest.Block calls were found")

	skipped := map[string]string{}
	for marker, why := range notRun {
		f, err := docstest.Locate(".", marker)
		if !assert.NoError(t, err, "a notRun entry names a block that is gone: remove it") {
			continue
		}
		key := f.File + ":" + strconv.Itoa(f.Line)
		assert.Empty(t, run[key], "%s is run by %v now: remove its notRun entry", key, run[key])
		skipped[key] = why
	}

	all, err := docstest.Fences(".")
	require.NoError(t, err)
	for _, f := range all {
		key := f.File + ":" + strconv.Itoa(f.Line)
		if len(run[key]) == 0 && skipped[key] == "" {
			t.Errorf("%s: no test runs this block (%q ...): run it with docstest.Block, or list it in notRun with the reason", key, f.Lines[0])
		}
	}
	for key, why := range skipped {
		t.Logf("not run: %s: %s", key, why)
	}
}

// TestCIRunsTheREADMETestCommand: .ci/run runs the test command the
// README gives, as written.
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	lines := docstest.Block(t, ".", "From a clone of this repository:")
	var cmd string
	for _, l := range lines {
		if strings.HasPrefix(l, "go test ") {
			cmd, _, _ = strings.Cut(l, "#")
			cmd = strings.TrimSpace(cmd)
		}
	}
	require.NotEmpty(t, cmd, "the README gives the test command")
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	require.NoError(t, err)
	assert.Contains(t, strings.Split(string(ci), "\n"), cmd, ".ci/run runs the README's test command as written")
	for _, l := range strings.Split(string(ci), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "#") {
			continue
		}
		assert.NotContains(t, l, "-timeout", ".ci/run runs every test under go test's default timeout")
		assert.NotContains(t, l, "GOFLAGS", ".ci/run sets no flags the README's command lacks")
	}
}

// snippetImports are the packages a ```go block of the README or a guide
// may name without importing them, by the name it uses. A block's
// context comment may import others (or another package under one of
// these names).
var snippetImports = map[string]string{
	"agentmem":    "github.com/agentmem-sdk/agentmem",
	"afero":       "github.com/spf13/afero",
	"anthropic":   "github.com/agentmem-sdk/agentmem/llm/anthropic",
	"context":     "context",
	"dream":       "github.com/agentmem-sdk/agentmem/dream",
	"extract":     "github.com/agentmem-sdk/agentmem/extract",
	"filehistory": "github.com/agentmem-sdk/agentmem/filehistory",
	"filepath":    "path/filepath",
	"fmt":         "fmt",
	"http":        "net/http",
	"json":        "encoding/json",
	"llm":         "github.com/agentmem-sdk/agentmem/llm",
	"mcp":         "github.com/modelcontextprotocol/go-sdk/mcp",
	"mcpserver":   "github.com/agentmem-sdk/agentmem/mcpserver",
	"memdir":      "github.com/agentmem-sdk/agentmem/memdir",
	"memorytool":  "github.com/agentmem-sdk/agentmem/memorytool",
	"memtools":    "github.com/agentmem-sdk/agentmem/memtools",
	"os":          "os",
	"recall":      "github.com/agentmem-sdk/agentmem/recall",
	"sessionmem":  "github.com/agentmem-sdk/agentmem/sessionmem",
	"storesync":   "github.com/agentmem-sdk/agentmem/storesync",
	"teammem":     "github.com/agentmem-sdk/agentmem/teammem",
	"transcript":  "github.com/agentmem-sdk/agentmem/transcript",
}

// goSnippet is one ```go block made into a file that type-checks when
// the block does: its context's declarations, then the block, in the
// body of a function that returns an error.
type goSnippet struct {
	fence docstest.Fence
	src   string
	line  int // the line of src the block's first line is on
}

// contextComment matches the comment that may stand right before a
// ```go block: "<!-- go context:" then Go declarations, imports first,
// and "-->".
var contextComment = regexp.MustCompile(`(?s)^<!-- go context:\n(.*?)-->\n\s*$`)

var importLine = regexp.MustCompile(`^import\s+(?:(\w+)\s+)?("[^"]+")\s*$`)

func snippetOf(t *testing.T, f docstest.Fence) goSnippet {
	t.Helper()
	page, err := os.ReadFile(f.File)
	require.NoError(t, err)
	var decls []string
	imports := map[string]string{}
	before := page[:f.Offset]
	if i := bytes.LastIndex(before, []byte("<!-- go context:")); i >= 0 {
		before = before[i:]
	}
	if m := contextComment.FindSubmatch(before); m != nil {
		for _, l := range strings.Split(string(m[1]), "\n") {
			if im := importLine.FindStringSubmatch(l); im != nil {
				p, _ := strconv.Unquote(im[2])
				name := im[1]
				if name == "" {
					name = p[strings.LastIndex(p, "/")+1:]
				}
				imports[name] = p
				continue
			}
			decls = append(decls, l)
		}
	}
	body := strings.Join(decls, "\n") + "\n" + strings.Join(f.Lines, "\n") + "\n"
	used := regexp.MustCompile(`\b([a-z]\w*)\.`).FindAllStringSubmatch(body, -1)
	for _, u := range used {
		if p, ok := snippetImports[u[1]]; ok && imports[u[1]] == "" {
			imports[u[1]] = p
		}
	}
	names := make([]string, 0, len(imports))
	for n := range imports {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("package snippet\n\nimport (\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s %q\n", n, imports[n])
	}
	b.WriteString(")\n\nfunc snippet() error {\n")
	b.WriteString(strings.Join(decls, "\n") + "\n")
	line := strings.Count(b.String(), "\n") + 1
	b.WriteString(strings.Join(f.Lines, "\n") + "\n")
	b.WriteString("\treturn nil\n}\n")
	return goSnippet{fence: f, src: b.String(), line: line}
}

// exportData compiles the packages the snippets import and returns where
// the go command put each one's export data, by import path.
func exportData(t *testing.T, paths []string) map[string]string {
	t.Helper()
	args := append(append([]string{"list", "-export"}, buildFlags...), "-deps", "-f", "{{.ImportPath}}\t{{.Export}}")
	args = append(args, paths...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	files := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if p, f, ok := strings.Cut(sc.Text(), "\t"); ok && f != "" {
			files[p] = f
		}
	}
	return files
}

// TestGoBlocksTypeCheck type-checks every ```go block of the README and
// the guides against this tree's packages, so an example never names a
// function, field or type the SDK does not have. A block is a fragment
// of a host's code: what it uses without declaring (ctx, model, a
// conversation) is declared in a "<!-- go context: ... -->" comment
// right before it, which a reader does not see.
func TestGoBlocksTypeCheck(t *testing.T) {
	fences, err := docstest.GoFences(".")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(fences), 10, "the README and the guides give Go examples")

	fset := token.NewFileSet()
	var snippets []goSnippet
	var files []*ast.File
	needed := map[string]bool{}
	for _, f := range fences {
		s := snippetOf(t, f)
		file, err := parser.ParseFile(fset, fmt.Sprintf("%s:%d", f.File, f.Line), s.src, 0)
		if !assert.NoError(t, err, "%s:%d: the ```go block does not parse", f.File, f.Line) {
			continue
		}
		for _, im := range file.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			needed[p] = true
		}
		snippets = append(snippets, s)
		files = append(files, file)
	}
	paths := make([]string, 0, len(needed))
	for p := range needed {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	exports := exportData(t, paths)
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})

	for i, s := range snippets {
		var errs []string
		conf := types.Config{Importer: imp, Error: func(err error) {
			var te types.Error
			if e, ok := err.(types.Error); ok {
				te = e
			}
			if te.Soft && strings.Contains(te.Msg, "not used") {
				return // a fragment declares what the host's code goes on to use
			}
			pos := fset.Position(te.Pos)
			errs = append(errs, fmt.Sprintf("%s:%d: %s", s.fence.File, s.fence.Line+pos.Line-s.line+1, te.Msg))
		}}
		_, _ = conf.Check("snippet", fset, []*ast.File{files[i]}, nil)
		assert.Empty(t, errs, "%s:%d: the ```go block does not type-check against this tree:\n%s\n--- as checked:\n%s",
			s.fence.File, s.fence.Line, strings.Join(errs, "\n"), s.src)
	}
}

// TestCoreModuleStaysLight builds a scratch host module that imports every
// core package, the way a host does with go get, and checks that its
// go.sum names no SQL driver, model SDK, MCP SDK, telemetry or metrics
// client: those live in modules of their own.
func TestCoreModuleStaysLight(t *testing.T) {
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	host := t.TempDir()
	gomod := "module scratchhost\n\ngo 1.26.0\n\nrequire github.com/agentmem-sdk/agentmem v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/agentmem-sdk/agentmem => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "go.mod"), []byte(gomod), 0o644))
	var imports strings.Builder
	for _, p := range []string{"", "/dream", "/extract", "/filehistory", "/foldersync", "/llm", "/llm/llmtest", "/memdir", "/memorytool", "/memtools",
		"/recall", "/rootfs", "/screen", "/secrets", "/sessionmem", "/storesync", "/teammem", "/teamserver", "/teamserver/storetest", "/transcript"} {
		imports.WriteString("\t_ \"github.com/agentmem-sdk/agentmem" + p + "\"\n")
	}
	main := "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "main.go"), []byte(main), 0o644))
	build := append(append([]string{"build"}, buildFlags...), "-o", os.DevNull, ".")
	for _, args := range [][]string{{"mod", "tidy"}, build} {
		cmd := exec.Command("go", args...)
		cmd.Dir = host
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %v: %s", args, out)
	}
	sum, err := os.ReadFile(filepath.Join(host, "go.sum"))
	require.NoError(t, err)
	// The core module's own requirements too: a requirement no core package
	// imports is pruned from a host's go.sum but still raises the versions
	// a host's build selects.
	core, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for _, heavy := range []string{"jackc/pgx", "modernc.org/sqlite", "anthropic-sdk-go", "go.opentelemetry.io", "modelcontextprotocol",
		"prometheus", "google.golang.org/protobuf", "filepath-securejoin"} {
		assert.NotContains(t, string(sum), heavy, "a host of the core packages must not need %s", heavy)
		assert.NotContains(t, string(core), heavy, "the core module must not require %s", heavy)
	}
}

// floors are the layers of the core module, from the ground up: an import
// may only point to a lower floor. A package under internal/ is at
// internalFloor, below everything, unless it is listed here.
var floors = map[string]float64{
	"internal/bgctx": 0.3, "internal/synctext": 1.5, // the screens' words for sync
	"internal/teamwire": 1.6, "internal/storewire": 1.7, // the two protocols' JSON
	"llm": 1, "rootfs": 1, "screen": 1, "secrets": 1, "llm/llmtest": 1.5,
	"memdir": 2, "transcript": 2.5, "filehistory": 2.5,
	"foldersync": 2.7, "foldersync/memremote": 2.8, "foldersync/remotetest": 2.9,
	"teammem": 3, "storesync": 3,
	"memtools": 4, "memorytool": 4, "teamserver": 4, "teamserver/storetest": 4.5,
	"extract": 5, "recall": 5, "dream": 5, "sessionmem": 5,
	"": 6,
}

// internalFloor is the floor of a package under internal/ that floors
// does not list: below everything.
const internalFloor = 0.5

// forbidden are imports the floors alone would allow but the design does
// not: the server speaks the protocol through wire, never through the
// client.
var forbidden = map[string][]string{
	"teamserver":           {"teammem", "memdir", "storesync"},
	"teamserver/storetest": {"teammem", "memdir", "storesync"},
}

// TestLayersPointOneWay checks every import inside the core module against
// the floors: the server never imports the client, the memory layers never
// import each other or the front door.
func TestLayersPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	require.NoError(t, err)
	const mod = "github.com/agentmem-sdk/agentmem"
	rel := func(p string) (string, bool) {
		if p == mod {
			return "", true
		}
		r, ok := strings.CutPrefix(p, mod+"/")
		return r, ok
	}
	floor := func(p string) (float64, bool) {
		if f, ok := floors[p]; ok {
			return f, true
		}
		return internalFloor, strings.HasPrefix(p, "internal/")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from, _ := rel(fields[0])
		if strings.HasPrefix(from, "examples") {
			continue
		}
		fromFloor, known := floor(from)
		require.True(t, known, "package %q has no floor: add it to floors (and DESIGN.md)", from)
		for _, imp := range fields[1:] {
			to, ours := rel(imp)
			if !ours {
				continue
			}
			toFloor, _ := floor(to)
			assert.Less(t, toFloor, fromFloor, "%s imports %s: arrows point down only", from, to)
			assert.NotContains(t, forbidden[from], to, "%s must not import %s", from, to)
		}
	}
}

var updateAPI = flag.Bool("update-api", false, "rewrite api/*.txt from the source")

// TestExportedAPI lists every module's exported API (one line per
// exported function, method, type, struct field, interface method,
// constant and variable of each non-internal package, as Go's own api/
// files do) and compares it with api/<module>.txt, so a change to the API
// is a visible diff in review. After an intended change:
//
//	go test -run TestExportedAPI . -update-api
func TestExportedAPI(t *testing.T) {
	_, dirs := releaseModules(t)
	total := 0
	for _, dir := range dirs {
		lines := moduleAPI(t, dir, dirs)
		total += len(lines)
		name := "agentmem"
		if dir != "." {
			name = strings.ReplaceAll(dir, "/", "-")
		}
		file := filepath.Join("api", name+".txt")
		text := strings.Join(lines, "\n") + "\n"
		if *updateAPI {
			require.NoError(t, os.MkdirAll("api", 0o755))
			require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
			continue
		}
		want, err := os.ReadFile(file)
		require.NoError(t, err, "no %s: run go test -run TestExportedAPI . -update-api", file)
		if string(want) != text {
			assert.Fail(t, "the exported API of "+pathOf(dir)+" changed", "%s\nReview it, then run go test -run TestExportedAPI . -update-api", apiDiff(string(want), text))
		}
	}
	t.Logf("%d exported names in %d modules", total, len(dirs))
}

// apiDiff lists the lines only one side has.
func apiDiff(old, new string) string {
	was, is := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(old, "\n") {
		was[l] = true
	}
	for _, l := range strings.Split(new, "\n") {
		is[l] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(old, "\n") {
		if !is[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(new, "\n") {
		if !was[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// moduleAPI lists the exported API of the packages of the module in dir
// (not those of the other modules nested in it, nor internal, testdata or
// main packages).
func moduleAPI(t *testing.T, dir string, modules []string) []string {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel := filepath.ToSlash(p)
		base := d.Name()
		if p != dir && (base == "testdata" || base == "internal" || strings.HasPrefix(base, ".") || base == "api") {
			return filepath.SkipDir
		}
		for _, m := range modules {
			if m != dir && m != "." && rel == m {
				return filepath.SkipDir
			}
		}
		lines = append(lines, packageAPI(t, p, dir)...)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(lines)
	return lines
}

func packageAPI(t *testing.T, dir, moduleDir string) []string {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	pkgs := map[string][]*ast.File{} // by package name
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
	}
	var lines []string
	for name, files := range pkgs {
		if name == "main" {
			continue
		}
		rel, _ := filepath.Rel(moduleDir, dir)
		path := pathOf(moduleDir)
		if rel != "." {
			path += "/" + filepath.ToSlash(rel)
		}
		prefix := "pkg " + path + ", "
		expr := func(n ast.Node) string {
			var b bytes.Buffer
			_ = printer.Fprint(&b, fset, n)
			return strings.Join(strings.Fields(b.String()), " ")
		}
		for _, f := range files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					sig := strings.TrimPrefix(expr(d.Type), "func")
					if d.Recv != nil {
						recv := expr(d.Recv.List[0].Type)
						if !ast.IsExported(strings.TrimLeft(strings.SplitN(recv, "[", 2)[0], "*")) {
							continue
						}
						lines = append(lines, prefix+"method ("+recv+") "+d.Name.Name+sig)
					} else {
						lines = append(lines, prefix+"func "+d.Name.Name+sig)
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							lines = append(lines, typeAPI(prefix, s, expr)...)
						case *ast.ValueSpec:
							kind := "var "
							if d.Tok == token.CONST {
								kind = "const "
							}
							for _, n := range s.Names {
								if n.IsExported() {
									line := prefix + kind + n.Name
									if s.Type != nil {
										line += " " + expr(s.Type)
									}
									lines = append(lines, line)
								}
							}
						}
					}
				}
			}
		}
	}
	return lines
}

// typeAPI lists a type and its exported fields or methods.
func typeAPI(prefix string, s *ast.TypeSpec, expr func(ast.Node) string) []string {
	head := prefix + "type " + s.Name.Name
	if s.Assign.IsValid() {
		return []string{head + " = " + expr(s.Type)}
	}
	switch tt := s.Type.(type) {
	case *ast.StructType:
		out := []string{head + " struct"}
		for _, f := range tt.Fields.List {
			for _, n := range f.Names {
				if n.IsExported() {
					out = append(out, head+" struct, "+n.Name+" "+expr(f.Type))
				}
			}
			if len(f.Names) == 0 { // embedded
				out = append(out, head+" struct, embedded "+expr(f.Type))
			}
		}
		return out
	case *ast.InterfaceType:
		out := []string{head + " interface"}
		for _, m := range tt.Methods.List {
			for _, n := range m.Names {
				if n.IsExported() {
					out = append(out, head+" interface, "+n.Name+strings.TrimPrefix(expr(m.Type), "func"))
				}
			}
			if len(m.Names) == 0 {
				out = append(out, head+" interface, embedded "+expr(m.Type))
			}
		}
		return out
	default:
		return []string{head + " " + expr(s.Type)}
	}
}

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

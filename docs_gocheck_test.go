package agentmem_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
)

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
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
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

package agentmem_test

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

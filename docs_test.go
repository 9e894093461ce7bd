package agentmem_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
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

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileCase is one file a teammate may write: its name and bytes, and,
// for a name that clashes with another client's folder, the file the
// other client holds below it.
type hostileCase struct {
	name    string
	file    string
	content string
	other   string // a path the teammate writes first ("" for none)
	link    bool   // file is a symbolic link to content outside the folder
}

func hostileCases() []hostileCase {
	line := strings.Repeat("a long line without a break, ", 3450)[:100_000]
	return []hostileCase{
		{name: "latin-1", file: "latin1.md", content: "---\nname: caf\xe9\n---\ncaf\xe9 au lait\n"},
		{name: "encoded surrogate", file: "surrogate.md", content: "before \xed\xa0\x80 after\n"},
		{name: "binary with NUL", file: "binary.md", content: "\x00\x01\x02\xff\xfe\x00binary\x00"},
		{name: "byte order mark", file: "bom.md", content: "\uFEFF---\nname: bom\n---\nstarts with a BOM\n"},
		{name: "CRLF", file: "crlf.md", content: "---\r\nname: crlf\r\n---\r\nWindows lines\r\n"},
		{name: "lone CR", file: "cr.md", content: "old Mac\rlines\rhere\r"},
		{name: "line separator", file: "u2028.md", content: "one\u2028two\u2029three\n"},
		{name: "100 KB line", file: "long.md", content: line},
		{name: "empty file", file: "empty.md", content: ""},
		{name: "trailing spaces", file: "trailing.md", content: "keep these   \nand this\t\n  \n"},
		{name: "tag characters", file: "tags.md", content: "visible\U000E0041\U000E0042\U000E007F text\n"},
		{name: "bidi controls", file: "bidi.md", content: "admin\u202Eexe.md\u202C and \u2066isolate\u2069\n"},
		{name: "NFD name", file: "cafe\u0301.md", content: "named in NFD\n"},
		{name: "spaces in name", file: "my notes  on deploys .md", content: "spaces\n"},
		{name: "emoji name", file: "rocket-\U0001F680.md", content: "emoji\n"},
		{name: "escape in name", file: "a\x1b]0;TITLE\x07.md", content: "an escape sequence in the name\n"},
		{name: "tab in name", file: "tab\there.md", content: "a tab in the name\n"},
		{name: "newline in name", file: "two\nlines.md", content: "a newline in the name\n"},
		// Today the server refuses Ana's whole team push on the clash
		// (team_memory_key_conflict): nothing else of hers reaches Ben.
		{name: "name clashes with a folder", file: "clash.md", content: "a file here\n", other: "clash.md/inner.md"},
		// Today the team server refuses Ana's whole push on keys that
		// differ only in case (team_memory_key_conflict).
		{name: "name differs only in case", file: "notes.md", content: "lower case\n", other: "Notes.md"},
		{name: "over the size limit", file: "huge.md", content: strings.Repeat("x", 250_001)},
		{name: "a secret", file: "secret.md", content: "the token is ghp_" + strings.Repeat("aB3dE5", 6) + "\n"},
		{name: "deep path", file: strings.Repeat("d/", 21) + "deep.md", content: "21 folders down\n"},
		{name: "long name", file: strings.Repeat("n", 240) + ".md", content: "a long name\n"},
		// Today team sync leaves a link out without a word, exit 0.
		{name: "link to a file outside", file: "outside.md", content: "what lies outside the memory folder\n", link: true},
		{name: "colon and backslash in name", file: "a:b\\c.md", content: "odd characters\n"},
	}
}

// hostileProtocol is one protocol's way to run the case table.
type hostileProtocol struct {
	name   string
	stores func(i int) string // CLAUDE_MEMORY_STORES for case i ("" for none)
	round  []string
	folder func(*person) string
}

// TestHostileBytesArriveExactlyOrAreRefused runs each hostile content and
// name on both protocols, one case per row, with the built binary: Ana
// writes the file beside an ordinary one and syncs; Ben syncs; Ana syncs
// twice more. Either Ben holds exactly Ana's bytes under exactly her
// name, or Ana's rounds printed a line naming the file and why and exited
// non-zero; Ana's file is byte-identical after every round, the ordinary
// file reached Ben, and no output holds a raw control character of a
// name.
func TestHostileBytesArriveExactlyOrAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, token := syncTokens(t, dir)
	url, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens, "--rate", "-1")
	cases := hostileCases()
	for i := range cases {
		createStore(t, url, token, fmt.Sprintf("hostile-%d", i))
	}
	protocols := []hostileProtocol{{
		name:   "team",
		stores: func(int) string { return "" },
		round:  []string{"team", "sync", "--server", url},
		folder: func(p *person) string { return p.team },
	}, {
		name: "store",
		stores: func(i int) string {
			return fmt.Sprintf(`[{"path":"/v1/code/memory/hostile-%d","mount":"proj"}]`, i)
		},
		round:  []string{"store", "sync", "--server", url},
		folder: func(p *person) string { return filepath.Join(p.team, "proj") },
	}}
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel() // each row has its own repo, store and folders
					root := t.TempDir()
					repo := fmt.Sprintf("acme/hostile-%d", i)
					ana := newPerson(t, root, "ana", token, proto.stores(i))
					ben := newPerson(t, root, "ben", token, proto.stores(i))
					round := append(append([]string{}, proto.round...), "--repo", repo)
					if proto.name == "store" {
						round = proto.round
					}
					ana.ok(round...) // mounts her (empty) folder
					ben.ok(round...)
					if c.other != "" {
						writeRaw(t, proto.folder(ben), c.other, []byte("ben's file below\n"))
						ben.ok(round...)
					}
					anaDir, benDir := proto.folder(ana), proto.folder(ben)
					if c.link {
						outside := filepath.Join(root, "outside.txt")
						require.NoError(t, os.WriteFile(outside, []byte(c.content), 0o644))
						require.NoError(t, os.Symlink(outside, filepath.Join(anaDir, c.file)))
					} else {
						writeRaw(t, anaDir, c.file, []byte(c.content))
					}
					writeRaw(t, anaDir, "ordinary.md", []byte("an ordinary memory\n"))

					var said strings.Builder
					codes := []int{}
					check := func(round string) {
						t.Helper()
						got, err := os.ReadFile(filepath.Join(anaDir, c.file))
						if assert.NoError(t, err, "%s: Ana's file is gone", round) {
							assert.Equal(t, c.content, string(got), "%s: Ana's file changed", round)
						}
					}
					out, code := ana.run(round...)
					said.WriteString(out)
					codes = append(codes, code)
					check("her first round")
					out, code = ben.run(round...)
					benSaid := fmt.Sprintf("Ben's round (exit %d):\n%s", code, out)
					check("Ben's round")
					for n := range 2 {
						out, code2 := ana.run(round...)
						said.WriteString(out)
						codes = append(codes, code2)
						check(fmt.Sprintf("her round %d", n+2))
					}
					out, code = ben.run(round...)
					benSaid += fmt.Sprintf("Ben's last round (exit %d):\n%s", code, out)

					benFiles := memoryFiles(t, benDir)
					assert.Equal(t, "an ordinary memory\n", benFiles["ordinary.md"], "the ordinary file reaches Ben whatever the other one is\nAna:\n%s\n%s", said.String(), benSaid)
					if c.other != "" {
						assert.Equal(t, "ben's file below\n", benFiles[c.other], "Ben's own file stays")
					}
					for _, o := range []string{said.String(), benSaid} {
						if strings.ContainsAny(c.file, "\x1b\x07\t\n") {
							assert.NotContains(t, o, c.file, "a name with control characters is printed raw")
						}
						assert.NotContains(t, o, "\x1b", "the output holds an escape character")
					}
					got, received := benFiles[c.file]
					if c.link {
						assert.False(t, received, "a link's target outside the folder reached Ben: %q", got)
						received = false
					}
					if received && got == c.content {
						t.Logf("%s: carried exactly (Ana's exit codes %v)", c.name, codes)
						return
					}
					if received {
						t.Errorf("Ben received other bytes under %q: %q (want %q)", c.file, abbrev(got), abbrev(c.content))
					}
					named := false
					for _, l := range strings.Split(said.String(), "\n") {
						if strings.Contains(l, "skipped") && (strings.Contains(l, c.file) || strings.Contains(l, quoteInner(c.file))) {
							named = true
							t.Logf("%s: refused: %s", c.name, l)
							if strings.ContainsAny(c.file, "\x1b\x07\n") {
								assert.NotContains(t, l, "(not_nfc:", "a name in NFC that holds a control character is refused for the character, not its form")
							}
							if want := bytesReason(c.file, c.content, c.link); want != nil {
								assert.True(t, slices.ContainsFunc(want, func(r string) bool { return strings.Contains(l, "("+r+":") }),
									"a plain name whose bytes cannot be carried is skipped for %v, as the guides print it: %s", want, l)
							}
						}
					}
					assert.True(t, named, "%q neither reached Ben nor was refused with a line naming it; Ana's output:\n%s", c.file, said.String())
					for _, code := range codes {
						assert.NotEqual(t, 0, code, "a round that refused a file exits 0")
					}
				})
			}
		})
	}
}

// bytesReason is the reason the guides print for a plainly named file
// whose content cannot be carried exactly (nil when the name or a link
// could be the reason instead).
func bytesReason(name, content string, link bool) []string {
	if link || !plainName.MatchString(name) {
		return nil
	}
	var why []string
	if !utf8.ValidString(content) {
		why = append(why, "not_utf8")
	}
	if strings.Contains(content, "\x00") {
		why = append(why, "nul_byte")
	}
	return why
}

var plainName = regexp.MustCompile(`^[a-z0-9_-]+\.md$`)

// quoteInner is s as Go quotes it, without the quotes.
func quoteInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func abbrev(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

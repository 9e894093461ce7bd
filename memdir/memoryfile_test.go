package memdir

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adrg/frontmatter"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFrontmatter(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Frontmatter
		body    string
		wantErr bool
	}{
		{
			name: "valid",
			in:   "---\nname: Testing policy\ndescription: Integration tests use a real DB\ntype: feedback\n---\n\nBody here.\n",
			want: Frontmatter{Name: "Testing policy", Description: "Integration tests use a real DB", Type: TypeFeedback},
			body: "\nBody here.\n",
		},
		{
			name: "missing header",
			in:   "Just text.\n---\nnot a header\n",
			body: "Just text.\n---\nnot a header\n",
		},
		{
			name: "colon in description fixed by retry",
			in:   "---\nname: Deploy\ndescription: Deploys: only on Tuesdays\ntype: project\n---\nx\n",
			want: Frontmatter{Name: "Deploy", Description: "Deploys: only on Tuesdays", Type: TypeProject},
			body: "x\n",
		},
		{
			name: "special characters fixed by retry",
			in:   "---\nname: [draft] notes\ndescription: use `make` & *never* ship on Friday\ntype: user\n---\n",
			want: Frontmatter{Name: "[draft] notes", Description: "use `make` & *never* ship on Friday", Type: TypeUser},
			body: "",
		},
		{
			name: "quotes inside fixed by retry",
			in:   "---\ndescription: he said \"no\": twice\n---\nb",
			want: Frontmatter{Description: `he said "no": twice`},
			body: "b",
		},
		{
			name:    "broken beyond repair",
			in:      "---\nname: x\n  - : : [\n\t\tbad: {\n---\nbody",
			body:    "---\nname: x\n  - : : [\n\t\tbad: {\n---\nbody",
			wantErr: true,
		},
		{
			name: "unknown type",
			in:   "---\nname: n\ntype: Feedback\n---\n",
			want: Frontmatter{Name: "n"},
		},
		{
			name: "type with other case or spaces is not a type",
			in:   "---\ntype: \"project \"\n---\n",
		},
		{
			name: "non-string scalars",
			in:   "---\nname: 42\ndescription: yes\ntype: [user]\n---\n",
			want: Frontmatter{Name: "42", Description: "yes"},
		},
		{
			// YAML reads " #" as the start of a comment; Claude Code's reader
			// does too, so the text after it is lost unless the value is quoted.
			name: "space-hash starts a YAML comment",
			in:   "---\ndescription: triaged in #ci-alerts\n---\n",
			want: Frontmatter{Description: "triaged in"},
		},
		{
			name: "CRLF and BOM",
			in:   "\ufeff---\r\nname: Win\r\ntype: reference\r\n---\r\nbody\r\n",
			want: Frontmatter{Name: "Win", Type: TypeReference},
			body: "body\r\n",
		},
		{
			name: "unterminated header is not a header",
			in:   "---\nname: x\n",
			body: "---\nname: x\n",
		},
		{
			name: "toml header is not accepted",
			in:   "+++\nname = \"x\"\n+++\n",
			body: "+++\nname = \"x\"\n+++\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fm, body, err := ParseFrontmatter([]byte(c.in))
			if c.wantErr {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrFrontmatter)
				var fe *FrontmatterError
				assert.ErrorAs(t, err, &fe)
				assert.NotContains(t, err.Error(), "bad")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, c.want, fm)
			assert.Equal(t, c.body, string(body))
		})
	}
}

func TestParseMemoryType(t *testing.T) {
	for _, ty := range []MemoryType{TypeUser, TypeFeedback, TypeProject, TypeReference} {
		got, ok := ParseMemoryType(string(ty))
		assert.True(t, ok)
		assert.Equal(t, ty, got)
	}
	for _, s := range []string{"", "User", " user", "memo", "references"} {
		_, ok := ParseMemoryType(s)
		assert.False(t, ok, s)
	}
}

func FuzzParseFrontmatter(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: b: c\ntype: user\n---\nbody"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\n: [\n---"))
	f.Add([]byte("\ufeff---\r\nname: \"x\r\n---\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		fm, body, err := ParseFrontmatter(in)
		if err != nil && len(body) == 0 && len(strings.TrimPrefix(string(in), "\ufeff")) > 0 {
			t.Fatalf("a file with a broken header must keep its content as body")
		}
		if fm.Type != "" {
			if _, ok := ParseMemoryType(string(fm.Type)); !ok {
				t.Fatalf("invalid type %q accepted", fm.Type)
			}
		}
	})
}

func TestFormatMemoryFileRoundTrip(t *testing.T) {
	m := Memory{
		Name:        "Deploy: Tuesdays",
		Description: "Deploys happen on Tuesdays: never Friday #ops",
		Type:        TypeProject,
		Body:        "Deploys only on Tuesdays.",
		Why:         "Friday deploys broke prod twice.",
		HowToApply:  "Refuse to schedule a Friday deploy.",
	}
	out, err := FormatMemoryFile(m, FormatOptions{Layout: Layout2_1_88})
	require.NoError(t, err)
	fm, body, err := ParseFrontmatter(out)
	require.NoError(t, err)
	assert.Equal(t, Frontmatter{Name: m.Name, Description: m.Description, Type: TypeProject}, fm)
	assert.Equal(t, "\nDeploys only on Tuesdays.\n\n**Why:** Friday deploys broke prod twice.\n**How to apply:** Refuse to schedule a Friday deploy.\n", string(body))

	out, err = FormatMemoryFile(Memory{Name: "multi\nline", Description: "a\n\nb"}, FormatOptions{Layout: Layout2_1_88})
	require.NoError(t, err)
	fm, _, err = ParseFrontmatter(out)
	require.NoError(t, err)
	assert.Equal(t, "multi line", fm.Name)
	assert.Equal(t, "a b", fm.Description)
}

func TestSaveWritesFileAndPointer(t *testing.T) {
	fsys := afero.NewMemMapFs()
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)

	res, err := d.Save(context.Background(), Memory{Name: "Testing policy", Description: "Integration tests hit a real database", Type: TypeFeedback, Body: "Use the real DB."})
	require.NoError(t, err)
	assert.Equal(t, "/mem/testing_policy.md", res.Path)
	assert.Equal(t, "testing_policy.md", res.File)
	assert.False(t, res.ReplacedPointer)
	assert.Equal(t, "- [Testing policy](testing_policy.md) — Integration tests hit a real database", res.IndexLine)

	_, err = d.Save(context.Background(), Memory{File: "user_role.md", Name: "Role", Description: "Data scientist", Type: TypeUser, Body: "x"})
	require.NoError(t, err)

	// Saving the same file again replaces its pointer in place.
	res, err = d.Save(context.Background(), Memory{Name: "Testing policy", Description: "Integration tests must hit a real database, no mocks", Type: TypeFeedback, Body: "v2"})
	require.NoError(t, err)
	assert.True(t, res.ReplacedPointer)
	index, err := afero.ReadFile(fsys, "/mem/MEMORY.md")
	require.NoError(t, err)
	assert.Equal(t, "- [Testing policy](testing_policy.md) — Integration tests must hit a real database, no mocks\n- [Role](user_role.md) — Data scientist\n", string(index))

	content, err := afero.ReadFile(fsys, "/mem/testing_policy.md")
	require.NoError(t, err)
	fm, body, err := ParseFrontmatter(content)
	require.NoError(t, err)
	assert.Equal(t, TypeFeedback, fm.Type)
	assert.Equal(t, "\nv2\n", string(body))
}

func TestSaveKeepsHandWrittenIndexAndDropsDuplicates(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/mem/MEMORY.md", []byte("# My memory\n\n- [A](a.md) — first\n- [Old B](./b.md) — stale\n- [A again](a.md)\n- [C](c.md) — third"), 0o644))
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)
	_, err = d.Save(context.Background(), Memory{File: "a.md", Name: "A", Description: "new"})
	require.NoError(t, err)
	_, err = d.Save(context.Background(), Memory{File: "b.md", Name: "B", Description: "fresh"})
	require.NoError(t, err)
	index, err := afero.ReadFile(fsys, "/mem/MEMORY.md")
	require.NoError(t, err)
	assert.Equal(t, "# My memory\n\n- [A](a.md) — new\n- [B](b.md) — fresh\n- [C](c.md) — third\n", string(index))
}

func TestSaveTeamFileUsesTeamIndex(t *testing.T) {
	fsys := afero.NewMemMapFs()
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)
	res, err := d.Save(context.Background(), Memory{File: "team/ci.md", Name: "CI", Description: "CI must stay green", Type: TypeProject, Body: "b"})
	require.NoError(t, err)
	assert.Equal(t, "/mem/team/ci.md", res.Path)
	index, err := afero.ReadFile(fsys, "/mem/team/MEMORY.md")
	require.NoError(t, err)
	assert.Equal(t, "- [CI](ci.md) — CI must stay green\n", string(index))
	_, err = fsys.Stat("/mem/MEMORY.md")
	assert.True(t, os.IsNotExist(err), "the private index is not touched")
}

func TestSaveRejects(t *testing.T) {
	d, err := NewDir(afero.NewMemMapFs(), "/mem", DirOptions{})
	require.NoError(t, err)
	for name, m := range map[string]Memory{
		"no name or file": {Body: "x"},
		"symbols only":    {Name: "!!!"},
		"absolute":        {File: "/etc/x.md"},
		"dotdot":          {File: "../x.md"},
		"inner dotdot":    {File: "a/../../x.md"},
		"dot segment":     {File: "./x.md"},
		"backslash":       {File: `a\x.md`},
		"nul":             {File: "a\x00.md"},
		"not md":          {File: "x.txt"},
		"index":           {File: "MEMORY.md"},
		"team index":      {File: "team/MEMORY.md"},
		"hidden":          {File: ".x.md"},
		"bad type":        {Name: "n", Type: "secret"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := d.Save(context.Background(), m)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidMemory)
		})
	}
	_, err = NewDir(nil, "/x", DirOptions{})
	assert.Error(t, err)
	_, err = NewDir(afero.NewMemMapFs(), "rel", DirOptions{})
	assert.Error(t, err)
}

// TestSaveRefusesAPointerTheIndexWouldRefuse: a name or description the
// index's screens refuse (an invisible or direction-control character) is
// refused before anything is written, so no file is left unindexed.
func TestSaveRefusesAPointerTheIndexWouldRefuse(t *testing.T) {
	fsys := afero.NewMemMapFs()
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)
	for _, m := range []Memory{
		{Name: "zero\u200bwidth", Description: "x", Body: "b"},
		{Name: "rtl", File: "rtl.md", Description: "a \u202e b", Body: "b"},
	} {
		_, err := d.Save(context.Background(), m)
		var se *screen.Error
		require.ErrorAs(t, err, &se, "%+v", m)
		files, _ := afero.ReadDir(fsys, "/mem")
		assert.Empty(t, files, "%+v: nothing written", m)
	}
}

func TestSaveIndexFailureKeepsOldIndex(t *testing.T) {
	base := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(base, "/mem/MEMORY.md", []byte("- [A](a.md) — a\n"), 0o644))
	fsys := &renameFailFs{Fs: base, failOn: "/mem/MEMORY.md"}
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)
	_, err = d.Save(context.Background(), Memory{File: "b.md", Name: "B"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "saved but MEMORY.md could not be updated")
	index, err := afero.ReadFile(base, "/mem/MEMORY.md")
	require.NoError(t, err)
	assert.Equal(t, "- [A](a.md) — a\n", string(index), "a failed update leaves the old index whole")
}

type renameFailFs struct {
	afero.Fs
	failOn string
}

func (f *renameFailFs) Rename(oldname, newname string) error {
	if newname == f.failOn {
		return os.ErrPermission
	}
	return f.Fs.Rename(oldname, newname)
}

func TestSaveConcurrent(t *testing.T) {
	fsys := afero.NewMemMapFs()
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)
	const n = 40
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			_, err := d.Save(context.Background(), Memory{Name: "topic " + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)), Body: "b"})
			errs <- err
		}(i)
	}
	for i := 0; i < n; i++ {
		require.NoError(t, <-errs)
	}
	index, err := afero.ReadFile(fsys, "/mem/MEMORY.md")
	require.NoError(t, err)
	assert.Equal(t, n, strings.Count(string(index), "\n"), "no pointer may be lost")
}

func TestIndexLineLength(t *testing.T) {
	line := IndexLine(Memory{Name: "T", Description: strings.Repeat("word ", 100)}, "t.md")
	assert.LessOrEqual(t, len([]rune(line)), maxIndexLineRunes)
	assert.True(t, strings.HasSuffix(line, "…"))
	assert.Equal(t, "- [x (y)](t.md)", IndexLine(Memory{Name: "x [y]"}, "t.md"))
	assert.Equal(t, "- [t](dir/t.md)", IndexLine(Memory{}, "dir/t.md"))
}

// fullParse is ParseFrontmatter without the fast path.
func fullParse(content []byte) (Frontmatter, []byte, error) {
	var fields headerFields
	body, err := frontmatter.Parse(bytes.NewReader(content), &fields, yamlFormat(unmarshalWithRetry))
	if err != nil {
		return Frontmatter{}, content, err
	}
	return fields.frontmatter(), body, nil
}

func TestSimpleHeaderFastPath(t *testing.T) {
	fm, body, ok := parseSimpleHeader([]byte("---\nname: Memory 1\ndescription: Remembered fact (v2), see docs/x.md\ntype: project\nother: ignored\n---\n\nbody"))
	require.True(t, ok)
	assert.Equal(t, Frontmatter{Name: "Memory 1", Description: "Remembered fact (v2), see docs/x.md", Type: TypeProject,
		Metadata: map[string]string{"other": "ignored"}}, fm)
	assert.Equal(t, "\nbody", string(body))
	for _, in := range []string{
		"---\nname: a: b\n---\n", "---\nname: 'q'\n---\n", "---\nname: ~\n---\n", "---\nname: x #c\n---\n",
		"---\nname:\n---\n", "---\n  name: x\n---\n", "---\nname: x\nname: y\n---\n", "---\r\nname: x\r\n---\r\n",
		"---\nname: x\n", "---\nname: café\n---\n", "---\nname: [x]\n---\n", "---\n# comment\n---\n", "text\n",
	} {
		_, _, ok := parseSimpleHeader([]byte(in))
		assert.False(t, ok, "%q must take the full parser", in)
	}
}

func FuzzSimpleHeaderAgrees(f *testing.F) {
	f.Add([]byte("---\nname: Memory 1\ndescription: Remembered fact\ntype: project\n---\nbody"))
	f.Add([]byte("---\nname: yes\ndescription: 1.50\ntype: user\n---\n"))
	f.Add([]byte("---\nname: 0x1F\ndescription: a - b, c\nx_y: z\n---\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		fm, body, ok := parseSimpleHeader(in)
		if !ok {
			return
		}
		want, wantBody, err := fullParse(in)
		if err != nil {
			t.Fatalf("fast path accepted a header the full parser rejects: %v", err)
		}
		if !reflect.DeepEqual(fm, want) || !bytes.Equal(body, wantBody) {
			t.Fatalf("fast path %+v %q, full parser %+v %q", fm, body, want, wantBody)
		}
	})
}

func TestFrontmatterErrorSaysWhy(t *testing.T) {
	_, body, err := ParseFrontmatter([]byte("---\nname: ok\ndescription: caf\xe9\n---\nbody\n"))
	var fe *FrontmatterError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, ReasonNotUTF8, fe.Reason)
	assert.Equal(t, 2, fe.Line)
	assert.EqualError(t, err, "memdir: memory file frontmatter is not valid UTF-8 (near line 2 of the header)")
	assert.ErrorIs(t, err, ErrFrontmatter)
	assert.Contains(t, string(body), "body", "the file stays usable")

	_, _, err = ParseFrontmatter([]byte("---\nname: x\n  - : : [\n\t\tbad: {\n---\nbody"))
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, err.Error(), "not valid YAML")

	_, _, err = ParseFrontmatter([]byte("---\nname: fine\n---\nbinary \xff body\n"))
	assert.NoError(t, err, "invalid UTF-8 in the body is not a header problem")
}

// TestClaudeCode2_1_328Layout: the header Claude Code 2.1.328 writes (type
// under metadata, a slug as name) is read with its type; the read rules
// merge other top-level keys into metadata, metadata winning.
func TestClaudeCode2_1_328Layout(t *testing.T) {
	cases := []struct {
		name, in string
		want     Frontmatter
	}{
		{"as written by 2.1.328", "---\nname: deploy-freeze-q3\ndescription: No deploys to prod after 2026-12-04 for the mobile release cut\nmetadata:\n  node_type: memory\n  type: project\n  originSessionId: 5d0c2a1e-7f3b-4c1a-9e2d-1b2c3d4e5f60\n  modified: 2026-12-01T19:02:17.192Z\n---\nbody\n",
			Frontmatter{Name: "deploy-freeze-q3", Description: "No deploys to prod after 2026-12-04 for the mobile release cut", Type: TypeProject,
				Metadata: map[string]string{"node_type": "memory", "originSessionId": "5d0c2a1e-7f3b-4c1a-9e2d-1b2c3d4e5f60", "modified": "2026-12-01T19:02:17.192Z"}}},
		{"team dir: only modified added", "---\nname: ci\ndescription: CI stays green\nmetadata:\n  type: feedback\n  modified: 2026-12-01T19:02:17.192Z\n---\n",
			Frontmatter{Name: "ci", Description: "CI stays green", Type: TypeFeedback, Metadata: map[string]string{"modified": "2026-12-01T19:02:17.192Z"}}},
		{"metadata.type wins over a top-level type", "---\nname: a\ndescription: d\ntype: user\nmetadata:\n  type: reference\n---\n",
			Frontmatter{Name: "a", Description: "d", Type: TypeReference}},
		{"other top-level keys merge, metadata wins", "---\nname: a\ndescription: d\nowner: ana\ncolor: red\nmetadata:\n  color: blue\n  type: user\n---\n",
			Frontmatter{Name: "a", Description: "d", Type: TypeUser, Metadata: map[string]string{"owner": "ana", "color": "blue"}}},
		{"a nested metadata value is left out, the rest kept", "---\nname: a\ndescription: d\nmetadata:\n  type: project\n  tags: [x, y]\n---\n",
			Frontmatter{Name: "a", Description: "d", Type: TypeProject}},
		{"2.1.88 top-level type still counts", "---\nname: Deploy Freeze\ndescription: d\ntype: project\n---\n",
			Frontmatter{Name: "Deploy Freeze", Description: "d", Type: TypeProject}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := ParseFrontmatter([]byte(c.in))
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestFormatCurrentLayout: the header Claude Code 2.1.328 writes, byte for
// byte, in its key order.
func TestFormatCurrentLayout(t *testing.T) {
	at := func() time.Time { return time.Date(2026, 12, 1, 19, 2, 17, 192_000_000, time.UTC) }
	m := Memory{Name: "Deploy Freeze Q3", Description: "No deploys to prod after 2026-12-04 for the mobile release cut", Type: TypeProject, Body: "Freeze."}
	out, err := FormatMemoryFile(m, FormatOptions{SessionID: "5d0c2a1e-7f3b-4c1a-9e2d-1b2c3d4e5f60", Now: at})
	require.NoError(t, err)
	assert.Equal(t, "---\nname: deploy-freeze-q3\ndescription: No deploys to prod after 2026-12-04 for the mobile release cut\nmetadata:\n  node_type: memory\n  type: project\n  originSessionId: 5d0c2a1e-7f3b-4c1a-9e2d-1b2c3d4e5f60\n  modified: 2026-12-01T19:02:17.192Z\n---\n\nFreeze.\n", string(out))
	fm, _, err := ParseFrontmatter(out)
	require.NoError(t, err)
	assert.Equal(t, TypeProject, fm.Type)
	assert.Equal(t, "2026-12-01T19:02:17.192Z", fm.Metadata["modified"])

	// In the team directory: no slug, no node_type, no originSessionId.
	out, err = FormatMemoryFile(m, FormatOptions{Team: true, SessionID: "s", Now: at})
	require.NoError(t, err)
	assert.Equal(t, "---\nname: Deploy Freeze Q3\ndescription: No deploys to prod after 2026-12-04 for the mobile release cut\nmetadata:\n  type: project\n  modified: 2026-12-01T19:02:17.192Z\n---\n\nFreeze.\n", string(out))

	// Kept metadata stays; an origin already recorded wins over the session.
	m.Metadata = map[string]string{"originSessionId": "first-session", "owner": "ana", "node_type": "memory"}
	out, err = FormatMemoryFile(m, FormatOptions{SessionID: "later-session", Now: at})
	require.NoError(t, err)
	assert.Contains(t, string(out), "metadata:\n  node_type: memory\n  type: project\n  originSessionId: first-session\n  modified: 2026-12-01T19:02:17.192Z\n  owner: ana\n")

	for in, want := range map[string]string{"release-freeze": "release-freeze", "user_role": "user_role", "Release freeze": "release-freeze", "  A/B -- test! ": "a-b-test", "日本": "日本"} {
		assert.Equal(t, want, NameSlug(in), in)
	}
}

// TestSaveKeepsWhatOthersWrote: Save over a file Claude Code wrote keeps
// its originSessionId and the keys agentmem does not know, refreshes
// modified, and writes the 2.1.88 layout only when asked.
func TestSaveKeepsWhatOthersWrote(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/mem/deploy-freeze.md", []byte("---\nname: deploy-freeze\ndescription: old\nmetadata:\n  node_type: memory\n  type: project\n  originSessionId: cc-session\n  modified: 2026-11-01T00:00:00.000Z\n  promoted: \"yes\"\n---\nold\n"), 0o644))
	at := func() time.Time { return time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC) }
	d, err := NewDir(fsys, "/mem", DirOptions{SessionID: "agentmem-session", Now: at})
	require.NoError(t, err)
	_, err = d.Save(context.Background(), Memory{File: "deploy-freeze.md", Name: "Deploy freeze", Description: "new", Type: TypeProject, Body: "new"})
	require.NoError(t, err)
	got, err := afero.ReadFile(fsys, "/mem/deploy-freeze.md")
	require.NoError(t, err)
	fm, _, err := ParseFrontmatter(got)
	require.NoError(t, err)
	assert.Equal(t, "deploy-freeze", fm.Name)
	assert.Equal(t, TypeProject, fm.Type)
	assert.Equal(t, map[string]string{"node_type": "memory", "originSessionId": "cc-session", "modified": "2026-12-01T08:00:00.000Z", "promoted": "yes"}, fm.Metadata)

	old, err := NewDir(fsys, "/mem", DirOptions{Layout: Layout2_1_88})
	require.NoError(t, err)
	_, err = old.Save(context.Background(), Memory{File: "role.md", Name: "Role", Description: "Data scientist", Type: TypeUser, Body: "x"})
	require.NoError(t, err)
	got, err = afero.ReadFile(fsys, "/mem/role.md")
	require.NoError(t, err)
	assert.Equal(t, "---\nname: Role\ndescription: Data scientist\ntype: user\n---\n\nx\n", string(got))
}

func TestLinks(t *testing.T) {
	assert.Equal(t, []string{"deploy-freeze", "user_role", "ci"}, Links("See [[deploy-freeze]] and [[user_role|the role]].\n[[deploy-freeze]] again, [[ci]]; not [x](y.md) or [[]] or [[a\nb]]"))
	assert.Nil(t, Links("no links"))
}

// TestMemoryFileNameKeepsEveryScript: a title in any script names its
// file by its letters, marks and digits, in NFC, so the same title typed
// in NFD names the same file.
func TestMemoryFileNameKeepsEveryScript(t *testing.T) {
	for title, want := range map[string]string{
		"Testing policy":        "testing_policy.md",
		"Café rules":            "café_rules.md",
		"Cafe\u0301 rules":      "café_rules.md",
		"日本語のメモ":                "日本語のメモ.md",
		"हिन्दी नोट":            "हिन्दी_नोट.md",
		"  Deploy -- Friday!! ": "deploy_friday.md",
		strings.Repeat("é", 40): strings.Repeat("é", 30) + ".md",
	} {
		got, err := MemoryFileName(Memory{Name: title})
		require.NoError(t, err, title)
		assert.Equal(t, want, got, title)
	}
	_, err := MemoryFileName(Memory{Name: "!!! ---"})
	assert.ErrorIs(t, err, ErrInvalidMemory)
}

// writtenTexts is what CheckToolCall scans: the file as the call would
// leave it, so a secret split over two edits is seen whole.
func TestWrittenTexts(t *testing.T) {
	writtenTexts := func(fsys afero.Fs, abs string, call llm.ToolCall) []string {
		in, err := decodeCall(call)
		require.NoError(t, err)
		return in.writtenTexts(fsys, abs)
	}
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/m/a.md", []byte("one two three"), 0o644))
	call := func(name string, input map[string]any) llm.ToolCall {
		return llm.ToolCall{Name: name, Input: js(input)}
	}

	assert.Equal(t, []string{"new"}, writtenTexts(fsys, "/m/a.md", call("Write", map[string]any{"file_path": "/m/a.md", "content": "new"})))
	assert.Equal(t, []string{"cell"}, writtenTexts(fsys, "/m/a.ipynb", call("NotebookEdit", map[string]any{"new_source": "cell"})))
	assert.Equal(t, []string{"one 2 three"}, writtenTexts(fsys, "/m/a.md", call("Edit", map[string]any{"old_string": "two", "new_string": "2"})))
	multi := call("MultiEdit", map[string]any{"edits": []any{
		map[string]any{"old_string": "one", "new_string": "gh"},
		map[string]any{"old_string": " two", "new_string": "p_"},
	}})
	assert.Equal(t, []string{"ghp_ three"}, writtenTexts(fsys, "/m/a.md", multi))
	assert.Equal(t, []string{"x"}, writtenTexts(fsys, "/m/a.md", call("Edit", map[string]any{"old_string": "absent", "new_string": "x"})),
		"edits that do not apply: every new string on its own")
	assert.Equal(t, []string{"x"}, writtenTexts(fsys, "/m/missing.md", call("Edit", map[string]any{"old_string": "a", "new_string": "x"})))
	assert.Nil(t, writtenTexts(fsys, "/m/a.md", call("Read", map[string]any{"file_path": "/m/a.md"})))
}

func TestCheckToolCall(t *testing.T) {
	mem, outside := diskMemory(t)
	require.NoError(t, os.Symlink(outside, filepath.Join(mem, "out")))
	d, err := NewDir(afero.NewOsFs(), mem, DirOptions{})
	require.NoError(t, err)
	write := func(path, content string) llm.ToolCall {
		return llm.ToolCall{Name: "Write", Input: js(map[string]any{"file_path": path, "content": content})}
	}
	var pte *PathTraversalError
	assert.NoError(t, d.CheckToolCall(write("/elsewhere/x.go", fakeToken())), "not the memory directory: the host's business")
	assert.NoError(t, d.CheckToolCall(write(filepath.Join(mem, "notes.md"), fakeToken())), "private memory that is not synced")
	assert.ErrorAs(t, d.CheckToolCall(write(mem+"/../outside/x.md", "x")), &pte, "names the directory, leaves it")
	assert.ErrorAs(t, d.CheckToolCall(write(filepath.Join(mem, "out", "x.md"), "x")), &pte, "a link out")
	assert.ErrorIs(t, d.CheckToolCall(write(filepath.Join(mem, TeamDirName, "ci.md"), fakeToken())), secrets.ErrFound)
	assert.ErrorAs(t, d.CheckToolCall(write(filepath.Join(mem, "team-evil", "ci.md"), "x")), &pte, "a lookalike of the team directory")
	assert.ErrorAs(t, d.CheckToolCall(write(filepath.Join(mem, "team.bak", "ci.md"), "x")), &pte)
	assert.NoError(t, d.CheckToolCall(write(filepath.Join(mem, "teamwork.md"), "x")), "a file whose name starts like it is not a folder")
	assert.NoError(t, d.CheckToolCall(llm.ToolCall{Name: "Read", Input: js(map[string]any{"file_path": filepath.Join(mem, "out", "x.md")})}), "only writes are checked")

	require.NoError(t, os.WriteFile(filepath.Join(mem, TeamDirName, "ci.md"), []byte("CI token: TBD later"), 0o644))
	half := len(fakeToken()) / 2
	split := llm.ToolCall{Name: "MultiEdit", Input: js(map[string]any{"file_path": filepath.Join(mem, TeamDirName, "ci.md"), "edits": []any{
		map[string]any{"old_string": "TBD", "new_string": fakeToken()[:half]},
		map[string]any{"old_string": " later", "new_string": fakeToken()[half:]},
	}})}
	assert.ErrorIs(t, d.CheckToolCall(split), secrets.ErrFound, "a token split over two edits is seen whole")

	synced, err := NewDir(afero.NewOsFs(), mem, DirOptions{Synced: true})
	require.NoError(t, err)
	assert.ErrorIs(t, synced.CheckToolCall(write(filepath.Join(mem, "notes.md"), fakeToken())), secrets.ErrFound)
}

// js is a tool input as a model sends it.
func js(in map[string]any) json.RawMessage {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return b
}

// teamOnlyHandles are the two handles a host that syncs only the team
// directory checks its tool calls on: the team view of its memory
// directory, and a Dir made on the team directory itself.
func teamOnlyHandles(t *testing.T, fsys afero.Fs) map[string]*Dir {
	t.Helper()
	whole, err := NewDir(fsys, "/m", DirOptions{})
	require.NoError(t, err)
	view, err := whole.Sub(TeamDirName)
	require.NoError(t, err)
	own, err := NewDir(fsys, "/m/team", DirOptions{Team: true})
	require.NoError(t, err)
	return map[string]*Dir{"view": view, "own": own}
}

// TestCheckToolCallTeamOnly: a host that syncs only the team directory
// puts CheckToolCall in front of its own Write, Edit, MultiEdit and
// NotebookEdit tools, on the team view or a team Dir; a credential or a
// path that names the team directory and leaves it is refused, and what
// does not name the team directory passes.
func TestCheckToolCallTeamOnly(t *testing.T) {
	for name, d := range teamOnlyHandles(t, afero.NewMemMapFs()) {
		t.Run(name, func(t *testing.T) {
			call := func(tool string, kv ...string) llm.ToolCall {
				in := map[string]any{}
				for i := 0; i+1 < len(kv); i += 2 {
					in[kv[i]] = kv[i+1]
				}
				return llm.ToolCall{Name: tool, Input: js(in)}
			}
			token := fakeToken()
			err := d.CheckToolCall(call("Write", "file_path", "/m/team/ci.md", "content", "use token "+token))
			var se *secrets.Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "github-pat", se.RuleID)
			assert.Contains(t, err.Error(), "GitHub PAT")
			assert.NotContains(t, err.Error(), token)

			assert.NoError(t, d.CheckToolCall(call("Edit", "file_path", "/m/team/ci.md", "old_string", token, "new_string", "removed")), "an edit that removes a secret is fine")
			assert.ErrorIs(t, d.CheckToolCall(call("Edit", "file_path", "/m/team/ci.md", "old_string", "x", "new_string", token)), secrets.ErrFound)
			assert.ErrorIs(t, d.CheckToolCall(call("NotebookEdit", "notebook_path", "/m/team/n.ipynb", "new_source", token)), secrets.ErrFound)

			assert.NoError(t, d.CheckToolCall(call("Write", "file_path", "/m/private.md", "content", token)), "outside the team directory: the host's business")
			var pte *PathTraversalError
			for _, p := range []string{"/m/team/../team-evil/x.md", "/m/team/../../../../root/.bashrc", "/m/team-evil/x.md", "/m/team.bak/x.md", "/m/team/../x.md"} {
				assert.ErrorAs(t, d.CheckToolCall(call("Write", "file_path", p, "content", "x")), &pte, "%s names the team directory and leaves it", p)
			}
			for _, p := range []string{"/m/teammates.md", "/m/team_notes.md", "/elsewhere/team/x.md", "/m/notes/team-x/y.md"} {
				assert.NoError(t, d.CheckToolCall(call("Write", "file_path", p, "content", "x")), "%s is not the team directory", p)
			}
		})
	}
	// A filesystem that cannot say where a path leads refuses: the view
	// cannot be made, and the team Dir refuses the write.
	broken := errFs{afero.NewMemMapFs()}
	whole, err := NewDir(broken, "/m", DirOptions{})
	require.NoError(t, err)
	var pte *PathTraversalError
	_, err = whole.Sub(TeamDirName)
	assert.ErrorAs(t, err, &pte)
	own, err := NewDir(broken, "/m/team", DirOptions{Team: true})
	require.NoError(t, err)
	err = own.CheckToolCall(llm.ToolCall{Name: "Write", Input: js(map[string]any{"file_path": "/m/team/x.md", "content": "x"})})
	assert.ErrorAs(t, err, &pte)
}

// errFs fails Lstat with an unexpected error, to check the fail-closed rule.
type errFs struct{ afero.Fs }

func (errFs) LstatIfPossible(string) (os.FileInfo, bool, error) {
	return nil, true, &os.PathError{Op: "lstat", Path: "/x", Err: errors.New("device on fire")}
}

func TestCheckToolCallTeamOnlyMultiEditAndFinalContent(t *testing.T) {
	fsys := afero.NewMemMapFs()
	token := fakeToken()
	multi := func(edits ...map[string]any) llm.ToolCall {
		list := make([]any, len(edits))
		for i, e := range edits {
			list[i] = e
		}
		return llm.ToolCall{Name: "MultiEdit", Input: js(map[string]any{"file_path": "/m/team/ci.md", "edits": list})}
	}
	edit := func(path, old, new string) llm.ToolCall {
		return llm.ToolCall{Name: "Edit", Input: js(map[string]any{"file_path": path, "old_string": old, "new_string": new})}
	}
	for name, d := range teamOnlyHandles(t, fsys) {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, fsys.RemoveAll("/m/team"))
			err := d.CheckToolCall(multi(map[string]any{"old_string": "a", "new_string": "b"}, map[string]any{"old_string": "c", "new_string": "key " + token}))
			assert.ErrorIs(t, err, secrets.ErrFound, "MultiEdit is a write tool")

			// A token split over two edits only exists in the final content.
			require.NoError(t, afero.WriteFile(fsys, "/m/team/ci.md", []byte("token: HEAD-TAIL\n"), 0o644))
			half := len(token) / 2
			err = d.CheckToolCall(multi(map[string]any{"old_string": "HEAD", "new_string": token[:half]}, map[string]any{"old_string": "-TAIL", "new_string": token[half:]}))
			assert.ErrorIs(t, err, secrets.ErrFound, "the file after the edits holds a token")
			assert.NoError(t, d.CheckToolCall(edit("/m/team/ci.md", "HEAD-", token[:half])), "half a token is no token")

			// An edit that removes a secret already in the file passes.
			require.NoError(t, afero.WriteFile(fsys, "/m/team/old.md", []byte("key "+token+"\n"), 0o644))
			assert.NoError(t, d.CheckToolCall(edit("/m/team/old.md", token, "[rotated]")))

			// A host whose tools have other names gives the call the name of
			// the Claude Code tool it stands for; under its own name it is not
			// a write this check knows.
			create := func(name string) llm.ToolCall {
				return llm.ToolCall{Name: name, Input: js(map[string]any{"file_path": "/m/team/x.md", "content": token})}
			}
			assert.NoError(t, d.CheckToolCall(create("create_file")))
			assert.ErrorIs(t, d.CheckToolCall(create("Write")), secrets.ErrFound)
		})
	}
}

// A create-only save refuses to replace a memory, and a versioned one
// replaces it only while it holds that version; a refusal writes nothing.
func TestSaveIfVersion(t *testing.T) {
	mem, _ := diskMemory(t)
	d, err := NewDir(afero.NewOsFs(), mem, DirOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	first, err := d.Save(ctx, Memory{File: "deploy.md", Name: "Deploy", Description: "d", Type: TypeProject, Body: "Tuesdays.", IfVersion: IfVersionNew})
	require.NoError(t, err)
	require.Len(t, first.Version, 12)
	data, err := os.ReadFile(first.Path)
	require.NoError(t, err)
	assert.Equal(t, MemoryVersion(data), first.Version)

	_, err = d.Save(ctx, Memory{File: "deploy.md", Name: "Deploy", Description: "d", Type: TypeProject, Body: "Fridays.", IfVersion: IfVersionNew})
	var ve *VersionError
	require.ErrorAs(t, err, &ve)
	assert.ErrorIs(t, err, ErrVersionMismatch)
	assert.Equal(t, first.Version, ve.Current)
	assert.Contains(t, err.Error(), "already exists")

	second, err := d.Save(ctx, Memory{File: "deploy.md", Name: "Deploy", Description: "d", Type: TypeProject, Body: "Thursdays.", IfVersion: first.Version})
	require.NoError(t, err, "the version it was read at still holds")
	_, err = d.Save(ctx, Memory{File: "deploy.md", Name: "Deploy", Description: "d", Type: TypeProject, Body: "Mondays.", IfVersion: first.Version})
	require.ErrorAs(t, err, &ve, "a stale version is refused")
	assert.Equal(t, second.Version, ve.Current)
	data, err = os.ReadFile(first.Path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "Thursdays.", "nothing was written by the refusals")
	_, err = d.Save(ctx, Memory{File: "other.md", Name: "Other", Description: "o", Type: TypeProject, Body: "x", IfVersion: first.Version})
	assert.ErrorIs(t, err, ErrVersionMismatch, "a version of a file that does not exist")
}

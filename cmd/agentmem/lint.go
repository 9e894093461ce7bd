package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// Problem kinds lint reports.
const (
	kindDanglingPointer    = "dangling-pointer"
	kindMissingPointer     = "missing-pointer"
	kindIndexTooLong       = "index-too-long"
	kindIndexTooLarge      = "index-too-large"
	kindLongEntry          = "long-entry"
	kindBadFrontmatter     = "bad-frontmatter"
	kindMissingName        = "missing-name"
	kindMissingDescription = "missing-description"
	kindUnknownType        = "unknown-type"
	kindSecret             = "secret"
	kindDuplicateName      = "duplicate-name"
	kindSimilarDescription = "similar-description"
	// kindIndexLinkOut: an index that is a link leading out of the memory
	// directory; it is not read (nor into a prompt) until replaced.
	kindIndexLinkOut = "index-link-out"
	// kindBadFileName: a memory file whose name is not valid UTF-8 or
	// holds control characters; it gets no index pointer.
	kindBadFileName = "bad-file-name"
	// kindInvisible: an invisible or direction-control character (the
	// write gate refuses a write that adds one).
	kindInvisible = "invisible-character"
	// kindIndexLink: an index line with a second link or a link out of
	// its directory.
	kindIndexLink = "index-link"
	// kindInjection: text addressed to the model as instructions, or fake
	// system or tool-call markup (high confidence: a shared write that
	// adds it is refused; low confidence is information).
	kindInjection = "injection"
	// kindExpired: a memory past its expires date (recall leaves it
	// out), or whose expires date does not read.
	kindExpired = "expired"
)

// maxLintFileBytes bounds how much of a memory file lint reads.
const maxLintFileBytes = 1 << 20

type problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (p problem) String() string {
	loc := shown(p.File)
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return loc + ": " + p.Kind + ": " + p.Message
}

func lintFlags(fs *flag.FlagSet) runner {
	fix := fs.Bool("fix", false, "add missing index pointers and remove dangling ones (atomic; never deletes a memory file)")
	asJSON := fs.Bool("json", false, "print JSON")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) > 0 {
			return exitError, fmt.Errorf("unexpected argument %q", args[0])
		}
		r, err := existingMemory(e, c)
		if err != nil {
			return exitError, err
		}
		dir := filepath.Clean(r.path.Dir)
		problems, info, err := lint(e.fs, dir, storeMountDirs(e))
		if err != nil {
			return exitError, err
		}
		var fixed []string
		if *fix {
			fixed, err = applyFixes(e.fs, dir, problems)
			if err != nil {
				return exitError, err
			}
			if problems, info, err = lint(e.fs, dir, storeMountDirs(e)); err != nil {
				return exitError, err
			}
		}
		if *asJSON {
			if _, err := printJSON(e.stdout, map[string]any{"problems": orEmpty(problems), "fixed": orEmpty(fixed), "info": info}); err != nil {
				return exitError, err
			}
		} else {
			for _, f := range fixed {
				fmt.Fprintln(e.stdout, "fixed: "+f)
			}
			for _, p := range problems {
				fmt.Fprintln(e.stdout, p.String())
			}
			for _, i := range info {
				fmt.Fprintln(e.stdout, "info: "+i)
			}
			if len(problems) == 0 {
				fmt.Fprintln(e.stdout, "no problems found")
			}
		}
		if len(problems) > 0 {
			return exitProblems, nil
		}
		return exitOK, nil
	}
}

// memFile is a memory file as lint sees it.
type memFile struct {
	// broken: lint found the file unreadable as a memory (its name or
	// content), so --fix gives it no index pointer.
	broken  bool
	rel     string // relative to the memory dir, "/"-separated
	fm      memdir.Frontmatter
	rawType string
	content string
}

var typeLine = regexp.MustCompile(`(?m)^type:[ \t]*["']?([^"'\r\n]*?)["']?[ \t]*\r?$`)

// lint checks the tree under dir and returns its problems, sorted, and
// information that is no problem (links to memories not written yet).
// The folders of memory stores below the team directory (mounts, the
// names in the folders of team/, and any folder there holding a store
// manifest) are their stores' files, not team memories: lint leaves them.
func lint(fsys afero.Fs, dir string, mounts []string) ([]problem, []string, error) {
	headers, err := memdir.ScanMemoryFiles(context.Background(), fsys, dir, memdir.ScanOptions{MaxFiles: 1 << 20})
	if err != nil {
		return nil, nil, err
	}
	storeDirs := map[string]bool{}
	for _, m := range mounts {
		storeDirs[memdir.TeamDirName+"/"+m+"/"] = true
	}
	if entries, err := afero.ReadDir(fsys, filepath.Join(dir, memdir.TeamDirName)); err == nil {
		for _, d := range entries {
			if ok, _ := afero.Exists(fsys, filepath.Join(dir, memdir.TeamDirName, d.Name(), memdir.StoreManifestName)); d.IsDir() && ok {
				storeDirs[memdir.TeamDirName+"/"+d.Name()+"/"] = true
			}
		}
	}
	headers = slices.DeleteFunc(headers, func(h memdir.MemoryHeader) bool {
		for d := range storeDirs {
			if strings.HasPrefix(filepath.ToSlash(h.Filename), d) {
				return true
			}
		}
		return false
	})
	scanner := secrets.New()
	var problems []problem
	add := func(file string, line int, kind, format string, a ...any) {
		problems = append(problems, problem{File: file, Line: line, Kind: kind, Message: fmt.Sprintf(format, a...)})
	}
	var screened []string // low-confidence findings: information
	// screenText reports what the screens find in text and whether any of
	// it blocks a write there (what sync then holds back).
	screenText := func(rel, text string, index bool) (blocking bool) {
		shared := strings.HasPrefix(rel, memdir.TeamDirName+"/")
		for _, f := range screen.ScanAll(text, index) {
			if f.Confidence == screen.High && (f.Screen != screen.ScreenInjection || shared) {
				blocking = true
			}
			switch {
			case f.Screen == screen.ScreenInvisible:
				add(rel, f.Line, kindInvisible, "%s (%s) at byte %d; remove it", f.CodePointName(), f.RuleID, f.Offset)
			case f.Screen == screen.ScreenIndexLink && f.RuleID == screen.RuleIndexExtraLink:
				add(rel, f.Line, kindIndexLink, "a second link on a pointer line (%s) at byte %d; a pointer line links its memory file only", f.RuleID, f.Offset)
			case f.Screen == screen.ScreenIndexLink:
				add(rel, f.Line, kindIndexLink, "a link out of the directory on a pointer line (%s) at byte %d; a pointer line links a memory file in this directory", f.RuleID, f.Offset)
			case f.Confidence == screen.High:
				add(rel, f.Line, kindInjection, "%s (%s) at byte %d; state it as a fact about the project instead", f.Label, f.RuleID, f.Offset)
			default:
				screened = append(screened, fmt.Sprintf("%s:%d: %s (%s, low confidence) at byte %d", rel, f.Line, f.Label, f.RuleID, f.Offset))
			}
		}
		return blocking
	}
	var files []memFile
	for _, h := range headers {
		data, err := readCapped(fsys, h.Path)
		if err != nil {
			add(h.Filename, 0, kindBadFrontmatter, "cannot be read")
			continue
		}
		f := memFile{rel: h.Filename, content: string(data)}
		fm, _, _ := memdir.ParseFrontmatter(data)
		f.fm = fm
		hasHeader := strings.HasPrefix(strings.TrimLeft(strings.TrimPrefix(f.content, "\ufeff"), "\r\n"), "---")
		// The rules Save also keeps (memdir.CheckMemoryFile).
		unreadable := false
		for _, p := range memdir.CheckMemoryFile(h.Filename, data) {
			name, kind := f.rel, kindBadFrontmatter
			if p.Problem == kindBadFileName {
				name, kind = strings.ToValidUTF8(h.Filename, "\uFFFD"), kindBadFileName
			} else {
				unreadable = true
			}
			add(name, p.Line, kind, "%s", p.Detail)
			f.broken = true
		}
		switch {
		case unreadable:
		case !hasHeader:
			add(f.rel, 1, kindBadFrontmatter, "no frontmatter (--- name, description, type ---)")
			f.broken = true
		case unclosedHeader(f.content) > 0:
			open := unclosedHeader(f.content)
			add(f.rel, open, kindBadFrontmatter, "the frontmatter opened by the --- on line %d is not closed: add a line --- after its last field (until then the file has no name, description or type)", open)
			f.broken = true
		default:
			if fm.Name == "" {
				add(f.rel, 0, kindMissingName, "the frontmatter has no name")
			}
			if fm.Description == "" {
				add(f.rel, 0, kindMissingDescription, "the frontmatter has no description (recall and the manifest rely on it)")
			}
			if v := fm.Metadata[memdir.ExpiresKey]; v != "" {
				if _, ok := fm.Expires(); !ok {
					add(f.rel, 0, kindExpired, "expires %q is not a date: give a day (2026-12-31) or an RFC 3339 time, or remove the line", v)
				} else if fm.Expired(time.Now()) {
					add(f.rel, 0, kindExpired, "its expires date, %s, has passed: recall leaves it out; delete it (agentmem rm %s) or move the date", v, f.rel)
				}
			}
			if head := headerBlock(f.content); head != "" {
				if m := typeLine.FindStringSubmatch(head); m != nil {
					f.rawType = m[1]
					if _, ok := memdir.ParseMemoryType(m[1]); !ok {
						add(f.rel, 0, kindUnknownType, "type %q is not one of user, feedback, project, reference", m[1])
					}
				}
			}
		}
		for _, s := range scanner.Scan(f.content) {
			add(f.rel, 0, kindSecret, "contains what looks like a %s; remove it", s.Label)
		}
		if screenText(f.rel, f.content, false) {
			f.broken = true // refused by the screens: no pointer to it from --fix
		}
		if strings.HasPrefix(f.rel, memdir.TeamDirName+"/") && !norm.NFC.IsNormalString(f.rel) {
			add(f.rel, 0, kindBadFileName, "the name is not in Unicode NFC form, so team sync leaves it at home; rename it")
			f.broken = true
		}
		files = append(files, f)
	}

	// Each index covers the files of its own directory tree: team/MEMORY.md
	// the team files, MEMORY.md the rest.
	for _, idx := range []struct{ rel, base string }{{memdir.EntrypointName, ""}, {memdir.TeamDirName + "/" + memdir.EntrypointName, memdir.TeamDirName + "/"}} {
		pointed := map[string]bool{}
		raw, err := memdir.ReadIndex(fsys, dir, filepath.FromSlash(idx.rel))
		var pte *memdir.PathTraversalError
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case errors.As(err, &pte):
			add(idx.rel, 0, kindIndexLinkOut, "is a link that leads out of the memory directory (%s); it is not read, nor loaded into the prompt: replace it with a regular file", pte.Reason)
			continue
		case err != nil:
			return nil, nil, err
		default:
			text := string(raw)
			t := memdir.IndexLimits{}.Truncate(text)
			if t.WasLineTruncated {
				add(idx.rel, 0, kindIndexTooLong, "%d lines; only the first %d reach the prompt", t.LineCount, memdir.MaxEntrypointLines)
			}
			if t.WasByteTruncated {
				add(idx.rel, 0, kindIndexTooLarge, "%s; only the first %s reach the prompt", memdir.FormatFileSize(t.ByteCount), memdir.FormatFileSize(memdir.MaxEntrypointBytes))
			}
			for i, line := range strings.Split(text, "\n") {
				if p := memdir.CheckIndexLine(line); p != nil {
					add(idx.rel, i+1, kindLongEntry, "%s", p.Detail)
				}
				for _, target := range linkTargets(line) {
					rel := path.Clean(idx.base + strings.TrimPrefix(target, "./"))
					if !strings.HasPrefix(rel, idx.base) || strings.HasPrefix(rel, "../") {
						continue
					}
					pointed[rel] = true
					if _, err := fsys.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
						add(idx.rel, i+1, kindDanglingPointer, "points to %s, which does not exist", target)
					}
				}
			}
			for _, s := range scanner.Scan(text) {
				add(idx.rel, 0, kindSecret, "contains what looks like a %s; remove it", s.Label)
			}
			screenText(idx.rel, text, true)
		}
		for _, f := range files {
			inTeam := strings.HasPrefix(f.rel, memdir.TeamDirName+"/")
			if inTeam != (idx.base != "") {
				continue
			}
			if !pointed[f.rel] && !f.broken {
				add(f.rel, 0, kindMissingPointer, "no pointer in %s", idx.rel)
			}
		}
	}

	// Near-duplicates: the same name, or descriptions sharing most words.
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	for i := range files {
		for j := 0; j < i; j++ {
			a, b := files[j], files[i]
			if a.fm.Name != "" && strings.EqualFold(a.fm.Name, b.fm.Name) {
				add(b.rel, 0, kindDuplicateName, "has the same name as %s (%q); merge them", a.rel, a.fm.Name)
				continue
			}
			if s := similarity(a.fm.Description, b.fm.Description); s >= 0.75 {
				add(b.rel, 0, kindSimilarDescription, "its description is %.0f%% like that of %s; merge them if they say the same", 100*s, a.rel)
			}
		}
	}
	slices.SortStableFunc(problems, func(a, b problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.Kind, b.Kind))
	})
	sort.Strings(screened)
	return problems, append(unresolvedLinks(files), screened...), nil
}

// similarity is the Jaccard index of two descriptions' terms; 0 when
// either has fewer than three terms.
func similarity(a, b string) float64 {
	sa, sb := termSet(a), termSet(b)
	if len(sa) < 3 || len(sb) < 3 {
		return 0
	}
	inter := 0
	for t := range sa {
		if sb[t] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

func termSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range lexical.Tokenize(s) {
		out[t] = true
	}
	return out
}

// unclosedHeader returns the line (from 1) of the "---" that opens the
// file's frontmatter when no later "---" line closes it, else 0.
func unclosedHeader(content string) int {
	lines := strings.Split(strings.TrimPrefix(content, "\ufeff"), "\n")
	open := -1
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if open < 0 {
			if l == "" {
				continue
			}
			if strings.TrimSpace(l) != "---" {
				return 0
			}
			open = i
			continue
		}
		if strings.TrimSpace(l) == "---" {
			return 0
		}
	}
	return open + 1
}

// headerBlock returns the text between the leading "---" line and the next.
func headerBlock(content string) string {
	lines := strings.Split(strings.TrimPrefix(content, "\ufeff"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return ""
	}
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			return strings.Join(lines[1:i], "\n")
		}
	}
	return ""
}

var linkRe = regexp.MustCompile(`\]\(([^)\s]+\.md)\)`)

// linkTargets returns the relative .md link targets of an index line.
func linkTargets(line string) []string {
	var out []string
	for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
		t := m[1]
		if strings.Contains(t, "://") || strings.HasPrefix(t, "/") {
			continue
		}
		out = append(out, t)
	}
	return out
}

// unresolvedLinks lists, as information (never a problem: Claude Code
// 2.1.328 allows a link to a memory not written yet), each [[name]] link
// of the files lint read that matches no memory's name or file name.
func unresolvedLinks(files []memFile) []string {
	known := map[string]bool{}
	for _, f := range files {
		for _, k := range memdir.LinkNames(f.rel, f.fm.Name) {
			known[k] = true
		}
	}
	info := []string{}
	for _, f := range files {
		for _, name := range memdir.Links(f.content) {
			if !known[memdir.LinkKey(name)] {
				info = append(info, fmt.Sprintf("%s: [[%s]] links to no memory yet (allowed)", f.rel, name))
			}
		}
	}
	sort.Strings(info)
	return info
}

func readCapped(fsys afero.Fs, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxLintFileBytes))
}

// applyFixes adds missing pointers and removes dangling ones, one atomic
// rewrite per index under the index lock that Save and the memory tools
// also take, and describes each change. It never touches a topic file.
func applyFixes(fsys afero.Fs, dir string, problems []problem) ([]string, error) {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{})
	if err != nil {
		return nil, err
	}
	type edit struct {
		add    []string // memory files (relative to the memory dir) to point to
		remove map[int]bool
	}
	edits := map[string]*edit{}
	get := func(idx string) *edit {
		if edits[idx] == nil {
			edits[idx] = &edit{remove: map[int]bool{}}
		}
		return edits[idx]
	}
	teamIdx := memdir.TeamDirName + "/" + memdir.EntrypointName
	for _, p := range problems {
		switch p.Kind {
		case kindMissingPointer:
			idx := memdir.EntrypointName
			if strings.HasPrefix(p.File, memdir.TeamDirName+"/") {
				idx = teamIdx
			}
			get(idx).add = append(get(idx).add, p.File)
		case kindDanglingPointer:
			get(p.File).remove[p.Line] = true
		}
	}
	var done []string
	for _, idx := range slices.Sorted(maps.Keys(edits)) {
		ed := edits[idx]
		abs := filepath.Join(dir, filepath.FromSlash(idx))
		raw, err := memdir.ReadIndex(fsys, dir, filepath.FromSlash(idx))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return done, err
		}
		// The lines to drop are known by their text, so the locked rewrite
		// below still drops the right ones if another writer changed the
		// index since it was read.
		drop := map[string]bool{}
		if len(raw) > 0 {
			for i, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
				if ed.remove[i+1] {
					drop[l] = true
					done = append(done, fmt.Sprintf("%s:%d: removed dangling pointer %q", idx, i+1, l))
				}
			}
		}
		base := path.Dir(idx)
		var add []string
		for _, f := range ed.add {
			target := f
			if base != "." {
				target = strings.TrimPrefix(f, base+"/")
			}
			m, err := memoryFor(fsys, dir, f)
			if err != nil {
				return done, err
			}
			line := memdir.IndexLine(m, target)
			add = append(add, line)
			done = append(done, fmt.Sprintf("%s: added pointer %q", idx, line))
		}
		_, err = d.Gate().UpdateFile(context.Background(), abs, func(cur []byte, _ bool) ([]byte, error) {
			var kept []string
			present := map[string]bool{}
			if len(cur) > 0 {
				for _, l := range strings.Split(strings.TrimRight(string(cur), "\n"), "\n") {
					if !drop[l] {
						kept = append(kept, l)
						present[l] = true
					}
				}
			}
			for _, l := range add {
				if !present[l] {
					kept = append(kept, l)
				}
			}
			return []byte(strings.Join(kept, "\n") + "\n"), nil
		}, 0o644)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func memoryFor(fsys afero.Fs, dir, rel string) (memdir.Memory, error) {
	data, err := readCapped(fsys, filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return memdir.Memory{}, err
	}
	fm, _, _ := memdir.ParseFrontmatter(data)
	return memdir.Memory{Name: fm.Name, Description: fm.Description}, nil
}

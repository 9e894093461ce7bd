package transcript

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
)

// windowBytes is how much of a transcript's head and tail listing reads.
const windowBytes = 64 << 10

// maxPromptRunes bounds a listed prompt (then "…").
const maxPromptRunes = 200

// Info describes one session for a listing, read from the head and tail
// of its transcript only.
type Info struct {
	SessionID string `json:"sessionId"`
	// Title is what to show, in Claude Code 2.1.328's order: the agent
	// name, else the custom title, else the AI title, else the summary,
	// else the prompt, else the session id's first 8 characters.
	Title string `json:"title"`
	// FirstPrompt is the last recorded prompt (last-prompt), else the
	// first meaningful user prompt, cut to 200 characters.
	FirstPrompt string    `json:"firstPrompt"`
	GitBranch   string    `json:"gitBranch"`
	Tag         string    `json:"tag"`
	Cwd         string    `json:"cwd"`
	Created     time.Time `json:"created"`
	Modified    time.Time `json:"modified"`
	// Path and Size locate the transcript (not part of the JSON shape).
	Path string `json:"-"`
	Size int64  `json:"-"`
}

// List implements Store: the UUID-named transcripts of the directory,
// newest first (then session id, descending), each described from the
// first and last 64 KiB of its file only. Sidechain transcripts (the first
// line says so), team members' transcripts (teamName) and files with no
// message (metadata only) are left out.
func (s *JSONLStore) List(ctx context.Context) ([]Info, error) {
	if err := s.Flush(ctx); err != nil {
		return nil, err
	}
	return listDir(ctx, s, s.dir)
}

func listDir(ctx context.Context, s *JSONLStore, dir string) ([]Info, error) {
	entries, err := fswalk.ReadDir(s.fs, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Rel, ".jsonl"); ok && IsSessionID(id) && e.Type.IsRegular() {
			ids = append(ids, id)
		}
	}
	// A few workers read the windows: the reads, not the parsing, are
	// most of the time, and they overlap.
	workers := max(1, min(runtime.GOMAXPROCS(0), 4, len(ids)/16))
	found := make([][]Info, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			scratch := make([]byte, 2*windowBytes) // reused: the windows are not kept
			for n, i := 0, w; i < len(ids); n, i = n+1, i+workers {
				if n%64 == 0 && ctx.Err() != nil {
					return
				}
				path := filepath.Join(dir, ids[i]+".jsonl")
				head, tail, info, err := readWindows(s.fs, path, scratch)
				if err != nil || info.Size() == 0 {
					continue
				}
				inf, ok := describe(ids[i], head, tail)
				if !ok {
					continue
				}
				inf.Modified, inf.Path, inf.Size = info.ModTime(), path, info.Size()
				found[w] = append(found[w], inf)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Info
	for _, f := range found {
		out = append(out, f...)
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c // newest first
		}
		return strings.Compare(b.SessionID, a.SessionID)
	})
	return out, nil
}

// listKeys are the fields listing reads from the windows.
var listKeys = []string{"agentName", "customTitle", "aiTitle", "summary", "lastPrompt", "gitBranch", "cwd", "timestamp"}

// fieldIndex records, in one pass over a window, where each listed key
// occurs first and last.
type fieldIndex struct {
	b           []byte
	first, last map[string]int
	messages    bool // a user or assistant entry occurs
}

var (
	typeUser      = []byte(`type":"user"`)
	typeAssistant = []byte(`type":"assistant"`)
)

func indexFields(b []byte) fieldIndex {
	fi := fieldIndex{b: b, first: map[string]int{}, last: map[string]int{}}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return fi
		}
		i += j
		rest := b[i+1:]
		if !fi.messages && len(rest) > 0 && rest[0] == 't' && (bytes.HasPrefix(rest, typeUser) || bytes.HasPrefix(rest, typeAssistant)) {
			fi.messages = true
		}
		for _, k := range listKeys {
			if len(rest) > len(k)+1 && rest[0] == k[0] && bytes.HasPrefix(rest, []byte(k)) && rest[len(k)] == '"' && rest[len(k)+1] == ':' {
				if _, ok := fi.first[k]; !ok {
					fi.first[k] = i
				}
				fi.last[k] = i
			}
		}
		i++
	}
}

// value reads the string value of key at position at ("" when it is not
// a string).
func (fi fieldIndex) value(key string, at int, ok bool) string {
	if !ok {
		return ""
	}
	if m := fieldRe(key).FindSubmatchIndex(fi.b[at:]); m != nil {
		return unquote(fi.b[at+m[2] : at+m[3]])
	}
	return ""
}

func (fi fieldIndex) lastValue(key string) string {
	at, ok := fi.last[key]
	return fi.value(key, at, ok)
}

func (fi fieldIndex) firstValue(key string) string {
	at, ok := fi.first[key]
	return fi.value(key, at, ok)
}

// describe reads a session's listing fields from its head and tail
// windows by string search, as Claude Code does, without parsing the
// whole file.
func describe(id string, head, tail []byte) (Info, bool) {
	inf := Info{SessionID: id}
	firstLine, _, _ := bytes.Cut(head, []byte("\n"))
	if sidechainRe.Match(firstLine) || bytes.Contains(head, []byte(`"teamName":"`)) {
		return inf, false // a sub-agent's or a team member's transcript
	}
	h, t := indexFields(head), indexFields(tail)
	agent := cmp.Or(t.lastValue("agentName"), h.lastValue("agentName"))
	custom := cmp.Or(t.lastValue("customTitle"), h.lastValue("customTitle"))
	ai := cmp.Or(t.lastValue("aiTitle"), h.lastValue("aiTitle"))
	summary := t.lastValue("summary")
	inf.FirstPrompt = t.lastValue("lastPrompt")
	if inf.FirstPrompt == "" {
		inf.FirstPrompt = firstMeaningfulPrompt(head)
	}
	inf.GitBranch = cmp.Or(t.lastValue("gitBranch"), h.firstValue("gitBranch"))
	inf.Tag = lastTag(tail)
	inf.Cwd = h.firstValue("cwd")
	if ts := h.firstValue("timestamp"); ts != "" {
		inf.Created, _ = time.Parse(time.RFC3339Nano, ts)
	}
	if !h.messages && !t.messages {
		return inf, false // metadata only
	}
	inf.Title = cmp.Or(agent, custom, ai, summary, inf.FirstPrompt)
	if inf.Title == "" {
		inf.Title = id[:8]
	}
	return inf, true
}

var sidechainRe = regexp.MustCompile(`"isSidechain":\s?true`)

// stringField matches "name":"value" (JSON escapes in the value) at the
// start of its input.
func stringField(name string) *regexp.Regexp {
	return regexp.MustCompile(`^"` + regexp.QuoteMeta(name) + `":\s?"((?:[^"\\]|\\.)*)"`)
}

// fieldRes are the compiled patterns of the fields listing reads; never
// changed after the package is loaded.
var fieldRes = func() map[string]*regexp.Regexp {
	m := map[string]*regexp.Regexp{}
	for _, n := range []string{"agentName", "customTitle", "aiTitle", "summary", "lastPrompt", "gitBranch", "cwd", "timestamp", "tag"} {
		m[n] = stringField(n)
	}
	return m
}()

func fieldRe(name string) *regexp.Regexp {
	if re, ok := fieldRes[name]; ok {
		return re
	}
	return stringField(name)
}

func unquote(raw []byte) string {
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s); err != nil {
		return string(raw)
	}
	return s
}

// lastTag is the tag of the last line that begins with {"type":"tag"
// ("" clears it).
func lastTag(tail []byte) string {
	tag := ""
	for _, line := range bytes.Split(tail, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(`{"type":"tag"`)) {
			if e, ok := ParseLine(line); ok && e.Tag != nil {
				tag = *e.Tag
			}
		}
	}
	return tag
}

var (
	xmlishRe     = regexp.MustCompile(`^\s*<[a-z][\w-]*[\s>]`)
	commandRe    = regexp.MustCompile(`<command-name>\s*/?([^<\s]+)\s*</command-name>`)
	commandArgRe = regexp.MustCompile(`<command-args>([^<]*)</command-args>`)
	bashInputRe  = regexp.MustCompile(`<bash-input>([\s\S]*?)</bash-input>`)
)

// builtinCommands are slash commands that never stand for a prompt.
var builtinCommands = map[string]bool{"clear": true, "compact": true, "resume": true, "help": true, "model": true, "config": true,
	"cost": true, "exit": true, "init": true, "login": true, "logout": true, "memory": true, "status": true, "review": true}

// firstMeaningfulPrompt finds the first user prompt worth showing in a
// head window: user lines that are not tool results, meta or compact
// summaries; slash commands only with arguments; "<bash-input>X" as "! X";
// other texts that start with an XML-ish tag or an interruption marker
// skipped. A command name is the fallback.
func firstMeaningfulPrompt(head []byte) string {
	fallback := ""
	for _, line := range bytes.Split(head, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"type":"user"`)) || bytes.Contains(line, []byte(`"tool_result"`)) ||
			bytes.Contains(line, []byte(`"isMeta":true`)) || bytes.Contains(line, []byte(`"isCompactSummary":true`)) {
			continue
		}
		e, ok := ParseLine(line)
		if !ok || e.Type != TypeUser {
			continue
		}
		for _, b := range e.Blocks() {
			if b.Type != "text" {
				continue
			}
			text := strings.TrimSpace(strings.Join(strings.Fields(b.Text), " "))
			if text == "" {
				continue
			}
			if m := commandRe.FindStringSubmatch(b.Text); m != nil {
				args := ""
				if a := commandArgRe.FindStringSubmatch(b.Text); a != nil {
					args = strings.TrimSpace(a[1])
				}
				if builtinCommands[m[1]] || args == "" {
					if fallback == "" {
						fallback = "/" + m[1]
					}
					continue
				}
				return cutPrompt("/" + m[1] + " " + args)
			}
			if m := bashInputRe.FindStringSubmatch(b.Text); m != nil {
				return cutPrompt("! " + strings.TrimSpace(m[1]))
			}
			if xmlishRe.MatchString(text) || strings.HasPrefix(text, "[Request interrupted by user") {
				continue
			}
			return cutPrompt(text)
		}
	}
	return fallback
}

func cutPrompt(s string) string {
	r := []rune(s)
	if len(r) <= maxPromptRunes {
		return s
	}
	return strings.TrimSpace(string(r[:maxPromptRunes])) + "…"
}

// promptText is a user entry's prompt as listing would show it ("" for
// tool results and meta messages).
func promptText(e *Entry) string {
	if e.IsMeta || e.IsCompactSummary || e.isToolResult() {
		return ""
	}
	line := e.Raw
	return firstMeaningfulPrompt(line)
}

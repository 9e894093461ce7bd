package recall

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// Surfaced is one memory put in front of the model for a query.
type Surfaced struct {
	Path string
	// Header introduces the content, with a freshness caveat when the
	// memory is more than a day old (memdir.MemoryHeaderLine).
	Header  string
	Content string
	// Truncated reports whether the file was cut to the line or byte limit.
	Truncated bool
}

// Text returns the header and the content, ready to attach to the turn.
func (s Surfaced) Text() string { return s.Header + "\n\n" + s.Content }

// SessionOptions tunes a Session; the zero value means the defaults.
type SessionOptions struct {
	// BudgetBytes stops surfacing once this much content has been
	// surfaced (default 60 KiB).
	BudgetBytes int
	// MaxLines and MaxBytes bound each file (default 200 lines, 4,096 bytes).
	MaxLines int
	MaxBytes int
	// Now is the clock for freshness headers (default time.Now).
	Now func() time.Time
}

// Session applies the per-conversation recall rules on top of a Finder:
// skip one-word messages, never surface a file twice or one the
// conversation already read, stop at the session budget, cut each file
// with a note, and put a freshness header on each. Reset it when the host
// compacts the conversation. Safe for concurrent use.
type Session struct {
	finder *Finder
	opts   SessionOptions

	mu       sync.Mutex
	surfaced map[string]bool
	read     map[string]bool
	spent    int
}

// NewSession returns a Session over finder.
func NewSession(finder *Finder, opts SessionOptions) *Session {
	defaults.IfUnset(&opts.BudgetBytes, sessionBudgetBytes)
	defaults.IfUnset(&opts.MaxLines, maxFileLines)
	defaults.IfUnset(&opts.MaxBytes, maxFileBytes)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Session{finder: finder, opts: opts, surfaced: map[string]bool{}, read: map[string]bool{}}
}

// MarkRead records that the conversation read path with a tool, so recall
// does not surface it again.
func (s *Session) MarkRead(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read[filepath.Clean(path)] = true
}

// Reset forgets what was surfaced and read: call it after compaction,
// when the earlier messages are gone from the context.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.surfaced = map[string]bool{}
	s.read = map[string]bool{}
	s.spent = 0
}

// Spent reports how many bytes have been surfaced since the last Reset.
func (s *Session) Spent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spent
}

// Recall returns the memories to attach to a user message. It never fails:
// no result means nothing to attach.
func (s *Session) Recall(ctx context.Context, query string, recentTools []string) []Surfaced {
	if len(strings.Fields(query)) < 2 {
		return nil // one word ("yes", "continue") carries no topic
	}
	s.mu.Lock()
	if s.spent >= s.opts.BudgetBytes {
		s.mu.Unlock()
		return nil
	}
	skip := make(map[string]bool, len(s.surfaced)+len(s.read))
	for p := range s.surfaced {
		skip[p] = true
	}
	for p := range s.read {
		skip[p] = true
	}
	s.mu.Unlock()

	picked := s.finder.Find(ctx, query, skip, recentTools)
	var out []Surfaced
	for _, h := range picked {
		content, truncated, err := s.readCapped(h.Path)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if s.spent >= s.opts.BudgetBytes || s.surfaced[h.Path] {
			s.mu.Unlock()
			continue
		}
		s.surfaced[h.Path] = true
		s.spent += len(content)
		s.mu.Unlock()
		out = append(out, Surfaced{
			Path:      h.Path,
			Header:    memdir.MemoryHeaderLine(h.Path, h.ModTime, s.opts.Now()),
			Content:   content,
			Truncated: truncated,
		})
	}
	return out
}

// readCapped reads up to MaxLines lines and MaxBytes bytes (never splitting
// a character) and appends a note when the file is longer.
func (s *Session) readCapped(p string) (string, bool, error) {
	f, err := s.finder.fs.Open(p)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var b strings.Builder
	lines := 0
	truncated := false
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			if lines == s.opts.MaxLines {
				truncated = true
				break
			}
			if b.Len()+len(line) > s.opts.MaxBytes {
				room := s.opts.MaxBytes - b.Len()
				for room > 0 && !utf8.RuneStart(line[room]) {
					room--
				}
				b.WriteString(line[:room])
				truncated = true
				break
			}
			b.WriteString(line)
			lines++
		}
		if err != nil {
			break
		}
	}
	content := strings.TrimRight(b.String(), "\n")
	if truncated {
		content += fmt.Sprintf("\n\n[Memory cut at %d lines or %d bytes; read %s for the rest.]", s.opts.MaxLines, s.opts.MaxBytes, p)
	}
	return content, truncated, nil
}

// RecentTools returns the tools that returned a successful result since
// the last human message (a user message with text), leaving out any tool
// that also failed in that span.
func RecentTools(msgs []llm.Message) []string {
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser && msgs[i].Text() != "" {
			start = i + 1
			break
		}
	}
	names := map[string]string{} // tool use ID → tool name
	ok, failed := map[string]bool{}, map[string]bool{}
	var order []string
	for _, m := range msgs[start:] {
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockToolUse:
				names[b.ToolUseID] = b.ToolName
			case llm.BlockToolResult:
				name, known := names[b.ToolUseID]
				if !known {
					continue
				}
				if b.IsError {
					failed[name] = true
				} else if !ok[name] {
					ok[name] = true
					order = append(order, name)
				}
			}
		}
	}
	var out []string
	for _, n := range order {
		if !failed[n] {
			out = append(out, n)
		}
	}
	return out
}

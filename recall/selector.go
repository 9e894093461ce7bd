package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/memdir"
	"github.com/spf13/afero"
)

// SelectRequest is one selection: a query and the memories to choose from.
type SelectRequest struct {
	Query      string
	Candidates []memdir.MemoryHeader
	// RecentTools are the tools the agent is using right now (see
	// RecentTools): their usage docs are noise, their warnings are not.
	RecentTools []string
	// Max is the most filenames to return.
	Max int
}

// Selector picks the memories relevant to a query. It returns filenames
// (MemoryHeader.Filename) of candidates.
type Selector interface {
	Select(ctx context.Context, req SelectRequest) ([]string, error)
}

// ModelSelector asks a model, with structured JSON output
// {"selected_memories": [filename]}.
type ModelSelector struct {
	Model llm.Model
	// MaxTokens bounds the reply (default 256).
	MaxTokens int
}

// selectionSchema is the JSON Schema of the selector's reply.
var selectionSchema = json.RawMessage(`{"type":"object","properties":{"selected_memories":{"type":"array","items":{"type":"string"}}},"required":["selected_memories"],"additionalProperties":false}`)

const selectorSystem = `You choose which saved memory files will help an AI assistant answer the user's current message.
You get the message and a list of memory files, one per line, with a type, a filename, a date and a one-line description.
Return the filenames of the memories that will clearly help with this message, at most %d. Be strict:
- leave out anything you are not sure about; an empty list is a good answer when nothing clearly applies;
- if recently used tools are listed, leave out memories that only document how to use those tools (the assistant is already using them), but keep memories that warn about their pitfalls or known problems, since that is exactly when they matter.
Answer only with the JSON object.`

// ErrMalformedSelection is returned when a model's reply is not the
// expected JSON object.
var ErrMalformedSelection = errors.New("recall: the selector's reply is not the expected JSON")

// Select implements Selector.
func (s ModelSelector) Select(ctx context.Context, req SelectRequest) ([]string, error) {
	if s.Model == nil {
		return nil, llm.ErrNoModel
	}
	maxTokens := s.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 256
	}
	var user strings.Builder
	user.WriteString("Message: " + req.Query + "\n\nMemory files:\n" + memdir.FormatManifest(req.Candidates) + "\n")
	if len(req.RecentTools) > 0 {
		user.WriteString("\nRecently used tools: " + strings.Join(req.RecentTools, ", ") + "\n")
	}
	resp, err := s.Model.Generate(ctx, llm.Request{
		Purpose:      llm.PurposeMemoryRelevance,
		System:       fmt.Sprintf(selectorSystem, req.Max),
		Messages:     []llm.Message{{ID: "recall-query", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(user.String())}}},
		OutputSchema: selectionSchema,
		MaxTokens:    maxTokens,
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		Selected *[]string `json:"selected_memories"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(resp.Text())), &out); err != nil || out.Selected == nil {
		return nil, ErrMalformedSelection
	}
	return *out.Selected, nil
}

// LexicalOptions tunes a LexicalSelector; the zero value means defaults.
type LexicalOptions struct {
	// MinStrength drops matches weaker than this (Hit.Strength), so a
	// message that needs no memory gets none (default 0.75, tuned on
	// testdata/recall/shop.json).
	MinStrength float64
	// MinScore optionally drops matches under an absolute BM25 score
	// (default 0: off; absolute scores depend on the directory's size).
	MinScore float64
	// MinRelative drops matches scoring below this share of the best
	// match (default 0.5), so one strong match is not diluted by weak ones.
	MinRelative float64
	// MaxBodyBytes is how much of each file's body is indexed (default
	// 16 KiB).
	MaxBodyBytes int64
}

// LexicalSelector ranks memories with BM25 over their name, description
// and body; it needs no model. It keeps the bodies it read, keyed by path
// and mtime, and rebuilds its index only when the candidates change. Safe
// for concurrent use.
type LexicalSelector struct {
	fs   afero.Fs
	opts LexicalOptions

	mu    sync.Mutex
	cache map[string]cachedDoc
	sig   string
	index *Index
}

type cachedDoc struct {
	mtime time.Time
	doc   Document
}

// NewLexicalSelector returns a selector that reads memory bodies from fsys.
func NewLexicalSelector(fsys afero.Fs, opts LexicalOptions) *LexicalSelector {
	if opts.MinStrength <= 0 {
		opts.MinStrength = 0.75
	}
	if opts.MinRelative <= 0 {
		opts.MinRelative = 0.5
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 16 << 10
	}
	return &LexicalSelector{fs: fsys, opts: opts, cache: map[string]cachedDoc{}}
}

// Select implements Selector.
func (s *LexicalSelector) Select(ctx context.Context, req SelectRequest) ([]string, error) {
	hits, err := s.Rank(ctx, req.Query, req.Candidates, req.Max, s.opts.MinScore)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hits {
		if h.Score < s.opts.MinRelative*hits[0].Score {
			break
		}
		if h.Strength < s.opts.MinStrength {
			continue
		}
		out = append(out, h.Filename)
	}
	return out, nil
}

// Rank returns up to k candidates for query, best first, scoring at least
// minScore.
func (s *LexicalSelector) Rank(ctx context.Context, query string, candidates []memdir.MemoryHeader, k int, minScore float64) ([]Hit, error) {
	ix, err := s.indexFor(ctx, candidates)
	if err != nil {
		return nil, err
	}
	return ix.Search(query, k, minScore), nil
}

func (s *LexicalSelector) indexFor(ctx context.Context, candidates []memdir.MemoryHeader) (*Index, error) {
	var sig strings.Builder
	for _, c := range candidates {
		sig.WriteString(c.Path)
		sig.WriteByte(0)
		sig.WriteString(c.ModTime.Format(time.RFC3339Nano))
		sig.WriteByte(0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index != nil && s.sig == sig.String() {
		return s.index, nil
	}
	docs := make([]Document, 0, len(candidates))
	fresh := make(map[string]cachedDoc, len(candidates))
	for i, c := range candidates {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		cd, ok := s.cache[c.Path]
		if !ok || !cd.mtime.Equal(c.ModTime) {
			cd = cachedDoc{mtime: c.ModTime, doc: Document{Filename: c.Filename, Name: c.Name, Description: c.Description, Body: s.body(c.Path)}}
		}
		cd.doc.Filename = c.Filename
		fresh[c.Path] = cd
		docs = append(docs, cd.doc)
	}
	s.cache = fresh
	s.sig = sig.String()
	s.index = NewIndex(docs)
	return s.index, nil
}

// body reads the start of a memory file without its frontmatter; an
// unreadable file contributes only its header fields.
func (s *LexicalSelector) body(p string) string {
	f, err := s.fs.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.opts.MaxBodyBytes))
	if err != nil {
		return ""
	}
	_, body, _ := memdir.ParseFrontmatter(data)
	return string(body)
}

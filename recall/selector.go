package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
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
	defaults.IfUnset(&maxTokens, 256)
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

// LexicalOptions tunes the lexical selection; the zero value means the
// defaults.
type LexicalOptions struct {
	// MinStrength decides when nothing is relevant: when the best match
	// holds only one of the query's words, that word is not a subject of
	// the directory (see SubjectShare), and the match is weaker than
	// MinStrength (Hit.Strength, in units of one distinctive term),
	// nothing is returned. A match on two or more of the query's words is
	// always kept, and so is a match on a subject: a question about a
	// person the memories are about is answered with the best guesses.
	// Default 0.85: calibrated on the messages of
	// testdata/recall/shop.json that need no memory ("thanks, that looks
	// good", "what is 17 times 23", ...), whose best matches all hold a
	// single word, shared by at most 8 of 150 memories, at strength 0.83
	// or less. Below 20 memories less is needed (see Abstain).
	MinStrength float64
	// SubjectShare makes a word a subject of the directory when at least
	// this share of the memories, and at least 20 of them, hold it
	// (default 0.01).
	SubjectShare float64
	// MinRelative drops matches scoring below this share of the best one
	// (default 0.2), so weak echoes do not follow one clear answer.
	MinRelative float64
	// MaxBodyBytes is how much of each file's body a LexicalSelector
	// indexes (default 16 KiB).
	MaxBodyBytes int64
}

// withDefaults fills the zero fields.
func (o LexicalOptions) withDefaults() LexicalOptions {
	defaults.IfUnset(&o.MinStrength, 0.85)
	defaults.IfUnset(&o.SubjectShare, 0.01)
	defaults.IfUnset(&o.MinRelative, 0.2)
	defaults.IfUnset(&o.MaxBodyBytes, 16<<10)
	return o
}

// minSubjectDocs is the fewest memories a subject word is shared by.
const minSubjectDocs = 20

// fewMemories is the directory size below which one matching word needs
// less strength: the fewer memories, the fewer words there are to match
// by chance.
const fewMemories = 20

// Abstain reports whether the best match, in a directory of n memories,
// says nothing is relevant: it holds a single word of the query, a word
// that is not a subject of the directory, and is weaker than
// MinStrength. Below fewMemories memories the strength needed falls
// with the log of their number (a third of MinStrength for one memory,
// about 60% for five), so a newcomer's first memory is found by the word
// a question shares with it.
func (o LexicalOptions) Abstain(best Hit, n int) bool {
	o = o.withDefaults()
	subject := best.Shared >= max(minSubjectDocs, int(o.SubjectShare*float64(n)))
	return best.Matched < 2 && !subject && best.Strength < o.StrengthNeeded(n)
}

// StrengthNeeded is the strength one matching word needs among n
// memories (see Abstain): MinStrength from 20 memories up, less below.
func (o LexicalOptions) StrengthNeeded(n int) float64 {
	need := o.withDefaults().MinStrength
	if n < fewMemories {
		need *= math.Log(2+float64(n)) / math.Log(2+fewMemories)
	}
	return need
}

// choose applies the selection rules to hits ranked best first from a
// directory of n memories.
func (o LexicalOptions) choose(hits []lexical.Hit, max, n int) []string {
	if len(hits) == 0 || o.Abstain(hits[0], n) {
		return nil
	}
	var out []string
	for _, h := range hits {
		if len(out) == max || h.Score < o.MinRelative*hits[0].Score {
			break
		}
		out = append(out, h.Key)
	}
	return out
}

// LexicalSelector ranks the candidates it is given with BM25F over their
// name, description and body (package lexical); it needs no model. A
// Finder does not need one (it keeps its own index over the whole
// directory); use it to rank a candidate list of your own. It keeps its
// index while the candidates (paths and mtimes) stay the same. Safe for
// concurrent use.
type LexicalSelector struct {
	fs   afero.Fs
	opts LexicalOptions

	mu    sync.Mutex
	sig   string
	index *lexical.Index
}

// NewLexicalSelector returns a selector that reads memory bodies from fsys.
func NewLexicalSelector(fsys afero.Fs, opts LexicalOptions) *LexicalSelector {
	return &LexicalSelector{fs: fsys, opts: opts.withDefaults()}
}

// Select implements Selector.
func (s *LexicalSelector) Select(ctx context.Context, req SelectRequest) ([]string, error) {
	hits, err := s.Rank(ctx, req.Query, req.Candidates, req.Max)
	if err != nil {
		return nil, err
	}
	return s.opts.choose(hits, req.Max, len(req.Candidates)), nil
}

// Rank returns up to k candidates for query, best first, with no
// thresholds applied.
func (s *LexicalSelector) Rank(ctx context.Context, query string, candidates []memdir.MemoryHeader, k int) ([]Hit, error) {
	ix, err := s.indexFor(ctx, candidates)
	if err != nil {
		return nil, err
	}
	return ix.Search(query, k, nil), nil
}

func (s *LexicalSelector) indexFor(ctx context.Context, candidates []memdir.MemoryHeader) (*lexical.Index, error) {
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
	ix := lexical.NewIndex()
	for i, c := range candidates {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ix.Put(lexical.Document{Key: c.Filename, Name: c.Name, Description: c.Description, Body: s.body(c.Path)})
	}
	s.sig = sig.String()
	s.index = ix
	return ix, nil
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

package transcript

import (
	"context"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/internal/lexical"
)

// Hit is one session found by Search.
type Hit struct {
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
	// Snippet is the matching text: a listing field, or a piece of the
	// message that matched best.
	Snippet string `json:"snippet"`
}

// Search finds sessions for query, best first: sessions whose title,
// prompt, branch or tag contain it (case-insensitive substring, as Claude
// Code's picker) come first, then sessions whose messages match it by the
// lexical index recall uses (stemmed words, BM25), each with the message
// piece that matched. At most limit hits (0: 20).
func Search(ctx context.Context, s Store, query string, limit int) ([]Hit, error) {
	defaults.IfUnset(&limit, 20)
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, nil
	}
	infos, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Hit
	taken := map[string]bool{}
	needle := strings.ToLower(query)
	for _, inf := range infos {
		for _, field := range []string{inf.Title, inf.FirstPrompt, inf.GitBranch, inf.Tag} {
			if field != "" && strings.Contains(strings.ToLower(field), needle) {
				out = append(out, Hit{SessionID: inf.SessionID, Title: inf.Title, Snippet: field})
				taken[inf.SessionID] = true
				break
			}
		}
	}
	// Full text: one document per message, the session's best message wins.
	ix := lexical.NewIndex()
	texts := map[string]string{}
	titles := map[string]string{}
	for _, inf := range infos {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		titles[inf.SessionID] = inf.Title
		entries, err := s.Load(ctx, inf.SessionID)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type != TypeUser && e.Type != TypeAssistant {
				continue
			}
			text := searchText(e)
			if strings.TrimSpace(text) == "" {
				continue
			}
			key := inf.SessionID + "/" + e.UUID
			texts[key] = text
			ix.Put(lexical.Document{Key: key, Body: text})
		}
	}
	for _, h := range ix.Search(query, 10*limit, nil) {
		id, _, _ := strings.Cut(h.Key, "/")
		if taken[id] {
			continue
		}
		taken[id] = true
		out = append(out, Hit{SessionID: id, Title: titles[id], Snippet: snippet(texts[h.Key], query)})
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// snippet cuts text to about 160 characters around the first query word
// it holds.
func snippet(text, query string) string {
	flat := strings.Join(strings.Fields(text), " ")
	lower := strings.ToLower(flat)
	at := -1
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if len(w) < 3 {
			continue
		}
		if i := strings.Index(lower, w[:max(3, len(w)-2)]); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	r := []rune(flat)
	if len(r) <= 160 {
		return flat
	}
	start := 0
	if at > 60 {
		start = len([]rune(flat[:at])) - 60
	}
	end := min(len(r), start+160)
	s := string(r[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(r) {
		s += "…"
	}
	return s
}

// searchText is everything of an entry's message a search can match: its
// text blocks, each tool call's name and input, and each tool result's
// text (what sessions show prints, uncut).
func searchText(e Entry) string {
	var parts []string
	for _, b := range e.Blocks() {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_use":
			parts = append(parts, b.Name+" "+string(b.Input))
		case "tool_result":
			parts = append(parts, b.ResultText())
		}
	}
	return strings.Join(parts, "\n")
}

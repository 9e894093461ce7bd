package transcript

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
)

// Resume texts, as Claude Code writes them.
const (
	continueText   = "Continue from where you left off."
	noResponseText = "No response requested."
)

// largeFileBytes is the size above which a transcript is read from its
// last compact boundary on (metadata before it kept).
const largeFileBytes = 5 << 20

// Interruption says how the resumed conversation ended.
type Interruption string

// The interruption states.
const (
	// NotInterrupted: the last turn was finished (an assistant message,
	// or a meta or compact-summary user message).
	NotInterrupted Interruption = "none"
	// InterruptedPrompt: the last message is a user prompt nobody
	// answered.
	InterruptedPrompt Interruption = "interrupted_prompt"
	// InterruptedTurn: the turn stopped after a tool result; a meta
	// "Continue from where you left off." message was added.
	InterruptedTurn Interruption = "interrupted_turn"
)

// Resumed is a conversation rebuilt for resuming.
type Resumed struct {
	SessionID string
	// Messages is the chain from the root to the newest leaf, parallel
	// tool results and sibling blocks put back, unresolved tool calls and
	// empty assistant messages dropped, and the synthetic messages of
	// resume added (Entry.Synthetic).
	Messages     []ResumedEntry
	Interruption Interruption
	Title, Tag   string
	Cwd          string
	// LeafUUID is the entry a new turn continues from: the leaf the
	// session's newest last-prompt line names (leafUuid), else the last
	// entry of the newest branch. It may be an entry Messages leaves out
	// (an attachment after the last reply).
	LeafUUID string
}

// ResumedEntry is one message of a resumed conversation.
type ResumedEntry struct {
	Entry
	// Synthetic marks a message resume added (the "Continue from where
	// you left off." meta prompt, the "No response requested." reply).
	Synthetic bool
}

// loader is what Resume needs of a store that keeps files: the entries
// to rebuild from, read in bounded memory.
type loader interface {
	loadForResume(ctx context.Context, sessionID string) ([]Entry, error)
}

// loadForResume parses a session's transcript line by line without
// keeping the lines, so memory stays near the size of the parsed
// messages. A transcript over largeFileBytes keeps only what follows its
// last compact boundary (one without a preserved segment), plus the
// metadata before it.
func (s *JSONLStore) loadForResume(ctx context.Context, sessionID string) ([]Entry, error) {
	if !IsSessionID(sessionID) {
		return nil, ErrInvalidSessionID
	}
	if err := s.Flush(ctx); err != nil {
		return nil, err
	}
	f, err := s.fs.Open(s.Path(sessionID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: read session %s: %w", sessionID, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	large := info.Size() > largeFileBytes
	var out []Entry
	lr := newLineReader(f)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, err := lr.next()
		if e, ok := parseLine(line); ok {
			if large && e.Type == TypeSystem && e.Subtype == SubtypeCompactBoundary &&
				(e.CompactMetadata == nil || len(e.CompactMetadata.PreservedSegment) == 0) {
				out = keepMetadata(out) // everything before is summarised by the boundary
			}
			out = append(out, e)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// keepMetadata keeps the metadata entries (titles, tags, summaries).
func keepMetadata(entries []Entry) []Entry {
	out := entries[:0]
	for _, e := range entries {
		switch e.Type {
		case TypeSummary, TypeCustomTitle, TypeAITitle, TypeTag, TypeLastPrompt:
			out = append(out, e)
		}
	}
	return append([]Entry(nil), out...)
}

// lineReader yields lines of any length through one 1 MiB buffer; only a
// line longer than the buffer is copied.
type lineReader struct {
	br   *bufio.Reader
	long []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{br: bufio.NewReaderSize(r, 1<<20)} }

// next returns the next line without its newline; the slice is valid until
// the next call. At the end it returns the last (possibly empty) line with
// io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.long = l.long[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(l.long) > 0 {
				l.long = append(l.long, chunk[:len(chunk)-1]...)
				return l.long, nil
			}
			return chunk[:len(chunk)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			l.long = append(l.long, chunk...)
		default:
			if len(l.long) > 0 {
				return append(l.long, chunk...), err
			}
			return chunk, err
		}
	}
}

// Resume rebuilds a session's conversation from its transcript, as Claude
// Code does when it resumes: the leaf is the one the newest last-prompt
// line names (leafUuid), else the newest user or assistant message nobody
// continues (sidechains left out), and Resumed.LeafUUID the entry to
// continue from; the chain is walked
// through parentUuid to the root; tool results of parallel tool calls and
// the other blocks of one API message are put back; assistant messages
// whose tool calls all lack results, and thinking-only or blank ones, are
// dropped; an interrupted turn gains a "Continue from where you left
// off." meta prompt; a chain that ends on a user message gains a
// synthetic "No response requested." reply. A transcript over 5 MiB is
// read from its last compact boundary on.
func Resume(ctx context.Context, s Store, sessionID string) (*Resumed, error) {
	var entries []Entry
	var err error
	if l, ok := s.(loader); ok {
		entries, err = l.loadForResume(ctx, sessionID)
	} else {
		entries, err = s.Load(ctx, sessionID)
	}
	if err != nil {
		return nil, err
	}
	return rebuild(sessionID, entries), nil
}

// rebuild applies the resume rules to parsed entries.
func rebuild(sessionID string, entries []Entry) *Resumed {
	r := &Resumed{SessionID: sessionID, Interruption: NotInterrupted}
	byUUID := map[string]*Entry{}
	var order []string
	progressParent := map[string]string{}
	for i := range entries {
		e := &entries[i]
		switch {
		case e.Type == TypeProgress && e.UUID != "":
			progressParent[e.UUID] = e.Parent()
		case e.IsMessage():
			if _, ok := byUUID[e.UUID]; !ok {
				order = append(order, e.UUID)
			}
			byUUID[e.UUID] = e // a later line with the same uuid wins
		case e.Type == TypeCustomTitle:
			r.Title = e.CustomTitle
		case e.Type == TypeAITitle && r.Title == "":
			r.Title = e.AITitle
		case e.Type == TypeTag && e.Tag != nil:
			r.Tag = *e.Tag
		}
	}
	// Bridge legacy progress entries: a parent that is a progress entry
	// becomes that entry's nearest non-progress ancestor.
	parentOf := func(e *Entry) string {
		p := e.Parent()
		for seen := 0; p != "" && seen < len(progressParent)+1; seen++ {
			pp, isProgress := progressParent[p]
			if !isProgress {
				break
			}
			p = pp
		}
		return p
	}
	// Terminals: messages no message names as its parent.
	hasChild := map[string]bool{}
	for _, id := range order {
		if p := parentOf(byUUID[id]); p != "" {
			hasChild[p] = true
		}
	}
	// walkUp returns the nearest user or assistant message at or above e.
	walkUp := func(e *Entry) *Entry {
		for steps := 0; e != nil && steps <= len(order); steps++ {
			if (e.Type == TypeUser || e.Type == TypeAssistant) && !e.IsSidechain {
				return e
			}
			e = byUUID[parentOf(e)]
		}
		return nil
	}
	var leaf, tip *Entry
	// The newest last-prompt line that names a leaf of this file decides,
	// as it does for Claude Code.
	for i := len(entries) - 1; i >= 0 && leaf == nil; i-- {
		if e := &entries[i]; e.Type == TypeLastPrompt && e.LeafUUID != "" {
			if t := byUUID[e.LeafUUID]; t != nil && !t.IsSidechain {
				leaf, tip = walkUp(t), t
			}
		}
	}
	named := leaf != nil
	for _, id := range order {
		if named {
			break
		}
		if hasChild[id] {
			continue
		}
		e := walkUp(byUUID[id])
		if e == nil {
			continue
		}
		if leaf == nil || e.Timestamp >= leaf.Timestamp { // ties: the later line
			leaf, tip = e, byUUID[id]
		}
	}
	if leaf == nil {
		return r
	}
	r.Cwd, r.LeafUUID = leaf.Cwd, tip.UUID
	// The chain from the leaf to the root.
	var chain []*Entry
	onChain := map[string]bool{}
	for e := leaf; e != nil && !onChain[e.UUID]; e = byUUID[parentOf(e)] {
		onChain[e.UUID] = true
		chain = append(chain, e)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	chain = recoverParallel(chain, onChain, order, byUUID, parentOf)
	msgs := filterMessages(chain)
	r.Messages, r.Interruption = markInterruption(msgs, sessionID)
	return r
}

// recoverParallel puts back, after the last on-chain entry of each API
// message, its sibling entries that are off the chain and the tool
// results that answer any of them.
func recoverParallel(chain []*Entry, onChain map[string]bool, order []string, byUUID map[string]*Entry, parentOf func(*Entry) string) []*Entry {
	groupOf := func(e *Entry) string {
		if e.Type == TypeAssistant && e.Message != nil && e.Message.ID != "" {
			return e.Message.ID
		}
		return ""
	}
	members := map[string][]string{} // message id → uuids of its entries
	for _, id := range order {
		if g := groupOf(byUUID[id]); g != "" {
			members[g] = append(members[g], id)
		}
	}
	lastOnChain := map[string]int{}
	for i, e := range chain {
		if g := groupOf(e); g != "" {
			lastOnChain[g] = i
		}
	}
	inserts := map[int][]*Entry{}
	for g, at := range lastOnChain {
		group := map[string]bool{}
		var siblings, results []*Entry
		for _, id := range members[g] {
			group[id] = true
			if !onChain[id] && !byUUID[id].IsSidechain {
				siblings = append(siblings, byUUID[id])
			}
		}
		for _, id := range order {
			e := byUUID[id]
			if onChain[id] || e.Type != TypeUser || e.IsSidechain || !e.isToolResult() {
				continue
			}
			if group[parentOf(e)] {
				results = append(results, e)
			}
		}
		byTime := func(s []*Entry) {
			sort.SliceStable(s, func(i, j int) bool { return s[i].Timestamp < s[j].Timestamp })
		}
		byTime(siblings)
		byTime(results)
		inserts[at] = append(siblings, results...)
	}
	if len(inserts) == 0 {
		return chain
	}
	out := make([]*Entry, 0, len(chain))
	placed := map[string]bool{}
	for i, e := range chain {
		if placed[e.UUID] {
			continue
		}
		out = append(out, e)
		placed[e.UUID] = true
		for _, x := range inserts[i] {
			if !placed[x.UUID] {
				out = append(out, x)
				placed[x.UUID] = true
			}
		}
	}
	return out
}

// filterMessages drops assistant messages whose tool calls all lack a
// result, thinking-only ones (unless another entry of the same API message
// has content) and blank ones.
func filterMessages(chain []*Entry) []*Entry {
	heads := make([][]blockHead, len(chain))
	results := map[string]bool{}
	hasContent := map[string]bool{} // API message id → some non-thinking block
	for i, e := range chain {
		heads[i] = e.heads()
		for _, b := range heads[i] {
			if b.Type == "tool_result" {
				results[b.ToolUseID] = true
			}
			if e.Type == TypeAssistant && e.Message != nil && b.Type != "thinking" && b.Type != "redacted_thinking" {
				hasContent[e.Message.ID] = true
			}
		}
	}
	var out []*Entry
	for i, e := range chain {
		switch e.Type {
		case TypeUser, TypeSystem, TypeAttachment:
			out = append(out, e)
		case TypeAssistant:
			blocks := heads[i]
			uses, answered, thinking, blank := 0, 0, 0, true
			for _, b := range blocks {
				switch b.Type {
				case "tool_use":
					uses++
					if results[b.ID] {
						answered++
					}
					blank = false
				case "thinking", "redacted_thinking":
					thinking++
				case "text":
					if !b.Text.blank {
						blank = false
					}
				default:
					blank = false
				}
			}
			switch {
			case uses > 0 && answered == 0:
				continue // every tool call lacks its result
			case len(blocks) > 0 && thinking == len(blocks) && !(e.Message != nil && hasContent[e.Message.ID] && e.Message.ID != ""):
				continue // thinking only
			case thinking < len(blocks) && blank && uses == 0:
				continue // whitespace only
			}
			out = append(out, e)
		}
	}
	return out
}

// markInterruption detects how the conversation ended and adds the
// synthetic messages of resume.
func markInterruption(msgs []*Entry, sessionID string) ([]ResumedEntry, Interruption) {
	out := make([]ResumedEntry, len(msgs))
	for i, e := range msgs {
		out[i] = ResumedEntry{Entry: *e}
	}
	state := NotInterrupted
	var last *Entry
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type != TypeSystem && !(msgs[i].Type == TypeAssistant && msgs[i].IsAPIErrorMessage) {
			last = msgs[i]
			break
		}
	}
	if last == nil {
		return out, state
	}
	lastUUID := out[len(out)-1].UUID
	switch {
	case last.Type == TypeAssistant:
	case last.IsMeta || last.IsCompactSummary:
	case last.isToolResult() || last.Type == TypeAttachment:
		state = InterruptedTurn
		cont := MessageEntry{Type: TypeUser, Parent: lastUUID, IsMeta: true, Time: last.Time(),
			Message: Message{Role: "user", Content: mustJSON([]Block{{Type: "text", Text: continueText}})}}.Encode(Stamp{SessionID: sessionID, Cwd: last.Cwd})
		out = append(out, ResumedEntry{Entry: cont, Synthetic: true})
		lastUUID = cont.UUID
	default:
		state = InterruptedPrompt
	}
	if lastNonSystem(out) == TypeUser {
		reply := MessageEntry{Type: TypeAssistant, Parent: lastUUID, Time: last.Time(),
			Message: Message{ID: "msg_" + strings.ReplaceAll(NewUUID(), "-", ""), Model: "<synthetic>", Role: "assistant",
				Content: mustJSON([]Block{{Type: "text", Text: noResponseText}})}}.Encode(Stamp{SessionID: sessionID, Cwd: last.Cwd})
		out = append(out, ResumedEntry{Entry: reply, Synthetic: true})
	}
	return out, state
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// lastNonSystem returns the type of the last entry that is not a system
// entry.
func lastNonSystem(msgs []ResumedEntry) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type != TypeSystem {
			return msgs[i].Type
		}
	}
	return ""
}

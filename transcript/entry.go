package transcript

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Entry types a transcript holds. User, Assistant, Attachment and System
// entries are messages: they carry a uuid and take part in the parentUuid
// chain. The others are metadata lines without a uuid.
const (
	TypeUser                = "user"
	TypeAssistant           = "assistant"
	TypeAttachment          = "attachment"
	TypeSystem              = "system"
	TypeProgress            = "progress" // legacy: bridged on read, never written
	TypeSummary             = "summary"
	TypeCustomTitle         = "custom-title"
	TypeAITitle             = "ai-title"
	TypeLastPrompt          = "last-prompt"
	TypeTag                 = "tag"
	TypeFileHistorySnapshot = "file-history-snapshot"
	TypeFileHistoryDelta    = "file-history-delta" // one file added to a snapshot (2.1.328)
)

// SubtypeCompactBoundary marks a system entry after which a compacted
// conversation starts again.
const SubtypeCompactBoundary = "compact_boundary"

// Entry is one line of a transcript. The fields are those agentmem reads;
// Raw keeps the line exactly as read (or written), so entries this package
// does not model survive a round trip byte for byte.
type Entry struct {
	Raw json.RawMessage `json:"-"`

	Type              string   `json:"type"`
	UUID              string   `json:"uuid,omitempty"`
	ParentUUID        *string  `json:"parentUuid,omitempty"`
	LogicalParentUUID string   `json:"logicalParentUuid,omitempty"`
	IsSidechain       bool     `json:"isSidechain,omitempty"`
	AgentID           string   `json:"agentId,omitempty"`
	Timestamp         string   `json:"timestamp,omitempty"`
	SessionID         string   `json:"sessionId,omitempty"`
	Cwd               string   `json:"cwd,omitempty"`
	Version           string   `json:"version,omitempty"`
	GitBranch         string   `json:"gitBranch,omitempty"`
	Message           *Message `json:"message,omitempty"`

	Subtype                 string          `json:"subtype,omitempty"`
	Content                 json.RawMessage `json:"content,omitempty"` // system entries
	IsMeta                  bool            `json:"isMeta,omitempty"`
	IsCompactSummary        bool            `json:"isCompactSummary,omitempty"`
	IsAPIErrorMessage       bool            `json:"isApiErrorMessage,omitempty"`
	SourceToolAssistantUUID string          `json:"sourceToolAssistantUUID,omitempty"`
	CompactMetadata         *struct {
		PreservedSegment json.RawMessage `json:"preservedSegment,omitempty"`
	} `json:"compactMetadata,omitempty"`

	// Metadata entries.
	CustomTitle string  `json:"customTitle,omitempty"`
	AITitle     string  `json:"aiTitle,omitempty"`
	LastPrompt  string  `json:"lastPrompt,omitempty"`
	Tag         *string `json:"tag,omitempty"`
	Summary     string  `json:"summary,omitempty"`
	LeafUUID    string  `json:"leafUuid,omitempty"`
}

// Message is the API-shaped message of a user or assistant entry.
type Message struct {
	ID         string          `json:"id,omitempty"`
	Model      string          `json:"model,omitempty"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason,omitempty"`
}

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// IsMessage reports whether the entry takes part in the parentUuid chain.
func (e *Entry) IsMessage() bool {
	switch e.Type {
	case TypeUser, TypeAssistant, TypeAttachment, TypeSystem:
		return e.UUID != ""
	}
	return false
}

// Parent returns the entry's parentUuid ("" for none).
func (e *Entry) Parent() string {
	if e.ParentUUID == nil {
		return ""
	}
	return *e.ParentUUID
}

// Time parses the entry's timestamp (zero when it has none).
func (e *Entry) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
	return t
}

// Blocks returns the message's content as blocks: a string content is one
// text block.
func (e *Entry) Blocks() []Block {
	if e.Message == nil || len(e.Message.Content) == 0 {
		return nil
	}
	c := bytes.TrimSpace(e.Message.Content)
	if len(c) > 0 && c[0] == '"' {
		var s string
		_ = json.Unmarshal(c, &s)
		return []Block{{Type: "text", Text: s}}
	}
	var blocks []Block
	_ = json.Unmarshal(c, &blocks)
	return blocks
}

// Text returns the message's text blocks joined by newlines.
func (e *Entry) Text() string {
	var parts []string
	for _, b := range e.Blocks() {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ResultText returns a tool result block's content as text.
func (b Block) ResultText() string {
	c := bytes.TrimSpace(b.Content)
	if len(c) == 0 {
		return ""
	}
	if c[0] == '"' {
		var s string
		_ = json.Unmarshal(c, &s)
		return s
	}
	var parts []Block
	if json.Unmarshal(c, &parts) == nil {
		var out []string
		for _, p := range parts {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	return string(c)
}

// isToolResult reports whether a user entry carries a tool result.
func (e *Entry) isToolResult() bool {
	return slices.ContainsFunc(e.heads(), func(b blockHead) bool { return b.Type == "tool_result" })
}

// blockHead is what resume needs of a block: its type and ids, and
// whether its text is blank, decoded without copying any text.
type blockHead struct {
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	ToolUseID string    `json:"tool_use_id"`
	Text      blankText `json:"text"`
}

// blankText records whether a JSON string is blank, keeping nothing.
type blankText struct{ blank, set bool }

func (t *blankText) UnmarshalJSON(b []byte) error {
	t.set = true
	if len(b) > 66 {
		return nil // long text is not blank
	}
	var s string
	_ = json.Unmarshal(b, &s)
	t.blank = strings.TrimSpace(s) == ""
	return nil
}

// heads decodes the message's blocks without their text.
func (e *Entry) heads() []blockHead {
	if e.Message == nil || len(e.Message.Content) == 0 {
		return nil
	}
	c := bytes.TrimSpace(e.Message.Content)
	if len(c) > 0 && c[0] == '"' {
		var t blankText
		_ = t.UnmarshalJSON(c)
		return []blockHead{{Type: "text", Text: t}}
	}
	var hs []blockHead
	_ = json.Unmarshal(c, &hs)
	return hs
}

// ParseLine parses one transcript line. A torn or malformed line gives
// ok == false (readers skip it, as Claude Code does).
func ParseLine(line []byte) (Entry, bool) {
	e, ok := parseLine(line)
	if ok {
		e.Raw = append(json.RawMessage(nil), bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\ufeff")))...)
	}
	return e, ok
}

// parseLine parses a line without keeping it (Raw stays nil): what
// resuming needs, at the memory cost of the parsed fields only.
func parseLine(line []byte) (Entry, bool) {
	line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\ufeff")))
	if len(line) == 0 || line[0] != '{' {
		return Entry{}, false
	}
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil || e.Type == "" {
		return Entry{}, false
	}
	return e, true
}

// ParseAll parses a transcript's bytes, skipping torn and malformed lines.
func ParseAll(data []byte) []Entry {
	var out []Entry
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if e, ok := ParseLine(line); ok {
			out = append(out, e)
		}
	}
	return out
}

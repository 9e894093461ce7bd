package transcript

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"
)

// Stamp is what every message entry of a session carries besides the
// message: where and by what it was written.
type Stamp struct {
	SessionID string
	Cwd       string
	GitBranch string
	// Version names the writer (default "agentmem").
	Version string
	// Entrypoint names the host (default "sdk-go").
	Entrypoint string
}

func (s Stamp) withDefaults() Stamp {
	s.Version = cmp.Or(s.Version, "agentmem")
	s.Entrypoint = cmp.Or(s.Entrypoint, "sdk-go")
	return s
}

// NewUUID returns a random version-4 UUID.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// formatTimestamp formats t as transcripts do: UTC, milliseconds, "Z".
func formatTimestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// orderedObject writes a JSON object with keys in the order given.
type orderedObject struct {
	b     bytes.Buffer
	first bool
}

func newObject() *orderedObject {
	o := &orderedObject{first: true}
	o.b.WriteByte('{')
	return o
}

func (o *orderedObject) raw(key string, value []byte) *orderedObject {
	if !o.first {
		o.b.WriteByte(',')
	}
	o.first = false
	k, _ := json.Marshal(key)
	o.b.Write(k)
	o.b.WriteByte(':')
	o.b.Write(value)
	return o
}

func (o *orderedObject) set(key string, value any) *orderedObject {
	v, _ := json.Marshal(value)
	return o.raw(key, v)
}

func (o *orderedObject) done() json.RawMessage {
	o.b.WriteByte('}')
	return json.RawMessage(o.b.Bytes())
}

// MessageEntry is a user or assistant message to write.
type MessageEntry struct {
	Type string // TypeUser or TypeAssistant
	// UUID defaults to a new one; Parent is the previous entry of the
	// chain ("" for the first).
	UUID, Parent string
	Message      Message
	Time         time.Time
	IsMeta       bool
	IsSidechain  bool
	AgentID      string
	// SourceToolAssistantUUID names the assistant entry whose tool call a
	// tool-result user entry answers.
	SourceToolAssistantUUID string
}

// Encode renders the entry as a transcript line, with Claude Code's field
// order: parentUuid first, then isSidechain, type, message, uuid followed
// by timestamp, and the session stamp (userType, entrypoint, cwd,
// sessionId, version, gitBranch).
func (m MessageEntry) Encode(stamp Stamp) Entry {
	stamp = stamp.withDefaults()
	if m.UUID == "" {
		m.UUID = NewUUID()
	}
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	o := newObject()
	if m.Parent == "" {
		o.raw("parentUuid", []byte("null"))
	} else {
		o.set("parentUuid", m.Parent)
	}
	o.set("isSidechain", m.IsSidechain)
	if m.AgentID != "" {
		o.set("agentId", m.AgentID)
	}
	o.set("type", m.Type)
	o.set("message", m.Message)
	if m.IsMeta {
		o.set("isMeta", true)
	}
	o.set("uuid", m.UUID)
	o.set("timestamp", formatTimestamp(m.Time))
	if m.SourceToolAssistantUUID != "" {
		o.set("sourceToolAssistantUUID", m.SourceToolAssistantUUID)
	}
	o.set("userType", "external")
	o.set("entrypoint", stamp.Entrypoint)
	o.set("cwd", stamp.Cwd)
	o.set("sessionId", stamp.SessionID)
	o.set("version", stamp.Version)
	if stamp.GitBranch != "" {
		o.set("gitBranch", stamp.GitBranch)
	}
	e, _ := ParseLine(o.done())
	return e
}

// metadataEntry renders a metadata line of the given type with its one
// field: custom-title (customTitle), ai-title (aiTitle), last-prompt
// (lastPrompt) or tag (tag).
func metadataEntry(typ, sessionID, value string) Entry {
	field := map[string]string{TypeCustomTitle: "customTitle", TypeAITitle: "aiTitle", TypeLastPrompt: "lastPrompt", TypeTag: "tag"}[typ]
	o := newObject().set("type", typ).set(field, value).set("sessionId", sessionID)
	e, _ := ParseLine(o.done())
	return e
}

// lastPromptEntry renders the last-prompt line Claude Code writes after a
// turn: the session's last prompt (left out when "") and leafUUID, the
// entry the next turn continues from, which Claude Code and Resume follow
// when they resume the session.
func lastPromptEntry(sessionID, prompt, leafUUID string) Entry {
	o := newObject().set("type", TypeLastPrompt)
	if prompt != "" {
		o.set("lastPrompt", prompt)
	}
	o.set("leafUuid", leafUUID).set("sessionId", sessionID)
	e, _ := ParseLine(o.done())
	return e
}

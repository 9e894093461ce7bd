package llm

import (
	"encoding/json"
	"strings"
)

// MessagesAfter returns the messages after the one with the given ID: a
// cursor of "everything since". With an empty ID, or one no longer in
// msgs (the conversation was compacted), it returns all of them.
func MessagesAfter(msgs []Message, id string) []Message {
	if id != "" {
		for i, m := range msgs {
			if m.ID == id {
				return msgs[i+1:]
			}
		}
	}
	return msgs
}

// TranscriptOptions tunes RenderTranscript; the zero value means defaults.
type TranscriptOptions struct {
	// MaxBytes keeps only the newest part of the transcript (default
	// 60 KiB), marked as cut.
	MaxBytes int
	// ToolResultBytes bounds each tool result shown (default 500; negative
	// leaves results out).
	ToolResultBytes int
}

// RenderTranscript writes messages as plain text for a background model to
// read: "user: ..." and "assistant: ..." paragraphs, each tool call as
// "[used NAME on TARGET]" (the file, path, command, pattern or URL it
// names), and tool results cut short.
func RenderTranscript(msgs []Message, opts TranscriptOptions) string {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 60 << 10
	}
	if opts.ToolResultBytes == 0 {
		opts.ToolResultBytes = 500
	}
	var parts []string
	for _, m := range msgs {
		var lines []string
		if t := strings.TrimSpace(m.Text()); t != "" {
			lines = append(lines, t)
		}
		for _, b := range m.Content {
			switch {
			case b.Type == BlockToolUse:
				lines = append(lines, describeToolUse(b))
			case b.Type == BlockToolResult && opts.ToolResultBytes > 0 && b.Text != "":
				r := b.Text
				if len(r) > opts.ToolResultBytes {
					r = strings.ToValidUTF8(r[:opts.ToolResultBytes], "") + " ..."
				}
				lines = append(lines, "[result: "+r+"]")
			}
		}
		if len(lines) > 0 {
			parts = append(parts, string(m.Role)+": "+strings.Join(lines, "\n"))
		}
	}
	text := strings.Join(parts, "\n\n")
	if len(text) > opts.MaxBytes {
		cut := len(text) - opts.MaxBytes
		for cut < len(text) && text[cut]&0xC0 == 0x80 {
			cut++
		}
		text = "[earlier messages left out]\n" + text[cut:]
	}
	return text + "\n"
}

func describeToolUse(b Block) string {
	var in map[string]any
	_ = json.Unmarshal(b.Input, &in)
	for _, k := range []string{"file_path", "notebook_path", "path", "command", "pattern", "url"} {
		if v, ok := in[k].(string); ok && v != "" {
			return "[used " + b.ToolName + " on " + v + "]"
		}
	}
	return "[used " + b.ToolName + "]"
}

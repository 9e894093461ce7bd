package memdir

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v2"
)

// Layout is how a memory file's header is written.
type Layout int

const (
	// LayoutCurrent is what Claude Code 2.1.328 writes (the default): the
	// name as a kebab-case slug, and the type under metadata with
	// node_type, originSessionId and modified. In the team directory
	// only the type and modified go under metadata, and the name is kept
	// as given, as Claude Code does there.
	LayoutCurrent Layout = iota
	// Layout2_1_88 is the older header: name, description and a
	// top-level type (kept metadata follows as top-level keys).
	Layout2_1_88
)

// FormatOptions says how FormatMemoryFile writes a header. The zero
// value writes LayoutCurrent, without originSessionId, modified now.
type FormatOptions struct {
	Layout Layout
	// Team reports whether the file is in the team directory.
	Team bool
	// SessionID, when set, is written as originSessionId unless the
	// memory's metadata already has one (the session that first wrote it).
	SessionID string
	// Now stamps modified (default time.Now).
	Now func() time.Time
}

// modifiedFormat is the time format of metadata.modified: ISO-8601 UTC
// with milliseconds.
const modifiedFormat = "2006-01-02T15:04:05.000Z"

var slugOK = regexp.MustCompile(`^[a-z0-9_-]+$`)
var slugRun = regexp.MustCompile(`[^a-z0-9]+`)

// NameSlug is the name Claude Code 2.1.328 writes for a memory: kept when
// it already matches ^[a-z0-9_-]+$, else lower-cased with every run of
// other characters turned into "-" and "-" trimmed from both ends. A name
// with nothing left (no ASCII letters or digits) is kept as it is.
func NameSlug(name string) string {
	if slugOK.MatchString(name) {
		return name
	}
	s := strings.Trim(slugRun.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if s == "" {
		return name
	}
	return s
}

// headerOut is the header FormatMemoryFile writes, in Claude Code's key
// order: name, description, then metadata (or a top-level type in the
// 2.1.88 layout, followed by kept keys).
func headerOut(m Memory, opts FormatOptions) yaml.MapSlice {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	var out yaml.MapSlice
	name := oneLine(m.Name)
	if opts.Layout == LayoutCurrent && !opts.Team && name != "" {
		name = NameSlug(name)
	}
	if name != "" {
		out = append(out, yaml.MapItem{Key: "name", Value: name})
	}
	if d := oneLine(m.Description); d != "" {
		out = append(out, yaml.MapItem{Key: "description", Value: d})
	}
	kept := map[string]string{}
	for k, v := range m.Metadata {
		switch k {
		case "name", "description", "metadata", "type":
			continue // never a metadata key of its own
		}
		if strings.ContainsAny(k, "\n\r") || strings.TrimSpace(v) == "" {
			continue
		}
		kept[k] = oneLine(v)
	}
	if opts.Layout == Layout2_1_88 {
		if m.Type != "" {
			out = append(out, yaml.MapItem{Key: "type", Value: string(m.Type)})
		}
		for _, k := range slices.Sorted(maps.Keys(kept)) {
			out = append(out, yaml.MapItem{Key: k, Value: kept[k]})
		}
		return out
	}
	var meta yaml.MapSlice
	if !opts.Team {
		meta = append(meta, yaml.MapItem{Key: "node_type", Value: "memory"})
		delete(kept, "node_type")
	}
	if m.Type != "" {
		meta = append(meta, yaml.MapItem{Key: "type", Value: string(m.Type)})
	}
	if !opts.Team {
		origin := cmp.Or(kept["originSessionId"], opts.SessionID)
		if origin != "" {
			meta = append(meta, yaml.MapItem{Key: "originSessionId", Value: origin})
		}
		delete(kept, "originSessionId")
	}
	meta = append(meta, yaml.MapItem{Key: "modified", Value: now().UTC().Format(modifiedFormat)})
	delete(kept, "modified")
	for _, k := range slices.Sorted(maps.Keys(kept)) {
		meta = append(meta, yaml.MapItem{Key: k, Value: kept[k]})
	}
	return append(out, yaml.MapItem{Key: "metadata", Value: meta})
}

func encodeHeader(h yaml.MapSlice) ([]byte, error) {
	if len(h) == 0 {
		return nil, nil
	}
	b, err := yaml.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("memdir: encode frontmatter: %w", err)
	}
	// YAML quotes a string that looks like a time; Claude Code writes
	// modified bare, and both read back as the same text.
	return quotedModified.ReplaceAll(b, []byte("$1: $2")), nil
}

var quotedModified = regexp.MustCompile(`(?m)^(  modified): "(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"$`)

package memdir

import (
	"path"
	"regexp"
	"strings"
)

// linkRe matches a [[name]] link; a "|label" after the name is allowed.
var linkRe = regexp.MustCompile(`\[\[([^\[\]\n|]+?)(?:\|[^\[\]\n]*)?\]\]`)

// Links returns the names a memory links to with [[name]], as Claude Code
// 2.1.328 writes them (the name: slug of another memory), in order of
// first appearance, once each. A link to a memory that does not exist yet
// is allowed.
func Links(body string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range linkRe.FindAllStringSubmatch(body, -1) {
		if name := m[1]; !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// LinkKey is how a [[name]] link is matched to a memory: trimmed and
// case-folded, so [[Deploy-Window]] finds the memory named deploy-window.
func LinkKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// LinkNames returns the keys a memory answers to in [[name]] links: its
// name: and its file name without ".md" (rel is its path in the memory
// directory).
func LinkNames(rel, name string) []string {
	keys := []string{LinkKey(strings.TrimSuffix(path.Base(rel), ".md"))}
	if k := LinkKey(name); k != "" && k != keys[0] {
		keys = append(keys, k)
	}
	return keys
}

package memdir

import "regexp"

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

package dream

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// maxConflicts bounds the pairs the prompt names; maxExpired the
// memories past their expires date.
const (
	maxConflicts = 20
	maxExpired   = 50
)

// conflict is two memories that seem to speak of the same thing with
// different values (lexical.SameSubject); Newer is the later one.
type conflict struct {
	Older, Newer memdir.MemoryHeader
}

// conflictingPairs returns the pairs of memories that speak of one subject with
// different values, newest pairs first, at most maxConflicts: the
// consolidation is told to keep the newer value. Only memories sharing a
// name term are compared, so a large directory is not compared pair by
// pair.
func conflictingPairs(headers []memdir.MemoryHeader) []conflict {
	subjects := make([]lexical.Subject, len(headers))
	byTerm := map[string][]int{}
	for i, h := range headers {
		subjects[i] = lexical.SubjectOf(h.Name, h.Description)
		for _, t := range subjects[i].Name {
			byTerm[t] = append(byTerm[t], i)
		}
	}
	var out []conflict
	seen := map[[2]int]bool{}
	for i := range headers { // newest first
		for _, t := range subjects[i].Name {
			for _, j := range byTerm[t] {
				pair := [2]int{min(i, j), max(i, j)}
				if i == j || seen[pair] || !lexical.SameSubject(subjects[i], subjects[j]) {
					continue
				}
				seen[pair] = true
				newer, older := headers[pair[0]], headers[pair[1]]
				if older.ModTime.After(newer.ModTime) {
					newer, older = older, newer
				}
				out = append(out, conflict{Older: older, Newer: newer})
				if len(out) == maxConflicts {
					return out
				}
			}
		}
	}
	return out
}

func systemPrompt(autoDir string) string {
	return "You tidy the long-term memory of an AI coding assistant: the Markdown files in " + autoDir +
		" and their index " + filepath.Join(autoDir, memdir.EntrypointName) + ". You have no shell: your tools read, " +
		"search and list files, write or edit them, and delete a memory with " + DeleteMemoryTool + ", only inside the memory directory. Never put a secret in a memory, " +
		"and never write a secret or anything personal into the team directory " + memdir.TeamMemPath(autoDir) + "."
}

func userPrompt(autoDir, transcriptDir string, sessions []string, conflicts []conflict, expired []memdir.MemoryHeader) string {
	var b strings.Builder
	b.WriteString("Consolidate the memory directory in four phases.\n\n")
	b.WriteString("1. Orient. List " + autoDir + ", read " + memdir.EntrypointName + ", and skim the topic files so you know what " +
		"is already saved. Look at daily logs under logs/ and at session notes if there are any.\n\n")
	b.WriteString("2. Gather what is new. Read the recent daily logs, look for memories that the newer material shows to " +
		"have drifted, and search the sessions below: with SearchSessions (a few specific words; it searches every " +
		"recorded session), or with narrow Grep patterns in their transcript files when a directory is given (they are " +
		"long: do not read them whole).\n\n")
	b.WriteString("3. Consolidate. Merge memories that say the same thing into one file, rewrite relative dates " +
		"(\"yesterday\", \"next week\") as absolute ones, and remove facts that newer information contradicts. Keep the " +
		"header of every file correct (name, description, and the type under metadata:), and the [[name]] links " +
		"between files pointing at the names that remain.\n\n")
	b.WriteString("4. Prune and index. Keep " + memdir.EntrypointName + " under 200 lines and about 25 KB, one line per " +
		"file (\"- [Title](file.md) — hook\"); shorten any entry over about 200 characters and move the detail into " +
		"its topic file; drop pointers to files that no longer exist.\n\n")
	if len(conflicts) > 0 {
		b.WriteString("These memories seem to give different values for the same thing; read each pair, keep the newer " +
			"value unless the older is still true as well, and merge or delete the other:\n")
		for _, c := range conflicts {
			fmt.Fprintf(&b, "- %s (%s) is newer than %s (%s)\n", c.Newer.Filename, c.Newer.ModTime.Format("2006-01-02"),
				c.Older.Filename, c.Older.ModTime.Format("2006-01-02"))
		}
		b.WriteString("\n")
	}
	if len(expired) > 0 {
		b.WriteString("These memories are past the date in their " + memdir.ExpiresKey + " header, so recall no longer shows them; " +
			"delete each file and its index line, unless the sessions show it still holds (then set a later " + memdir.ExpiresKey + " date):\n")
		for _, h := range expired {
			fmt.Fprintf(&b, "- %s (%s: %s)\n", h.Filename, memdir.ExpiresKey, strings.TrimSpace(h.Metadata[memdir.ExpiresKey]))
		}
		b.WriteString("\n")
	}
	if len(sessions) == 0 {
		b.WriteString("No session transcripts need review this time.\n")
	} else {
		b.WriteString("Session transcripts to review (in " + transcriptDir + "):\n")
		for _, s := range sessions {
			b.WriteString("- " + s + "\n")
		}
	}
	b.WriteString("\nWhen you are done, answer with one line saying how many memories you improved.\n")
	return b.String()
}

package dream

import (
	"path/filepath"
	"strings"

	"github.com/agentmem/agentmem/memdir"
)

func systemPrompt(autoDir string) string {
	return "You tidy the long-term memory of an AI coding assistant: the Markdown files in " + autoDir +
		" and their index " + filepath.Join(autoDir, memdir.EntrypointName) + ". You have no shell: your tools read, " +
		"search and list files, and write or edit them only inside the memory directory. Never put a secret in a memory, " +
		"and never write a secret or anything personal into the team directory " + memdir.TeamMemPath(autoDir) + "."
}

func userPrompt(autoDir, transcriptDir string, sessions []string) string {
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

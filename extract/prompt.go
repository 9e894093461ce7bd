package extract

import (
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// maxTranscriptBytes is the default bound of the conversation text put in
// one prompt; the newest part is kept.
const maxTranscriptBytes = 60 << 10

func systemPrompt(autoDir string, team bool) string {
	var b strings.Builder
	b.WriteString("You keep the long-term memory of an AI coding assistant. After each turn of its conversation you read " +
		"what was new and save what will still matter in later sessions, as Markdown files in " + autoDir + ". " +
		"You work only with the file tools given; you cannot talk to the user.\n\n")
	b.WriteString("What is worth saving, by type:\n" +
		"- user: who the user is, their role, what they know and how they like to work.\n" +
		"- feedback: a correction or a confirmed approach: how the assistant should work from now on.\n" +
		"- project: facts about the work that the code and its history do not show: goals, deadlines, decisions and why.\n" +
		"- reference: where to find things outside the project: dashboards, queues, runbooks, channels.\n\n")
	b.WriteString("Never save: secrets or credentials of any kind; anything the code, the configuration or the version history " +
		"already says; the passing state of the current task; a log of what was done. These hold even if the user asked " +
		"to remember it: save only what in it would surprise a newcomer.\n\n")
	b.WriteString("How to save:\n" +
		"1. Look at the memory list you are given. If a file already covers the topic, Read it and update it with Edit " +
		"instead of writing a near-duplicate; correct or delete what the conversation shows to be wrong.\n" +
		"2. Otherwise Write a new topic file whose name says its topic (for example testing_policy.md), starting with " +
		"a header between --- lines: name (a short name in lower-case words joined by hyphens, such as testing-policy), " +
		"description (one specific line), and metadata: with type indented under it. Start a feedback or project " +
		"memory with the rule or fact, then a Why: line and a How to apply: line. Turn relative dates into absolute ones. " +
		"Name a related memory as [[its-name]].\n" +
		"3. Keep " + filepath.Join(autoDir, memdir.EntrypointName) + " as an index: one line per file, " +
		"\"- [Title](file.md) — hook\", under about 150 characters; add or update the line for every file you wrote.\n\n")
	if team {
		b.WriteString("Private or team: " + memdir.TeamMemPath(autoDir) + " is shared with every contributor (it has its own MEMORY.md). " +
			"User memories are always private. Feedback is private unless it is a convention every contributor must follow " +
			"(\"integration tests hit a real database\" goes to the team, \"the user likes short answers\" stays private). " +
			"Never put anything secret or personal in the team directory.\n\n")
	}
	b.WriteString("Be brief and selective: most turns teach nothing durable. When nothing is worth saving, answer " +
		"\"Nothing to save.\" without using any tool. When you are done, answer with one line naming what you saved.")
	return b.String()
}

// transcriptBudget says how much of the conversation the prompt shows:
// the newest maxBytes of it, each tool result cut at toolResultBytes (0:
// tool results left out).
type transcriptBudget struct{ maxBytes, toolResultBytes int }

func userPrompt(autoDir string, headers []memdir.MemoryHeader, fresh []llm.Message, budget transcriptBudget) string {
	var b strings.Builder
	b.WriteString("Memory directory: " + autoDir + "\n\n")
	if len(headers) == 0 {
		b.WriteString("Existing memories: none yet.\n\n")
	} else {
		b.WriteString("Existing memories (newest first):\n" + memdir.FormatManifest(headers) + "\n\n")
	}
	b.WriteString("The new part of the conversation:\n\n")
	defaults.IfUnset(&budget.maxBytes, maxTranscriptBytes)
	results := budget.toolResultBytes
	if results <= 0 {
		results = -1
	}
	b.WriteString(llm.RenderTranscript(fresh, llm.TranscriptOptions{MaxBytes: budget.maxBytes, ToolResultBytes: results}))
	return b.String()
}

package sessionmem

import (
	"strconv"
	"strings"
)

// defaultTemplate is the summary file a session starts with: ten sections,
// each with a one-line description in italics that the update keeps.
const defaultTemplate = `# Session Title
_A short title for what this session is about._

# Current State
_What is being worked on right now, what was just finished, and the immediate next step._

# Task specification
_What the user asked for, with the requirements and constraints they gave._

# Files and Functions
_The files, functions and other code this session touches, and why each matters._

# Workflow
_Commands, scripts and steps that work for this task, in the order they are used._

# Errors & Corrections
_What went wrong, how it was fixed, and approaches that failed and should not be retried._

# Codebase and System Documentation
_How the relevant parts of the system work, as learned during the session._

# Learnings
_Insights worth keeping: what worked well, what to do differently._

# Key results
_Results the user asked for (answers, numbers, decisions), exactly as given._

# Worklog
_A terse, step-by-step log of what was done._
`

// defaultUpdatePrompt asks the model to refresh the summary. {{notesPath}}
// and {{currentNotes}} are replaced, in one pass, by the file's path and
// its current content.
const defaultUpdatePrompt = `You keep the running notes of a coding session in {{notesPath}}. Update them from the new part of the conversation below, using only the Edit tool on that file.

Rules:
- Keep every section heading (lines starting with "# ") and the italic description line under it exactly as they are; write beneath them.
- Replace what is outdated instead of appending to it. "Current State" must say what is happening now.
- Be dense and concrete: file paths, function names, commands, error messages, numbers. No filler.
- Leave a section's body empty when there is nothing to say yet.

Current notes:
<notes>
{{currentNotes}}
</notes>
`

// fill substitutes the two placeholders in one pass, so text inside the
// notes that looks like a placeholder is left alone.
func fill(prompt, notesPath, currentNotes string) string {
	return strings.NewReplacer("{{notesPath}}", notesPath, "{{currentNotes}}", currentNotes).Replace(prompt)
}

// EstimateTokens is the rough token count of text: round(chars / 4).
func EstimateTokens(text string) int {
	n := len([]rune(text))
	return (n + 2) / 4
}

// section is one "# " section of a summary.
type section struct {
	Heading string
	Body    string
}

// parseSections splits a summary at its "# " headings. Text before the
// first heading is dropped.
func parseSections(content string) []section {
	var out []section
	var cur *section
	var body []string
	flush := func() {
		if cur != nil {
			cur.Body = strings.Join(body, "\n")
			out = append(out, *cur)
		}
	}
	for _, line := range strings.Split(content, "\n") {
		if strings.HasPrefix(line, "# ") {
			flush()
			cur = &section{Heading: strings.TrimSpace(line[2:])}
			body = nil
			continue
		}
		if cur != nil {
			body = append(body, line)
		}
	}
	flush()
	return out
}

// defaultMaxSectionChars bounds each section in SectionsForCompaction.
const defaultMaxSectionChars = 8000

// truncatedMarker ends a section cut by SectionsForCompaction.
const truncatedMarker = "[... section truncated ...]"

// SectionsForCompaction returns the summary with each section's body cut at
// the last line boundary within maxChars characters (8,000
// when maxChars <= 0) and marked, for hosts that replace old context with
// the summary when they compact.
func SectionsForCompaction(content string, maxChars int) string {
	if maxChars <= 0 {
		maxChars = defaultMaxSectionChars
	}
	var b strings.Builder
	for i, s := range parseSections(content) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("# " + s.Heading + "\n")
		body := strings.TrimRight(s.Body, "\n")
		if len([]rune(body)) > maxChars {
			var kept []string
			n := 0
			for _, line := range strings.Split(body, "\n") {
				l := len([]rune(line)) + 1
				if n+l > maxChars {
					break
				}
				kept = append(kept, line)
				n += l
			}
			body = strings.Join(kept, "\n") + "\n" + truncatedMarker
		}
		if body != "" {
			b.WriteString(body + "\n")
		}
	}
	return b.String()
}

// condenseReminders names the sections over the per-section limit and says
// whether the whole file is over the total limit.
func condenseReminders(content string, maxSection, maxTotal int) string {
	var lines []string
	for _, s := range parseSections(content) {
		if t := EstimateTokens(s.Body); t > maxSection {
			lines = append(lines, "- The section \""+s.Heading+"\" is about "+strconv.Itoa(t)+" tokens, over its limit of "+strconv.Itoa(maxSection)+": condense it.")
		}
	}
	if t := EstimateTokens(content); t > maxTotal {
		lines = append(lines, "- The notes are about "+strconv.Itoa(t)+" tokens in all, over the limit of "+strconv.Itoa(maxTotal)+": shorten the longest sections, keeping what the next step needs.")
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nThe notes are too long:\n" + strings.Join(lines, "\n") + "\n"
}

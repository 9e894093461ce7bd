package memdir

import (
	"strings"
)

// The prompt text is assembled from the sections below. Each function
// returns one "## " section (or part of one) ending in a blank line, so the
// builders in prompt.go only choose and order them.

func sectionIntro(dir string) string {
	return "You have a persistent memory kept as files in `" + dir + "`. It outlives this conversation: " +
		"what you save now is there in later sessions on this project. " +
		"The directory already exists, so write files into it directly with your file tools; " +
		"do not create it or check that it is there first.\n\n" +
		"Grow this memory over time so that each new conversation starts out knowing who the user is, " +
		"how they want you to work, and the facts behind the work that the code itself does not show.\n\n"
}

// typeGuide describes one memory type: what it holds, when to save it, an
// example, and (for the two-directory prompt) where it belongs.
type typeGuide struct {
	t       MemoryType
	holds   string
	when    string
	example string
	scope   string
}

func typeGuides() []typeGuide {
	return []typeGuide{
		{
			t:       TypeUser,
			holds:   "who the user is: their role, what they know well and what they are new to, how they like to work with you",
			when:    "when you learn something about the person that should shape later answers",
			example: "Backend engineer, new to the frontend: explain React ideas by comparing them with server code.",
			scope:   "Always private: it is about one person.",
		},
		{
			t:       TypeFeedback,
			holds:   "guidance the user gave about how you should work, whether a correction or the approval of an approach that was not obvious",
			when:    "when the user corrects you or confirms a choice you were unsure of, so they never have to say it twice",
			example: "Never mock the database in integration tests. Why: a mocked test hid a broken migration. How to apply: use the compose database in every new integration test.",
			scope: "Private by default. Make it a team memory only when it is a convention of the project that every contributor must follow: " +
				"\"integration tests must hit a real database\" belongs to the team, \"the user likes short answers\" stays private.",
		},
		{
			t:       TypeProject,
			holds:   "facts about the ongoing work that neither the code nor its history shows: goals, deadlines, decisions and their reasons, who owns what",
			when:    "when you learn such a fact; write relative dates as absolute ones",
			example: "Release freeze starts 2026-03-05 for the mobile launch; after that only fixes merge.",
			scope:   "Team when every contributor needs it (a freeze, a decision); private when it concerns only this user's own work.",
		},
		{
			t:       TypeReference,
			holds:   "where information lives outside this project: dashboards, issue queues, runbooks, chat channels",
			when:    "when the user points you to such a place",
			example: "Build failures are triaged in the #ci-alerts channel; the on-call schedule is in the pager tool under 'platform'.",
			scope:   "Team when the place is useful to every contributor; private when it is personal.",
		},
	}
}

func sectionTypes(withScope bool) string {
	var b strings.Builder
	b.WriteString("## Kinds of memory\n\nEvery memory has one of four types:\n\n")
	for _, g := range typeGuides() {
		b.WriteString("- **" + string(g.t) + "**: " + g.holds + ". Save one " + g.when + ". Example: \"" + g.example + "\"")
		if withScope {
			b.WriteString(" " + g.scope)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nA feedback or project memory starts with the rule or the fact itself, then a `Why:` line with the reason " +
		"and a `How to apply:` line that says when and how it changes what you do.\n\n")
	return b.String()
}

func sectionWhatNotToSave(team bool) string {
	s := "## What never to save\n\n" +
		"- Secrets of any kind: passwords, API keys, tokens, private keys, connection strings with credentials.\n" +
		"- Anything you can work out again from the code, the configuration or the version-control history: " +
		"file layouts, function signatures, who changed what, recent commits.\n" +
		"- The passing state of the current task: work in progress, the branch you are on, intermediate results.\n" +
		"- Activity logs: lists of what was done in a session, pull requests merged, tickets closed.\n\n" +
		"These rules stand even when the user asks you to remember something. Asked to save a list of pull requests " +
		"or a summary of activity, keep only what in it was surprising or not obvious, if anything.\n\n"
	if team {
		s += "Team memory is shared with every contributor and synced to a server: never put a secret there, " +
			"and nothing personal about the user.\n\n"
	}
	return s
}

// frontmatterTemplate shows the model the header of a memory file in the
// layout it should write.
func frontmatterTemplate(layout Layout) string {
	if layout == Layout2_1_88 {
		return "```markdown\n" +
			"---\n" +
			"name: <short title>\n" +
			"description: <one specific line that will tell a later reader whether this memory matters>\n" +
			"type: <user, feedback, project or reference>\n" +
			"---\n\n" +
			"<the memory itself>\n" +
			"```\n"
	}
	return "```markdown\n" +
		"---\n" +
		"name: <a short name in lower-case words joined by hyphens, such as testing-policy>\n" +
		"description: <one specific line that will tell a later reader whether this memory matters>\n" +
		"metadata:\n" +
		"  type: <user, feedback, project or reference>\n" +
		"---\n\n" +
		"<the memory itself; name a related memory as [[its-name]]>\n" +
		"```\n"
}

// sectionLinks explains [[name]] links (the current layout only).
func sectionLinks(layout Layout) string {
	if layout == Layout2_1_88 {
		return ""
	}
	return "To connect memories, write `[[name]]` in a body, with the `name:` of the other memory. Link whenever a " +
		"memory builds on, qualifies or contradicts another. A link to a memory nobody has written yet is fine: it " +
		"marks one worth writing.\n\n"
}

func sectionHowToSave(indexes []string, layout Layout) string {
	var b strings.Builder
	b.WriteString("## How to save a memory\n\nSaving is two steps:\n\n")
	b.WriteString("1. Write the memory into a topic file of its own (for example `testing_policy.md`) that begins with this frontmatter:\n\n")
	b.WriteString(indent(frontmatterTemplate(layout), "   "))
	b.WriteString("\n2. Add a one-line pointer to that file in the index, ")
	b.WriteString(joinOr(indexes))
	b.WriteString(": `- [Title](file.md) — one-line hook`. The index only points; keep each entry under about 150 characters " +
		"and never write memory content into it.\n\n")
	b.WriteString(sectionLinks(layout))
	b.WriteString(sectionUpkeep())
	return b.String()
}

func sectionHowToSaveNoIndex(layout Layout) string {
	return "## How to save a memory\n\n" +
		"Write each memory into a topic file of its own (for example `testing_policy.md`) that begins with this frontmatter:\n\n" +
		frontmatterTemplate(layout) + "\n" +
		"There is no index file to maintain: to find memories, list or search the directory.\n\n" +
		sectionLinks(layout) +
		sectionUpkeep()
}

func sectionUpkeep() string {
	return "Before you create a file, look for one that already covers the topic and update it instead of adding a near-copy. " +
		"When a memory turns out to be wrong, correct it or delete it.\n\n"
}

func sectionWhenToUse() string {
	return "## When to use memory\n\n" +
		"- Look at your memories when they seem relevant to the task, and whenever the user mentions earlier work or asks you to recall something.\n" +
		"- If the user tells you to ignore memory or not to use it, act as if the index were empty: " +
		"do not quote it, compare against it or mention what it holds.\n\n"
}

func sectionBeforeRecommending() string {
	return "## Before recommending from memory\n\n" +
		"A memory records what was observed at one moment; it is not a live view. Before you act on a memory, " +
		"or recommend something because of one, and above all when it names files, functions or flags, check it against " +
		"how things are now: open the file, search for the function. When the memory and the present disagree, " +
		"trust the present, then correct or delete the stale memory.\n\n"
}

func sectionMemoryVsPlans() string {
	return "## Memory, plans and task lists\n\n" +
		"Memory is for what will still matter in a later conversation. Track the steps of the current task in a plan " +
		"or a task list instead: they end with the task, memory does not.\n\n"
}

func sectionGuidelines(extra []string) string {
	var lines []string
	for _, g := range extra {
		if g = strings.TrimSpace(g); g != "" {
			lines = append(lines, "- "+g)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "## More guidelines\n\n" + strings.Join(lines, "\n") + "\n\n"
}

func indent(s, prefix string) string {
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range ls {
		if l != "" {
			ls[i] = prefix + l
		}
	}
	return strings.Join(ls, "\n") + "\n"
}

func joinOr(items []string) string {
	quoted := make([]string, len(items))
	for i, it := range items {
		quoted[i] = "`" + it + "`"
	}
	switch len(quoted) {
	case 0:
		return ""
	case 1:
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

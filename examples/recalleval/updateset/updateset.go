// Package updateset generates a second labelled recall set, unlike
// convset in who speaks, what about and how things change: one user per
// memory directory works with a personal assistant over months; the
// assistant keeps typed memories (user, project, feedback, reference)
// named as an extractor names them; and facts change (a new employer, a
// move, a deadline that slips), each change saved as a new memory beside
// the old one, as extraction does.
//
// Questions ask for the current value (they need the newest memory of
// the chain, not the one it replaced), for the value before, for facts
// that never changed, and for a whole chain ("every city ... lived in").
// They are worded the way people ask, with other words than the memories
// use ("employed" for "works at", "spouse" for "partner").
//
// It is deterministic for a seed. It is for evaluation only: nothing in
// recall is tuned on it.
package updateset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Memory is one memory file.
type Memory struct {
	Dir         string // the user's directory ("user03")
	File        string // relative to Dir
	Type        string // user, project, feedback, reference
	Name        string
	Description string
	Body        string
	Date        time.Time
	Topic       string // the fact it states; a chain's memories share it
}

// Query is one question and the memories (Dir/File) it needs.
type Query struct {
	Dir   string
	Query string
	Needs []string
	Kind  string // current, previous, single, chain
}

// Set is a generated set.
type Set struct {
	Memories []Memory
	Queries  []Query
}

// Options sizes a set; zero values mean the defaults.
type Options struct {
	Users int // default 12
	Seed  uint64
}

var users = []string{"Ingrid", "Tomasz", "Aiko", "Rafael", "Zanele", "Henrik", "Leilani", "Dmitri", "Fatima", "Keanu",
	"Solveig", "Mateo", "Yusuf", "Bronwyn", "Kenji"}

var (
	companies = []string{"Northwind Logistics", "Helix Biotech", "Quarry Analytics", "Bluefin Insurance", "Orchard Health",
		"Tessera Games", "Lumen Energy", "Cobalt Robotics", "Juniper Media", "Atlas Freight"}
	roles    = []string{"data engineer", "product manager", "site reliability engineer", "UX researcher", "backend developer", "security analyst"}
	cities   = []string{"Rotterdam", "Wellington", "Montreal", "Edinburgh", "Valencia", "Osaka", "Cape Town", "Minneapolis", "Tallinn", "Porto"}
	managers = []string{"Greta Lindqvist", "Samuel Osei", "Priyanka Rao", "Marco Bellini", "Hana Novak", "Diego Fuentes", "Ruth Adeyemi"}
	projects = []string{"Falcon", "Nimbus", "Sequoia", "Beacon", "Tundra", "Mosaic", "Harbor"}
	months   = []string{"March", "April", "May", "June", "September", "October", "November"}
	times    = []string{"9:00", "9:30", "10:00", "10:15", "11:00", "13:30", "16:00"}
	editors  = []string{"Neovim", "VS Code", "IntelliJ IDEA", "Emacs", "Zed", "Sublime Text"}
	cars     = []string{"Subaru Outback", "Tesla Model 3", "Volvo V60", "Honda Civic", "Kia Niro", "Mazda CX-5"}
	diets    = []string{"vegetarian", "vegan", "pescatarian", "gluten-free", "dairy-free"}
	gyms     = []string{"half marathon", "triathlon", "100 km cycling sportive", "ocean swim", "trail ultramarathon"}
	clouds   = []string{"AWS", "Google Cloud", "Azure", "Hetzner", "Fly.io"}
	dbs      = []string{"PostgreSQL", "MySQL", "CockroachDB", "DynamoDB", "ClickHouse"}
	kids     = []string{"Mira", "Oskar", "Lena", "Theo", "Ines", "Noa", "Felix"}
	schools  = []string{"Riverside Montessori", "Oakwood Primary", "the International School", "Hillcrest Elementary", "St. Brigid's"}
	partJobs = []string{"veterinarian", "architect", "pilot", "pharmacist", "journalist", "carpenter", "marine biologist"}
	partners = []string{"Jonas", "Amara", "Luis", "Freya", "Kwame", "Elif", "Sven"}
	allergy  = []string{"peanuts", "shellfish", "penicillin", "bee stings", "latex", "cats"}
	instrs   = []string{"bass guitar", "accordion", "harmonica", "banjo", "clarinet", "mandolin"}
	pets     = []string{"a greyhound named Pixel", "two ferrets", "a tortoise called Gus", "a cockatiel", "a border collie named Juno"}
	langs    = []string{"Go", "Rust", "TypeScript", "Kotlin", "Python", "Elixir"}
	reviews  = []string{"small pull requests under 300 lines", "a test with every bug fix", "no force-pushes to shared branches", "squash merges only"}
	books    = []string{"Designing Data-Intensive Applications", "The Pragmatic Programmer", "A Philosophy of Software Design", "Team Topologies"}
)

// chain is a fact that changes: each value in turn, the memory's words
// for the first value and for a change, and how people ask.
type chain struct {
	topic    string   // a slug for names
	typ      string   // memory type
	first    string   // fmt with the value
	change   string   // fmt with the old and the new value
	current  []string // questions for the current value
	previous string   // fmt with the newer value: what came before it
	all      string   // every value so far ("" when it makes no sense)
	values   []string
}

// fact is a thing that does not change.
type fact struct {
	topic     string
	typ       string
	text      string
	questions []string
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// distinct picks n different values.
func distinct(r *rand.Rand, xs []string, n int) []string {
	p := r.Perm(len(xs))
	out := make([]string, n)
	for i := range out {
		out[i] = xs[p[i%len(p)]]
	}
	return out
}

func chains(r *rand.Rand, u string) []chain {
	n := func() int { return 2 + r.IntN(2) } // two or three values
	project := pick(r, projects)
	kid := pick(r, kids)
	return []chain{
		{"employer", "user", "%s works at %s.", "%s left %s and joined %s.",
			[]string{"Where is %s employed these days?", "Which company does %s work for now?"},
			"Which company did %s work for before %s?", "Which companies has %s worked for?", distinct(r, companies, n())},
		{"home-city", "user", "%s lives in %s.", "%s moved from %s to %s.",
			[]string{"What city is %s based in now?", "Where does %s currently live?"},
			"Where did %s live before %s?", "Which cities has %s lived in?", distinct(r, cities, n())},
		{"manager", "user", "%s reports to %s.", "After a reorg %s no longer reports to %s but to %s.",
			[]string{"Who is %s's boss at the moment?", "Who does %s report to today?"},
			"Who was %s's manager before %s?", "", distinct(r, managers, n())},
		{"role", "user", "%s is a %s.", "%s changed roles from %s to %s.",
			[]string{"What is %s's current position?", "What does %s do at work now?"},
			"What was %s's job title before %s?", "", distinct(r, roles, n())},
		{project + "-launch", "project", "The " + project + " launch for %s's team is planned for %s.", "The " + project + " launch for %s's team slipped from %s to %s.",
			[]string{"When is " + project + " going live for %s's team?", "What is the release date of " + project + " for %s?"},
			"When was " + project + " due for %s before the date moved to %s?", "", distinct(r, months, n())},
		{"standup", "project", "%s's team holds its daily standup at %s.", "%s's team moved the daily standup from %s to %s.",
			[]string{"What time is %s's morning sync meeting?", "When does %s's team meet each day?"},
			"When was %s's standup before it moved to %s?", "", distinct(r, times, n())},
		{"editor", "feedback", "%s writes code in %s and wants examples that fit it.", "%s switched editors from %s to %s.",
			[]string{"Which IDE does %s prefer?", "What editor should snippets for %s target?"},
			"What editor did %s use before %s?", "", distinct(r, editors, n())},
		{"car", "user", "%s drives a %s.", "%s sold the %s and bought a %s.",
			[]string{"What vehicle does %s own at the moment?", "Which automobile is %s driving now?"},
			"Which car did %s have before the %s?", "Which cars has %s owned?", distinct(r, cars, n())},
		{"diet", "user", "%s eats a %s diet.", "%s went from a %s diet to a %s one.",
			[]string{"What are %s's dietary restrictions?", "What food should I suggest to %s?"},
			"What did %s eat before going %s?", "", distinct(r, diets, n())},
		{"training", "user", "%s is training for a %s.", "%s gave up on the %s and is training for a %s instead.",
			[]string{"What race is %s preparing for?", "Which endurance event is %s getting ready for?"},
			"What was %s training for before the %s?", "", distinct(r, gyms, n())},
		{"cloud", "project", "%s's services run on %s.", "%s's team migrated its services from %s to %s.",
			[]string{"Which cloud provider hosts %s's services?", "Where is %s's infrastructure deployed today?"},
			"Which provider did %s's services use before %s?", "", distinct(r, clouds, n())},
		{"database", "project", "%s's main datastore is %s.", "%s's team replaced %s with %s as the main datastore.",
			[]string{"What database does %s's team rely on?", "Which storage engine backs %s's product?"},
			"What datastore did %s use before %s?", "", distinct(r, dbs, n())},
		{kid + "-school", "user", "%s's kid " + kid + " goes to %s.", "%s's kid " + kid + " changed schools from %s to %s.",
			[]string{"Which school does " + kid + " attend now (%s's child)?", "Where is %s's youngster " + kid + " enrolled?"},
			"Where did " + kid + " (%s's child) study before %s?", "", distinct(r, schools, n())},
	}
}

func facts(r *rand.Rand) []fact {
	partner, job := pick(r, partners), pick(r, partJobs)
	return []fact{
		{"partner", "user", "{U}'s partner " + partner + " works as a " + job + ".",
			[]string{"What does {U}'s spouse do for a living?", "What is " + partner + "'s occupation?"}},
		{"allergy", "user", "{U} is allergic to " + pick(r, allergy) + ".",
			[]string{"Does {U} have any allergies?", "What should {U} avoid because of an allergic reaction?"}},
		{"instrument", "user", "{U} plays the " + pick(r, instrs) + " in a weekend band.",
			[]string{"What musical instrument does {U} play?"}},
		{"pets", "user", "{U} has " + pick(r, pets) + ".",
			[]string{"What animals live with {U}?", "Does {U} own any pets?"}},
		{"language", "feedback", "{U} prefers answers with code in " + pick(r, langs) + ".",
			[]string{"Which programming language should code samples for {U} use?"}},
		{"code-review", "feedback", "{U}'s team insists on " + pick(r, reviews) + ".",
			[]string{"What are the review rules on {U}'s team?", "What does {U}'s team expect from a PR?"}},
		{"reading", "reference", "{U} keeps notes on the book '" + pick(r, books) + "' in the team wiki.",
			[]string{"Which engineering book is {U} reading notes on?"}},
	}
}

// fillers are memories no question needs.
var fillers = []string{
	"{U} asked for shorter answers without a summary at the end.",
	"{U} likes tables for comparisons.",
	"{U} is on call every third week.",
	"{U} keeps meeting notes in a private folder.",
	"{U} prefers British spelling in documents.",
	"{U} wants commit messages in the imperative mood.",
	"{U} uses a split keyboard and dislikes long key chords.",
	"{U} reads the weekly incident review every Monday.",
	"{U} blocks focus time on Wednesday mornings.",
	"{U} asked to be reminded to stretch during long sessions.",
}

// Generate builds a set.
func Generate(o Options) *Set {
	if o.Users <= 0 {
		o.Users = 12
	}
	r := rand.New(rand.NewPCG(o.Seed, 0xa11ce))
	set := &Set{}
	for i := 0; i < o.Users; i++ {
		generateUser(r, i, set)
	}
	return set
}

// nameFor is how an extractor might name the k-th memory of a topic: the
// topic, the topic with a word for a change, or another word altogether.
func nameFor(r *rand.Rand, topic string, k int) string {
	if k == 0 {
		return topic
	}
	switch r.IntN(4) {
	case 0:
		return topic + "-change"
	case 1:
		return "new-" + topic
	case 2:
		return topic + "-update-" + fmt.Sprint(k)
	default:
		return []string{"latest-news", "life-update", "switch", "recent-change"}[r.IntN(4)] + "-" + fmt.Sprint(k)
	}
}

func generateUser(r *rand.Rand, i int, set *Set) {
	dir := fmt.Sprintf("user%02d", i+1)
	u := users[i%len(users)]
	start := time.Date(2025, time.Month(1+r.IntN(6)), 1+r.IntN(27), 9, 0, 0, 0, time.UTC)
	day := 0
	at := func() time.Time { day += 3 + r.IntN(9); return start.AddDate(0, 0, day) }
	used := map[string]bool{}
	add := func(topic, typ, name, desc string, when time.Time) string {
		file := name + ".md"
		for k := 2; used[file]; k++ {
			file = fmt.Sprintf("%s-%d.md", name, k)
		}
		used[file] = true
		set.Memories = append(set.Memories, Memory{Dir: dir, File: file, Type: typ, Name: name, Description: desc,
			Body: desc + " (noted " + when.Format("2 January 2006") + ")", Date: when, Topic: topic})
		return dir + "/" + file
	}
	ask := func(q string, kind string, needs ...string) {
		set.Queries = append(set.Queries, Query{Dir: dir, Query: q, Needs: needs, Kind: kind})
	}

	// The chains unfold over time, interleaved: each step the next value
	// of a random chain that has one left, at its own date.
	cs := chains(r, u)
	total := 0
	for _, ch := range cs {
		total += len(ch.values)
	}
	next := make([]int, len(cs))
	files := make([][]string, len(cs))
	for range total {
		var open []int
		for c := range cs {
			if next[c] < len(cs[c].values) {
				open = append(open, c)
			}
		}
		c := open[r.IntN(len(open))]
		k := next[c]
		next[c]++
		ch := cs[c]
		desc := fmt.Sprintf(ch.first, u, ch.values[0])
		if k > 0 {
			desc = fmt.Sprintf(ch.change, u, ch.values[k-1], ch.values[k])
		}
		files[c] = append(files[c], add(ch.topic, ch.typ, nameFor(r, ch.topic, k), desc, at()))
	}
	fs := facts(r)
	var factFiles []string
	for _, f := range fs {
		factFiles = append(factFiles, add(f.topic, f.typ, f.topic, strings.ReplaceAll(f.text, "{U}", u), at()))
	}
	for _, f := range fillers {
		add("filler", "feedback", strings.ToLower(strings.Join(strings.Fields(f)[1:4], "-")), strings.ReplaceAll(f, "{U}", u), at())
	}

	// Questions.
	for c, ch := range cs {
		last := len(ch.values) - 1
		ask(fmt.Sprintf(pick(r, ch.current), u), "current", files[c][last])
		if r.IntN(2) == 0 {
			// The latest change names the value before it too.
			ask(fmt.Sprintf(ch.previous, u, ch.values[last]), "previous", files[c][last])
		}
		if ch.all != "" && r.IntN(2) == 0 {
			ask(fmt.Sprintf(ch.all, u), "chain", files[c]...)
		}
	}
	for k, f := range fs {
		for _, q := range f.questions {
			if r.IntN(3) > 0 {
				ask(strings.ReplaceAll(q, "{U}", u), "single", factFiles[k])
			}
		}
	}
}

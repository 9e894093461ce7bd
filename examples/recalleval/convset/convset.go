// Package convset generates a labelled recall set from long
// conversations: pairs of people talk over many sessions; each session
// leaves observation memories about each speaker ("Caroline s4 fact 1"),
// and questions asked later need one or two of them. It is deterministic
// for a seed, so a set can be regenerated rather than stored.
//
// The questions are written the way people ask them, not the way the
// memories state things: other word forms ("adopt" for "adopted"), some
// synonyms, questions about when something happened (the memory holds the
// date, the question does not), about what one speaker did for the other,
// and about topics both speakers and several sessions share, so the right
// memory has look-alikes around it.
//
// The set is for evaluation only: the lexical selector's thresholds are
// tuned on testdata/recall/shop.json, never on this set.
package convset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Memory is one observation memory.
type Memory struct {
	Dir         string // the conversation's directory ("conv03")
	File        string // relative to Dir ("caroline_s04_f1.md")
	Name        string
	Description string
	Body        string
	Date        time.Time
}

// Query is one question and the memories (Dir/File) it needs.
type Query struct {
	Dir   string
	Query string
	Needs []string
	Kind  string // single, temporal, other, multi
}

// Set is a generated set.
type Set struct {
	Memories []Memory
	Queries  []Query
}

// Options sizes a set; zero values mean the defaults.
type Options struct {
	Conversations int // default 10
	Seed          uint64
}

var people = []string{"Caroline", "Melanie", "Jon", "Gina", "Andrew", "Audrey", "Nate", "Joanna", "Tim", "John",
	"Maria", "Evan", "Sam", "Calvin", "Dave", "Deborah", "James", "Jolene", "Priya", "Omar"}

// slot values.
var (
	pets        = []string{"cat", "dog", "rabbit", "parrot", "hamster", "turtle", "guinea pig"}
	petNames    = []string{"Luna", "Milo", "Oliver", "Bella", "Max", "Coco", "Pepper", "Ziggy", "Nala", "Biscuit", "Mochi", "Ollie"}
	instruments = []string{"piano", "violin", "guitar", "cello", "ukulele", "drums", "saxophone", "flute"}
	cities      = []string{"Denver", "Lisbon", "Chicago", "Kyoto", "Boston", "Austin", "Seattle", "Toronto", "Madrid", "Portland", "Dublin", "Nashville"}
	relatives   = []string{"sister", "brother", "mother", "father", "grandmother", "cousin", "aunt", "uncle", "son", "daughter"}
	foods       = []string{"lasagna", "paella", "banana bread", "chicken curry", "apple pie", "dumplings", "tacos", "ramen", "pumpkin soup"}
	books       = []string{"The Midnight Library", "Educated", "Becoming", "Dune", "Circe", "The Alchemist", "Atomic Habits", "Little Women", "Pachinko"}
	jobs        = []struct{ job, place string }{{"nurse", "a children's hospital"}, {"graphic designer", "a marketing agency"}, {"software engineer", "a fintech startup"}, {"teacher", "an elementary school"}, {"counselor", "an LGBTQ support center"}, {"chef", "an Italian restaurant"}, {"park ranger", "the state park"}, {"librarian", "the public library"}}
	sports      = []string{"volleyball", "soccer", "tennis", "basketball", "softball", "pickleball", "rock climbing", "swimming"}
	days        = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Saturday", "Sunday"}
	vehicles    = []string{"car", "motorcycle", "camper van", "electric bike", "sailboat"}
	bands       = []string{"Coldplay", "Taylor Swift", "Arctic Monkeys", "Hozier", "Imagine Dragons", "Florence and the Machine", "the Lumineers"}
	plants      = []string{"tomatoes", "sunflowers", "roses", "basil", "strawberries", "peppers", "lavender"}
	languages   = []string{"Spanish", "Japanese", "French", "Italian", "Korean", "German", "Portuguese"}
	fields      = []string{"psychology", "social work", "nursing", "counseling", "art therapy", "marine biology", "architecture"}
	places      = []string{"Yosemite", "the Grand Canyon", "Lake Tahoe", "the Rocky Mountains", "Zion", "the Smoky Mountains", "Big Sur"}
	animals     = []string{"a bear", "a family of deer", "a bald eagle", "a moose", "a fox", "wild horses", "a mountain goat"}
	subjects    = []string{"sunset over the lake", "portrait of her grandmother", "field of sunflowers", "city skyline", "bowl of lemons", "stormy sea"}
	causes      = []string{"an animal shelter", "a food bank", "a homeless shelter", "a youth center", "a community garden", "a hospice"}
	illnesses   = []string{"knee", "hip", "back", "heart", "shoulder"}
	topics      = []string{"transgender rights", "mental health", "climate change", "adoption", "financial literacy", "women in tech"}
	items       = []string{"camera", "telescope", "drone", "sketchbook", "easel", "pottery wheel"}
	injuries    = []struct{ part, activity string }{{"ankle", "hiking"}, {"wrist", "skateboarding"}, {"knee", "running"}, {"shoulder", "swimming"}, {"back", "moving furniture"}}
	schools     = []string{"Stanford", "the University of Michigan", "NYU", "Ohio State", "Berkeley", "Georgia Tech"}
	fillers     = []string{
		"%s said the week had been busy but good.", "%s mentioned feeling tired after a long day.",
		"%s laughed about the weather being unpredictable lately.", "%s said it was nice to catch up again.",
		"%s shared that things at home were calm.", "%s talked about wanting more free time.",
		"%s said she appreciated the support from friends.", "%s was in a cheerful mood and joked a lot.",
	}
)

// fact is one template: the observation, and questions (with how they ask
// it) that need it. {P} is the speaker, {O} the other speaker.
type fact struct {
	obs       string
	questions []question
}

type question struct {
	text string
	kind string
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// facts builds the fact templates with slots filled for one speaker.
func facts(r *rand.Rand) []fact {
	pet := pick(r, pets)
	n := 1 + r.IntN(3)
	petWord := pet
	if n > 1 {
		petWord = pet + "s"
		if strings.HasSuffix(pet, "y") {
			petWord = pet[:len(pet)-1] + "ies"
		}
	}
	names := pick(r, petNames)
	if n > 1 {
		names += " and " + pick(r, petNames)
	}
	inst, city, city2, rel := pick(r, instruments), pick(r, cities), pick(r, cities), pick(r, relatives)
	food, book, job, sport, day := pick(r, foods), pick(r, books), pick(r, jobs), pick(r, sports), pick(r, days)
	veh, band, plant, lang, field := pick(r, vehicles), pick(r, bands), pick(r, plants), pick(r, languages), pick(r, fields)
	place, animal, subj, cause, ill := pick(r, places), pick(r, animals), pick(r, subjects), pick(r, causes), pick(r, illnesses)
	topic, item, inj, school := pick(r, topics), pick(r, items), pick(r, injuries), pick(r, schools)
	count := []string{"one", "two", "three"}[n-1]
	return []fact{
		{fmt.Sprintf("{P} adopted %s %s named %s from a local shelter.", count, petWord, names), []question{
			{"How many " + pet + "s does {P} have?", "single"},
			{"What are the names of {P}'s pets?", "single"},
			{"When did {P} adopt a " + pet + "?", "temporal"}}},
		{fmt.Sprintf("{P} started taking %s lessons to unwind after work.", inst), []question{
			{"What instrument is {P} learning to play?", "single"},
			{"When did {P} begin her " + inst + " lessons?", "temporal"}}},
		{fmt.Sprintf("{P} is researching %s programs because she wants to go back to school.", field), []question{
			{"What field is {P} considering studying?", "single"},
			{"What degree has {P} been looking into?", "single"}}},
		{fmt.Sprintf("{P} went camping at %s with her %s and they spotted %s.", place, rel, animal), []question{
			{"What wildlife did {P} see on her camping trip?", "single"},
			{"Who went camping with {P}?", "single"},
			{"When did {P} go camping at " + place + "?", "temporal"}}},
		{fmt.Sprintf("{P} painted a %s and gave the painting to {O} as a gift.", subj), []question{
			{"What did {P} paint for {O}?", "other"},
			{"What gift did {O} receive from {P}?", "other"}}},
		{fmt.Sprintf("{O} recommended the book '%s' to {P}, who loved it.", book), []question{
			{"Which book did {O} suggest {P} read?", "other"},
			{"What novel recommendation did {P} get from {O}?", "other"}}},
		{fmt.Sprintf("{P} has been volunteering at %s every weekend.", cause), []question{
			{"Where does {P} volunteer?", "single"},
			{"When did {P} start volunteering?", "temporal"}}},
		{fmt.Sprintf("{P} got a new job as a %s at %s.", job.job, job.place), []question{
			{"What is {P}'s new job?", "single"},
			{"Where is {P} working now?", "single"},
			{"When did {P} get hired as a " + job.job + "?", "temporal"}}},
		{fmt.Sprintf("{P} is planning a trip to %s with her %s next spring.", city, rel), []question{
			{"Where does {P} plan to travel?", "single"},
			{"Who is {P} traveling with?", "single"}}},
		{fmt.Sprintf("{P}'s %s is recovering from %s surgery.", rel, ill), []question{
			{"Which family member of {P}'s had an operation?", "single"},
			{"What kind of surgery did {P}'s " + rel + " have?", "single"}}},
		{fmt.Sprintf("{P} cooked %s for her %s's birthday party.", food, rel), []question{
			{"What dish did {P} make for the birthday?", "single"},
			{"Whose birthday did {P} cook for?", "single"}}},
		{fmt.Sprintf("{P} joined a %s league and plays every %s evening.", sport, day), []question{
			{"What sport does {P} play?", "single"},
			{"Which day does {P} have games?", "single"}}},
		{fmt.Sprintf("{P} is saving money to buy a %s.", veh), []question{
			{"What is {P} saving up for?", "single"}}},
		{fmt.Sprintf("{P} went to a %s concert in %s and sang along all night.", band, city), []question{
			{"Which band did {P} see live?", "single"},
			{"When did {P} attend the " + band + " concert?", "temporal"}}},
		{fmt.Sprintf("{P} moved from %s to %s a few years ago for a fresh start.", city, city2), []question{
			{"Where did {P} live before she moved?", "single"},
			{"Which city did {P} relocate to?", "single"}}},
		{fmt.Sprintf("{P} planted %s in her backyard garden.", plant), []question{
			{"What is {P} growing in the garden?", "single"},
			{"When did {P} plant " + plant + "?", "temporal"}}},
		{fmt.Sprintf("{P} gave a talk about %s at a community meeting and felt nervous beforehand.", topic), []question{
			{"What topic did {P} speak about?", "single"},
			{"When did {P} give a presentation?", "temporal"}}},
		{fmt.Sprintf("{P}'s %s graduated from %s.", rel, school), []question{
			{"Where did {P}'s " + rel + " graduate from?", "single"},
			{"Which university did {P}'s " + rel + " attend?", "single"}}},
		{fmt.Sprintf("{P} bought a %s to take up a new creative hobby.", item), []question{
			{"What did {P} buy for her new hobby?", "single"},
			{"Why did {P} purchase a " + item + "?", "single"}}},
		{fmt.Sprintf("{P} is learning %s with an app every morning.", lang), []question{
			{"Which language is {P} studying?", "single"},
			{"How is {P} learning " + lang + "?", "single"}}},
		{fmt.Sprintf("{P} hurt her %s while %s and had to rest for weeks.", inj.part, inj.activity), []question{
			{"How did {P} get injured?", "single"},
			{"When did {P} injure her " + inj.part + "?", "temporal"}}},
		{fmt.Sprintf("{O} helped {P} move into her new apartment in %s.", city2), []question{
			{"Who helped {P} with the move?", "other"},
			{"What did {O} help {P} with?", "other"}}},
		{fmt.Sprintf("{P} and {O} went to a pottery class together and made %s.", pick(r, []string{"mugs", "bowls", "vases", "plates"})), []question{
			{"What did {P} and {O} make at the pottery class?", "other"},
			{"What class did {P} take with {O}?", "other"}}},
	}
}

// Generate builds a set.
func Generate(o Options) *Set {
	if o.Conversations <= 0 {
		o.Conversations = 10
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	set := &Set{}
	for c := 0; c < o.Conversations; c++ {
		generateConversation(r, c, set)
	}
	return set
}

func generateConversation(r *rand.Rand, c int, set *Set) {
	dir := fmt.Sprintf("conv%02d", c+1)
	a := people[(2*c)%len(people)]
	b := people[(2*c+1)%len(people)]
	sessions := 25 + r.IntN(11)
	start := time.Date(2023, time.Month(1+r.IntN(6)), 1+r.IntN(27), 0, 0, 0, 0, time.UTC)
	type made struct {
		file string
		f    fact
		who  string
		date time.Time
	}
	var pool []made
	for s := 1; s <= sessions; s++ {
		date := start.AddDate(0, 0, s*(7+r.IntN(14)))
		for _, who := range []string{a, b} {
			other := b
			if who == b {
				other = a
			}
			fill := func(t string) string {
				return strings.NewReplacer("{P}", who, "{O}", other).Replace(t)
			}
			k := 0
			nFacts := 2 + r.IntN(3)
			tmpl := facts(r)
			for range nFacts {
				k++
				f := tmpl[r.IntN(len(tmpl))]
				obs := fill(f.obs)
				file := fmt.Sprintf("%s_s%02d_f%d.md", strings.ToLower(who), s, k)
				set.Memories = append(set.Memories, Memory{Dir: dir, File: file,
					Name:        fmt.Sprintf("%s s%d fact %d", who, s, k),
					Description: obs,
					Body:        fmt.Sprintf("%s (session %d, %s)", obs, s, date.Format("2 January 2006")),
					Date:        date})
				f.obs = obs
				pool = append(pool, made{file: file, f: f, who: who, date: date})
			}
			if r.IntN(2) == 0 { // small talk: a memory no question needs
				k++
				file := fmt.Sprintf("%s_s%02d_f%d.md", strings.ToLower(who), s, k)
				obs := fmt.Sprintf(pick(r, fillers), who)
				set.Memories = append(set.Memories, Memory{Dir: dir, File: file, Name: fmt.Sprintf("%s s%d fact %d", who, s, k),
					Description: obs, Body: fmt.Sprintf("%s (session %d, %s)", obs, s, date.Format("2 January 2006")), Date: date})
			}
		}
	}
	// Questions: about 60 per conversation, one memory each, plus
	// questions that need two (the same kind of thing, said twice).
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	asked := 0
	for _, m := range pool {
		if asked == 55 {
			break
		}
		q := m.f.questions[r.IntN(len(m.f.questions))]
		other := a
		if m.who == a {
			other = b
		}
		text := strings.NewReplacer("{P}", m.who, "{O}", other).Replace(q.text)
		set.Queries = append(set.Queries, Query{Dir: dir, Query: text, Needs: []string{dir + "/" + m.file}, Kind: q.kind})
		asked++
	}
	// Two-memory questions: a speaker's two statements from one template.
	byKey := map[string][]made{}
	for _, m := range pool {
		byKey[m.who+"|"+templateKey(m.f)] = append(byKey[m.who+"|"+templateKey(m.f)], m)
	}
	multi := 0
	for _, m := range pool {
		if multi == 8 {
			break
		}
		pair := byKey[m.who+"|"+templateKey(m.f)]
		if len(pair) < 2 || pair[0].file != m.file {
			continue
		}
		verb := multiQuestion(templateKey(m.f))
		if verb == "" {
			continue
		}
		set.Queries = append(set.Queries, Query{Dir: dir, Query: strings.ReplaceAll(verb, "{P}", m.who),
			Needs: []string{dir + "/" + pair[0].file, dir + "/" + pair[1].file}, Kind: "multi"})
		multi++
	}
}

// templateKey names a fact's template by its first question.
func templateKey(f fact) string { return f.questions[0].text }

// multiQuestion asks about every statement of one template.
func multiQuestion(key string) string {
	switch {
	case strings.Contains(key, "instrument"):
		return "Which instruments has {P} taken lessons for?"
	case strings.Contains(key, "pets") || strings.HasPrefix(key, "How many"):
		return "What animals has {P} adopted over time?"
	case strings.Contains(key, "sport"):
		return "What sports leagues has {P} been part of?"
	case strings.Contains(key, "language"):
		return "What languages has {P} practiced with apps?"
	case strings.Contains(key, "volunteer"):
		return "What organizations has {P} volunteered for?"
	case strings.Contains(key, "travel"):
		return "What trips has {P} been planning?"
	case strings.Contains(key, "growing"):
		return "What has {P} planted in the garden so far?"
	}
	return ""
}

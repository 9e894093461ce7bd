package lexical

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Tokenize splits text into search terms:
//
//   - words are lower-cased, split at anything that is not a letter or
//     digit, and stemmed with the Snowball English (Porter2) stemmer, so
//     "researching", "researched" and "research" meet, and so do "cats"
//     and "cat", "activities" and "activity";
//   - code identifiers give the whole identifier (unstemmed) and its
//     stemmed parts: "parseConfig" → parseconfig, pars, config;
//     "snake_case" → snake_case, snake, case; "HTTPServer" → httpserver,
//     http, server;
//   - Chinese, Japanese and Korean runs, written without spaces, give
//     overlapping character pairs (and the character itself for a
//     one-character run);
//   - English function words and question words ("what", "kind", "getting",
//     "tried"...) are dropped: they say how a question is asked, not what
//     it is about.
func Tokenize(text string) []string {
	return appendTokens(nil, text, false, nil)
}

// tokenizeName is Tokenize for a short title: numbers and one-letter
// words are dropped as well, since titles such as "Caroline s4 fact 1"
// number things rather than name a topic.
func tokenizeName(text string) []string {
	return appendTokens(nil, text, true, nil)
}

// stemCache remembers stems: a memory directory repeats its vocabulary, and
// the stemmer is most of the cost of indexing. Not safe for concurrent use.
type stemCache map[string]string

// maxStemCache bounds a stemCache; a full one starts over.
const maxStemCache = 1 << 16

func (c stemCache) stem(w string) string {
	if c == nil {
		return stem(w)
	}
	if s, ok := c[w]; ok {
		return s
	}
	if len(c) >= maxStemCache {
		clear(c)
	}
	s := stem(w)
	c[w] = s
	return s
}

func appendTokens(out []string, text string, title bool, stems stemCache) []string {
	emit := func(w string) {
		if w == "" || isStopWord(w) {
			return
		}
		if title && (utf8.RuneCountInString(w) == 1 || isNumber(w)) {
			return
		}
		out = append(out, stems.stem(w))
	}
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case isCJK(r):
			j := i
			var run []rune
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isCJK(r2) {
					break
				}
				run = append(run, r2)
				j += s2
			}
			if len(run) == 1 {
				out = append(out, string(run))
			}
			for k := 0; k+1 < len(run); k++ {
				out = append(out, string(run[k:k+2]))
			}
			i = j
		case isWordRune(r):
			j := i
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isWordRune(r2) && r2 != '_' {
					break
				}
				j += s2
			}
			// "Caroline's" is Caroline: drop a possessive 's.
			word := strings.Trim(text[i:j], "_")
			if j+2 < len(text) && (text[j] == '\'') && (text[j+1] == 's' || text[j+1] == 'S') && !isWordByte(text[j+2]) {
				j += 2
			}
			if plainWord(word) { // most words: one part, no identifier
				emit(strings.ToLower(word))
				i = j
				continue
			}
			parts := identifierParts(word)
			at := len(out)
			for _, p := range parts {
				emit(strings.ToLower(p))
			}
			if len(parts) > 1 && (!title || len(out) > at) {
				// The identifier itself, unstemmed, first; in a title only
				// when a part of it names something ("s4" does not).
				out = append(out, "")
				copy(out[at+1:], out[at:])
				out[at] = strings.ToLower(word)
			}
			i = j
		default:
			i += size
		}
	}
	return out
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b >= 0x80
}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return w != ""
}

// identifierParts splits a word at underscores and case changes.
func identifierParts(word string) []string {
	var parts []string
	for _, chunk := range strings.Split(word, "_") {
		if chunk == "" {
			continue
		}
		rs := []rune(chunk)
		start := 0
		for k := 1; k < len(rs); k++ {
			prev, cur := rs[k-1], rs[k]
			boundary := unicode.IsLower(prev) && unicode.IsUpper(cur) ||
				unicode.IsLetter(prev) && unicode.IsDigit(cur) ||
				unicode.IsDigit(prev) && unicode.IsLetter(cur) ||
				// "HTTPServer": the last capital of a run starts a new word.
				k+1 < len(rs) && unicode.IsUpper(prev) && unicode.IsUpper(cur) && unicode.IsLower(rs[k+1])
			if boundary {
				parts = append(parts, string(rs[start:k]))
				start = k
			}
		}
		parts = append(parts, string(rs[start:]))
	}
	return parts
}

// plainWord reports whether word is one part as it stands: ASCII letters,
// lower-case but for the first ("deploy", "Caroline"), or digits only
// (most words of a text).
func plainWord(word string) bool {
	if word == "" {
		return false
	}
	letters, digits := false, false
	for i := 0; i < len(word); i++ {
		switch b := word[i]; {
		case b >= 'a' && b <= 'z', i == 0 && b >= 'A' && b <= 'Z':
			letters = true
		case b >= '0' && b <= '9':
			digits = true
		default:
			return false
		}
	}
	return !(letters && digits)
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !isCJK(r)
}

func isCJK(r rune) bool {
	return r >= 0x1100 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// stem reduces an English word to its Snowball stem; words with
// non-ASCII letters are left as they are.
func stem(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] >= 0x80 {
			return w
		}
	}
	return english.Stem(w, true)
}

// isStopWord reports whether w carries no topic: the Snowball English
// stopword list, contractions' leftovers, and the words questions and
// requests are made of.
func isStopWord(w string) bool {
	if english.IsStopWord(w) {
		return true
	}
	switch w {
	// Question and request words.
	case "also", "could", "would", "shall", "may", "might", "must", "ever", "yet", "still", "much", "many",
		"kind", "kinds", "type", "types", "sort", "way", "ways", "like", "likes", "thing", "things",
		"something", "anything", "everything", "someone", "anyone", "get", "gets", "getting", "got", "gotten",
		"go", "goes", "going", "went", "gone", "make", "makes", "making", "made", "know", "knows", "tell",
		"told", "think", "thinks", "thought", "try", "tries", "tried", "trying", "say", "says", "said",
		"recent", "recently", "please", "us", "let", "lets", "whose", "whats", "anyway", "really", "well",
		"ll", "ve", "re", "d", "m", "didn", "doesn", "isn", "wasn", "aren", "weren", "won", "can't", "cannot":
		return true
	}
	return false
}

// Subject is what a memory is about, for SameSubject: the distinct terms
// of its name, and of its name and description together, each sorted.
type Subject struct {
	Name  []string
	Terms []string
}

// SubjectOf returns the Subject of a memory with name and description.
func SubjectOf(name, description string) Subject {
	return subjectOf(tokenizeName(name), Tokenize(description))
}

// subjectOf builds a Subject from the name's and the description's terms
// (it does not change them).
func subjectOf(name, description []string) Subject {
	n := slices.Clone(name)
	terms := append(slices.Clone(name), description...)
	slices.Sort(n)
	slices.Sort(terms)
	return Subject{Name: slices.Compact(n), Terms: slices.Compact(terms)}
}

// sameSubjectOverlap is the share of terms (Jaccard) two memories must
// have in common, in their names and in all, to speak of the same thing.
const sameSubjectOverlap = 0.5

// SameSubject reports whether two memories speak of the same thing with
// different values: their names share at least sameSubjectOverlap of
// their terms (memories of two people or two services are two subjects),
// and so do their names and descriptions together, but not all of them
// ("the deploy window is Tuesday", later "the deploy window moved to
// Thursday"). The newer of such a pair may supersede the older.
func SameSubject(a, b Subject) bool {
	if len(a.Name) > 0 && len(b.Name) > 0 {
		shared, union := overlap(a.Name, b.Name)
		if float64(shared) < sameSubjectOverlap*float64(union) {
			return false
		}
	}
	shared, union := overlap(a.Terms, b.Terms)
	return union > 0 && shared < union && float64(shared) >= sameSubjectOverlap*float64(union)
}

// overlap counts the terms two sorted sets share and their union.
func overlap(a, b []string) (shared, union int) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			shared++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return shared, len(a) + len(b) - shared
}

// Names returns the terms of the words of text written with a capital
// that does not start a sentence ("What is Freya's job?" gives freya):
// the names of people, places and things the text speaks of.
func Names(text string) []string {
	var out []string
	start := true // the next word starts a sentence
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) }) {
		word := strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if r, _ := utf8.DecodeRuneInString(word); word != "" && !start && unicode.IsUpper(r) {
			out = append(out, Tokenize(word)...)
		}
		if word != "" {
			start = strings.ContainsAny(w[len(w)-1:], ".!?:")
		}
	}
	return out
}

package recall

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenize splits text into search terms:
//
//   - words are lower-cased and split at anything that is not a letter or
//     digit;
//   - code identifiers give both the whole identifier and its parts:
//     "parseConfig" → parseconfig, parse, config; "snake_case" →
//     snake_case, snake, case; "HTTPServer" → httpserver, http, server;
//   - Chinese, Japanese and Korean runs, written without spaces, give
//     overlapping character pairs (and the character itself for a
//     one-character run);
//   - common English function words are dropped, and a plural "s" is
//     removed from longer words.
func Tokenize(text string) []string {
	var out []string
	emit := func(w string) {
		if w == "" || isStopWord(w) {
			return
		}
		out = append(out, stem(w))
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
			word := strings.Trim(text[i:j], "_")
			parts := identifierParts(word)
			whole := strings.ToLower(word)
			if len(parts) > 1 {
				out = append(out, whole) // the identifier itself, unstemmed
			}
			for _, p := range parts {
				emit(strings.ToLower(p))
			}
			i = j
		default:
			i += size
		}
	}
	return out
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

func isWordRune(r rune) bool { return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !isCJK(r) }

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func stem(w string) string {
	if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") {
		return w[:len(w)-1]
	}
	return w
}

// isStopWord reports whether w is a common English function word that
// carries no topic.
func isStopWord(w string) bool {
	switch w {
	case "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from",
		"as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those",
		"there", "here", "we", "you", "i", "he", "she", "they", "them", "our", "your", "my", "me", "us", "do",
		"does", "did", "done", "have", "has", "had", "not", "no", "so", "than", "then", "too", "very", "can",
		"could", "should", "would", "will", "just", "about", "into", "over", "under", "again", "what", "which",
		"who", "whom", "when", "where", "why", "how", "all", "any", "each", "few", "more", "most", "other", "some",
		"such", "only", "own", "same", "also", "up", "down", "out", "off":
		return true
	}
	return false
}

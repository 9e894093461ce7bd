package screen

import (
	"regexp"
	"strings"
	"sync"
)

// injectionRule is one way text addresses the model. Every match starts
// with one of keywords (lower-case literals) at a word boundary, or, for
// a line rule, at the start of a line whose first word is a keyword: the
// pattern runs anchored there only, so a clean text costs a substring
// search per keyword.
type injectionRule struct {
	id       string
	label    string
	keywords []string
	re       func() *regexp.Regexp // compiled on first use, so a program that never screens pays nothing at start
	line     bool
	low      bool
}

func inj(id, label string, keywords []string, pattern string) injectionRule {
	re := sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^(?:` + pattern + `)`) })
	return injectionRule{id: id, label: label, keywords: keywords, re: re}
}

func injLow(id, label string, keywords []string, pattern string) injectionRule {
	r := inj(id, label, keywords, pattern)
	r.low = true
	return r
}

// lineRule is a rule anchored at the start of a line.
func lineRule(r injectionRule) injectionRule {
	r.line = true
	return r
}

// order is an imperative a role marker or an instruction opens with.
const order = `(?:ignore|disregard|forget|you\s+(?:are|must|will|should)|always|never|do\s+not|don't|from\s+now\s+on|new\s+instructions)`

// roleMarker is a role name at the start of a line, as a chat transcript
// or a prompt template writes it.
const roleMarker = `[ \t]*(?:#+[ \t]*)?(?:\*\*)?\[?(?:system|assistant|developer|human)\]?(?:\*\*)?[ \t]*:(?:\*\*)?`

var roles = []string{"system", "assistant", "developer", "human"}

// injectionRules are the injection rules, high confidence first.
var injectionRules = []injectionRule{
	inj("ignore-previous-instructions", "text telling the model to drop its instructions",
		[]string{"ignore", "disregard", "forget", "override"},
		`(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+|these\s+|those\s+)?(?:previous|prior|above|earlier|preceding|foregoing|original|system)\s+(?:instructions?|prompts?|directions?|directives?|rules|guidelines|messages|context)\b`),
	inj("new-instructions", "text giving the model new instructions",
		[]string{"your", "the"},
		`(?:your|the)\s+(?:new|updated|real|actual)\s+(?:instructions|system\s+prompt|directives?)\s+(?:are|is|follow)\b`),
	inj("you-are-now", "text redefining the model's role",
		[]string{"you"},
		`you(?:\s+are|'re)\s+(?:now\s+)?(?:in\s+)?(?:developer|god|dan|jailbreak|jailbroken|unrestricted|unfiltered|debug|admin|sudo)\s+mode\b|you(?:\s+are|'re)\s+no\s+longer\s+(?:bound|restricted|limited|an?\s+(?:ai|assistant))\b`),
	lineRule(inj("role-marker-order", "a role marker followed by an order to the model", roles,
		roleMarker+`[ \t]*`+order+`\b`)),
	inj(ruleFakeMarkup, "fake system or tool-call markup",
		[]string{"<system", "</system", "<function", "</function", "<invoke", "</invoke", "<antml", "</antml", "<tool_", "</tool_",
			"<user-prompt", "</user-prompt", "<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>"},
		`</?(?:system-reminder|system|function_calls|function_results|invoke|antml:[a-z_]+|tool_use|tool_result|tool_call|tool_response|user-prompt-submit-hook)\b[^>\n]{0,200}>|<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|>|\[/?INST\]|<</?SYS>>`),

	lineRule(injLow("role-marker", "a role marker at the start of a line", roles, roleMarker)),
	injLow("you-are-now-role", "text telling the model what it is now",
		[]string{"you", "act", "pretend"},
		`you(?:\s+are|'re)\s+now\s+(?:a|an|the|my)\b|(?:act\s+as|pretend\s+(?:to\s+be|you\s+are))\s+(?:a|an|the|my)\b`),
	injLow("hide-from-user", "text telling the model to keep something from the user",
		[]string{"do", "don't", "never"},
		`(?:do\s+not|don't|never)\s+(?:tell|inform|show|mention\s+(?:this|it)\s+to|reveal\s+(?:this|it)\s+to)\s+the\s+user\b`),
	injLow("reveal-system-prompt", "text asking the model for its system prompt",
		[]string{"reveal", "print", "repeat", "output", "show", "leak", "dump"},
		`(?:reveal|print|repeat|output|show|leak|dump)\s+(?:your|the)\s+(?:full\s+|entire\s+)?system\s+prompt\b`),
	injLow("send-data-out", "text telling the model to send data to an address",
		[]string{"send", "post", "upload", "exfiltrate", "forward", "curl"},
		`(?:send|post|upload|exfiltrate|forward|curl)\s+(?:the\s+|all\s+|your\s+|every\s+)?(?:[a-z_.\-]+\s+){0,3}to\s+https?://`),
}

// ruleFakeMarkup is the rule whose matches in code are mentions.
const ruleFakeMarkup = "fake-system-markup"

// window bounds the text an anchored pattern may match.
const window = 1024

// findInjection returns one finding per match of every injection rule in
// text, high and low confidence, in text order.
func findInjection(text string) []Finding { return injection(text, true) }

// injection runs the high-confidence rules, and the low ones when low is
// set, on text and, when it holds anything but ASCII, on its folded form
// (fold: what a homoglyph, a fullwidth or mathematical letter or a soft
// hyphen disguises), each finding at its place in text.
func injection(text string, low bool) []Finding {
	out := injectionIn(text, low)
	if !disguised(text) {
		return out
	}
	folded, at := fold(text)
	type place struct {
		off  int
		rule string
	}
	seen := map[place]bool{}
	for _, f := range out {
		seen[place{f.Offset, f.RuleID}] = true
	}
	var ln lines
	for _, f := range injectionIn(folded, low) {
		f.Offset = at[f.Offset]
		if ln == nil {
			ln = newLines(text)
		}
		f.Line = ln.at(f.Offset)
		if k := (place{f.Offset, f.RuleID}); !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	sortFindings(out)
	return out
}

// injectionIn runs the rules on text as it is.
func injectionIn(text string, low bool) []Finding {
	lower := asciiLower(text) // the offsets stay those of text
	var out []Finding
	var ln lines
	for i := range injectionRules {
		r := &injectionRules[i]
		if r.low && !low {
			continue
		}
		seen := map[int]bool{}
		for _, k := range r.keywords {
			for from := 0; ; {
				j := strings.Index(lower[from:], k)
				if j < 0 {
					break
				}
				hit := from + j
				from = hit + len(k)
				at := hit
				if r.line {
					at = strings.LastIndexByte(text[:hit], '\n') + 1
					if strings.Trim(text[at:hit], " \t#*[") != "" {
						continue // the role word is not the line's first word
					}
				} else if hit > 0 && isWordByte(lower[hit-1]) && isWordByte(k[0]) {
					continue // inside a word
				}
				if seen[at] || !r.re().MatchString(text[at:min(len(text), at+window)]) {
					continue
				}
				seen[at] = true
				if ln == nil {
					ln = newLines(text)
				}
				if r.id == ruleFakeMarkup && inCode(text, at) {
					continue // mentioned in code, not sent as markup
				}
				f := Finding{Screen: ScreenInjection, RuleID: r.id, Label: r.label, Offset: at, Line: ln.at(at)}
				if r.low {
					f.Confidence = Low
				}
				out = append(out, f)
			}
		}
	}
	sortFindings(out)
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || c >= 0x80
}

// asciiLower lower-cases the ASCII letters of s only, keeping every
// byte offset (strings.ToLower may change the length of other runes).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

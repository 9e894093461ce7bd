package screen

import (
	"regexp"
	"strings"
)

// injectionRule is one way text addresses the model. keywords are
// lower-case literals one of which every match holds: the pattern runs
// only on a text that holds one.
type injectionRule struct {
	id       string
	label    string
	keywords []string
	re       *regexp.Regexp
	low      bool
}

func inj(id, label string, keywords []string, pattern string) injectionRule {
	return injectionRule{id: id, label: label, keywords: keywords, re: regexp.MustCompile(`(?i)` + pattern)}
}

func injLow(id, label string, keywords []string, pattern string) injectionRule {
	r := inj(id, label, keywords, pattern)
	r.low = true
	return r
}

// order is an imperative a role marker or an instruction opens with.
const order = `(?:ignore|disregard|forget|you\s+(?:are|must|will|should)|always|never|do\s+not|don't|from\s+now\s+on|new\s+instructions)`

// injectionRules are the injection rules, high confidence first.
var injectionRules = []injectionRule{
	inj("ignore-previous-instructions", "text telling the model to drop its instructions",
		[]string{"ignore", "disregard", "forget", "override"},
		`\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+|these\s+|those\s+)?(?:previous|prior|above|earlier|preceding|foregoing|original|system)\s+(?:instructions?|prompts?|directions?|directives?|rules|guidelines|messages|context)\b`),
	inj("new-instructions", "text giving the model new instructions",
		[]string{"new", "updated"},
		`\b(?:your|the)\s+(?:new|updated|real|actual)\s+(?:instructions|system\s+prompt|directives?)\s+(?:are|is|follow)\b`),
	inj("you-are-now", "text redefining the model's role",
		[]string{"you are", "you're"},
		`\byou(?:\s+are|'re)\s+(?:now\s+)?(?:in\s+)?(?:developer|god|dan|jailbreak|jailbroken|unrestricted|unfiltered|debug|admin|sudo)\s+mode\b|\byou(?:\s+are|'re)\s+no\s+longer\s+(?:bound|restricted|limited|an?\s+(?:ai|assistant))\b`),
	inj("role-marker-order", "a role marker followed by an order to the model",
		[]string{"system", "assistant", "developer", "human"},
		`(?m)^[ \t]*(?:#+[ \t]*)?(?:\*\*)?\[?(?:system|assistant|developer|human)\]?(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*`+order+`\b`),
	inj("fake-system-markup", "fake system or tool-call markup",
		[]string{"<", "[inst]", "[/inst]", "<<sys>>"},
		`</?(?:system-reminder|system|function_calls|function_results|invoke|antml:[a-z_]+|tool_use|tool_result|tool_call|tool_response|user-prompt-submit-hook)\b[^>\n]{0,200}>|<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|>|\[/?INST\]|<</?SYS>>`),

	injLow("role-marker", "a role marker at the start of a line",
		[]string{"system", "assistant", "developer", "human"},
		`(?m)^[ \t]*(?:#+[ \t]*)?(?:\*\*)?\[?(?:system|assistant|developer|human)\]?(?:\*\*)?[ \t]*:(?:\*\*)?`),
	injLow("you-are-now-role", "text telling the model what it is now",
		[]string{"you are now", "you're now", "act as", "pretend"},
		`\byou(?:\s+are|'re)\s+now\s+(?:a|an|the|my)\b|\b(?:act\s+as|pretend\s+(?:to\s+be|you\s+are))\s+(?:a|an|the|my)\b`),
	injLow("hide-from-user", "text telling the model to keep something from the user",
		[]string{"user"},
		`\b(?:do\s+not|don't|never)\s+(?:tell|inform|show|mention\s+(?:this|it)\s+to|reveal\s+(?:this|it)\s+to)\s+the\s+user\b`),
	injLow("reveal-system-prompt", "text asking the model for its system prompt",
		[]string{"system prompt"},
		`\b(?:reveal|print|repeat|output|show|leak|dump)\s+(?:your|the)\s+(?:full\s+|entire\s+)?system\s+prompt\b`),
	injLow("send-data-out", "text telling the model to send data to an address",
		[]string{"http"},
		`\b(?:send|post|upload|exfiltrate|forward|curl)\s+(?:the\s+|all\s+|your\s+|every\s+)?(?:[a-z_.\-]+\s+){0,3}to\s+https?://`),
}

// Injection returns one finding per match of every injection rule in
// text, high and low confidence, in text order.
func Injection(text string) []Finding {
	var lower string
	var out []Finding
	var ln lines
	for i := range injectionRules {
		r := &injectionRules[i]
		if lower == "" {
			lower = strings.ToLower(text)
		}
		hit := false
		for _, k := range r.keywords {
			if strings.Contains(lower, k) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		for _, m := range r.re.FindAllStringIndex(text, -1) {
			if ln == nil {
				ln = newLines(text)
			}
			f := Finding{Screen: ScreenInjection, RuleID: r.id, Label: r.label, Offset: m[0], Line: ln.at(m[0])}
			if r.low {
				f.Confidence = Low
			}
			out = append(out, f)
		}
	}
	sortFindings(out)
	return out
}

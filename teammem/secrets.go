package teammem

import (
	"regexp"
	"strings"
)

// secretRule is one kind of credential: literal keywords that every match
// contains (a cheap prefilter) and the pattern of the token itself, written
// from the provider's documented token format.
type secretRule struct {
	id       string
	keywords []string
	re       *regexp.Regexp
}

// Boundaries stand in for look-arounds, which RE2 lacks: a token starts at
// the beginning of text or after a character that cannot be part of it,
// and ends likewise. Matches are trimmed back to the token (group 1).
const (
	pre  = `(?:^|[^0-9A-Za-z_\-])(`
	post = `)(?:$|[^0-9A-Za-z_\-])`
)

func rule(id string, keywords []string, pattern string) secretRule {
	return secretRule{id: id, keywords: keywords, re: regexp.MustCompile(pattern)}
}

// secretRules returns the rule set, in a fixed order. It is rebuilt per
// Scanner, so nothing is shared between goroutines but immutable data.
func secretRules() []secretRule {
	return []secretRule{
		// AWS access key IDs: a four-letter prefix and 16 base-32 characters.
		rule("aws-access-token", []string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T"},
			pre+`(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}`+post),
		// Google API keys: "AIza" and 35 URL-safe characters.
		rule("gcp-api-key", []string{"AIza"}, pre+`AIza[0-9A-Za-z_\-]{35}`+post),
		// Entra ID (Azure AD) client secrets carry "Q~" after three characters and a digit.
		rule("azure-ad-client-secret", []string{"Q~"},
			`(?:^|[\s'"=:(,])([a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.\-]{31,34})(?:$|[\s'"),;])`),
		rule("digitalocean-pat", []string{"dop_v1_"}, pre+`dop_v1_[a-f0-9]{64}`+post),
		rule("digitalocean-access-token", []string{"doo_v1_"}, pre+`doo_v1_[a-f0-9]{64}`+post),
		rule("anthropic-api-key", []string{"sk-ant-api03-"}, pre+`sk-ant-api03-[a-zA-Z0-9_\-]{93}AA`+post),
		rule("anthropic-admin-api-key", []string{"sk-ant-admin01-"}, pre+`sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA`+post),
		// OpenAI keys embed "T3BlbkFJ" (base64 of "OpenAI") between two random halves.
		rule("openai-api-key", []string{"T3BlbkFJ"},
			pre+`sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_\-]{20,74}T3BlbkFJ[A-Za-z0-9_\-]{20,74}`+post),
		rule("huggingface-access-token", []string{"hf_"}, pre+`hf_[a-zA-Z]{34}`+post),
		rule("github-pat", []string{"ghp_"}, pre+`ghp_[0-9a-zA-Z]{36}`+post),
		rule("github-fine-grained-pat", []string{"github_pat_"}, pre+`github_pat_[0-9a-zA-Z_]{82}`+post),
		rule("github-app-token", []string{"ghu_", "ghs_"}, pre+`(?:ghu|ghs)_[0-9a-zA-Z]{36}`+post),
		rule("github-oauth", []string{"gho_"}, pre+`gho_[0-9a-zA-Z]{36}`+post),
		rule("github-refresh-token", []string{"ghr_"}, pre+`ghr_[0-9a-zA-Z]{36}`+post),
		rule("gitlab-pat", []string{"glpat-"}, pre+`glpat-[0-9a-zA-Z_\-]{20}`+post),
		rule("gitlab-deploy-token", []string{"gldt-"}, pre+`gldt-[0-9a-zA-Z_\-]{20}`+post),
		rule("slack-bot-token", []string{"xoxb-"}, pre+`xoxb-[0-9]{10,13}-[0-9]{10,13}(?:-[a-zA-Z0-9]{20,32})?`+post),
		rule("slack-user-token", []string{"xoxp-", "xoxe-"}, pre+`xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9]{28,34}`+post),
		rule("slack-app-token", []string{"xapp-"}, pre+`xapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,14}-[a-z0-9]{32,72}`+post),
		// Twilio API key SIDs: "SK" and 32 hex digits.
		rule("twilio-api-key", []string{"SK"}, pre+`SK[0-9a-fA-F]{32}`+post),
		rule("sendgrid-api-token", []string{"SG."}, `(?:^|[^0-9A-Za-z_\-.])(SG\.[a-zA-Z0-9_\-]{22}\.[a-zA-Z0-9_\-]{43})(?:$|[^0-9A-Za-z_\-])`),
		rule("npm-access-token", []string{"npm_"}, pre+`npm_[a-zA-Z0-9]{36}`+post),
		// PyPI tokens are macaroons whose base64 starts with the issuer "pypi.org".
		rule("pypi-upload-token", []string{"pypi-AgEIcHlwaS5vcmc"}, pre+`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}`+post),
		rule("databricks-api-token", []string{"dapi"}, pre+`dapi[a-f0-9]{32}(?:-[0-9])?`+post),
		rule("hashicorp-tf-api-token", []string{".atlasv1."}, pre+`[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9_\-=]{60,70}`+post),
		rule("pulumi-api-token", []string{"pul-"}, pre+`pul-[a-f0-9]{40}`+post),
		rule("postman-api-token", []string{"PMAK-"}, pre+`PMAK-[a-f0-9]{24}-[a-f0-9]{34}`+post),
		// Grafana API keys are base64 JSON starting {"k":"
		rule("grafana-api-key", []string{"eyJrIjoi"}, `(?:^|[^0-9A-Za-z+/])(eyJrIjoi[A-Za-z0-9+/]{70,400}={0,2})(?:$|[^0-9A-Za-z+/=])`),
		rule("grafana-cloud-api-token", []string{"glc_"}, `(?:^|[^0-9A-Za-z_+/])(glc_[A-Za-z0-9+/]{32,400}={0,2})(?:$|[^0-9A-Za-z+/=])`),
		rule("grafana-service-account-token", []string{"glsa_"}, pre+`glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`+post),
		rule("sentry-user-token", []string{"sntryu_"}, pre+`sntryu_[a-f0-9]{64}`+post),
		// Sentry org tokens: "sntrys_" and a base64 JSON payload starting {"iat":
		rule("sentry-org-token", []string{"sntrys_"}, `(?:^|[^0-9A-Za-z_])(sntrys_eyJpYXQiO[A-Za-z0-9+/=_]{40,600})(?:$|[^0-9A-Za-z+/=_])`),
		rule("stripe-access-token", []string{"sk_", "rk_"}, pre+`(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}`+post),
		rule("shopify-access-token", []string{"shpat_"}, pre+`shpat_[a-fA-F0-9]{32}`+post),
		rule("shopify-shared-secret", []string{"shpss_"}, pre+`shpss_[a-fA-F0-9]{32}`+post),
		rule("private-key", []string{"PRIVATE KEY"},
			`(-----BEGIN[ A-Z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]{64,}?-----END[ A-Z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----)`),
	}
}

// SecretRuleIDs lists the IDs of every secret rule, in scan order.
func SecretRuleIDs() []string {
	rules := secretRules()
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = r.id
	}
	return ids
}

// labelWords are the words of a rule ID that are not simply capitalised.
var labelWords = map[string]string{
	"aws": "AWS", "gcp": "GCP", "api": "API", "pat": "PAT", "ad": "AD", "tf": "TF",
	"oauth": "OAuth", "npm": "NPM", "pypi": "PyPI", "jwt": "JWT", "github": "GitHub",
	"gitlab": "GitLab", "openai": "OpenAI", "digitalocean": "DigitalOcean",
	"huggingface": "HuggingFace", "hashicorp": "HashiCorp", "sendgrid": "SendGrid",
}

// SecretLabel turns a rule ID into a name for people: "github-pat" →
// "GitHub PAT", "aws-access-token" → "AWS Access Token".
func SecretLabel(ruleID string) string {
	words := strings.Split(ruleID, "-")
	for i, w := range words {
		if special, ok := labelWords[w]; ok {
			words[i] = special
		} else if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// SecretMatch names a kind of secret found in a text. It never holds the
// secret itself.
type SecretMatch struct {
	RuleID string
	Label  string
}

// Scanner finds credentials in text. Create one with NewScanner and reuse
// it: it is safe for concurrent use.
type Scanner struct {
	rules []secretRule
}

// NewScanner returns a Scanner with the 36 built-in rules.
func NewScanner() *Scanner { return &Scanner{rules: secretRules()} }

// Scan returns one SecretMatch per rule that matches text, in rule order;
// nil when the text is clean.
func (s *Scanner) Scan(text string) []SecretMatch {
	var out []SecretMatch
	for _, r := range s.rules {
		if r.matchIndex(text) != nil {
			out = append(out, SecretMatch{RuleID: r.id, Label: SecretLabel(r.id)})
		}
	}
	return out
}

// First returns the first rule that matches text, and whether one did.
func (s *Scanner) First(text string) (SecretMatch, bool) {
	for _, r := range s.rules {
		if r.matchIndex(text) != nil {
			return SecretMatch{RuleID: r.id, Label: SecretLabel(r.id)}, true
		}
	}
	return SecretMatch{}, false
}

// Redact replaces every secret in text with "[REDACTED]".
func (s *Scanner) Redact(text string) string {
	for _, r := range s.rules {
		if !r.mayMatch(text) {
			continue
		}
		var b strings.Builder
		last := 0
		// Search on from the end of each token, not the end of the match,
		// so two tokens one separator apart are both found.
		for pos := 0; pos < len(text); {
			m := r.re.FindStringSubmatchIndex(text[pos:])
			if m == nil {
				break
			}
			start, end := pos+m[2], pos+m[3]
			b.WriteString(text[last:start])
			b.WriteString(redacted)
			last, pos = end, end
		}
		if last == 0 {
			continue
		}
		b.WriteString(text[last:])
		text = b.String()
	}
	return text
}

const redacted = "[REDACTED]"

// ScanSecrets is NewScanner().Scan(text), for one-off use.
func ScanSecrets(text string) []SecretMatch { return NewScanner().Scan(text) }

// RedactSecrets is NewScanner().Redact(text), for one-off use.
func RedactSecrets(text string) string { return NewScanner().Redact(text) }

func (r secretRule) mayMatch(text string) bool {
	for _, k := range r.keywords {
		if strings.Contains(text, k) {
			return true
		}
	}
	return false
}

func (r secretRule) matchIndex(text string) []int {
	if !r.mayMatch(text) {
		return nil
	}
	return r.re.FindStringSubmatchIndex(text)
}

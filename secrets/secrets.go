package secrets

import (
	"regexp"
	"sort"
	"strings"
)

// secretRule is one kind of credential, written from the provider's
// documented token format. Scanning is keyword-driven: the text is
// searched for the rule's literal keywords (plain substring search, fast),
// and the token pattern runs only where a keyword appears, anchored at the
// token's start. A clean document costs one substring search per keyword.
type secretRule struct {
	id       string
	keywords []string
	// offset is how many bytes before the keyword the token starts.
	offset int
	// body matches the token at the start of the text, then a byte that
	// cannot continue it (or the end).
	body *regexp.Regexp
	// inToken marks bytes that may not sit right before a token.
	inToken [256]bool
	// maxLen bounds the text a single match may span.
	maxLen int
	// low marks a low-confidence rule: it redacts, and ScanAll reports
	// it, but it never blocks (Scan, First and Check skip it).
	low bool
}

// lowRule is rule for a low-confidence rule.
func lowRule(id string, keywords []string, offset int, pattern, chars string, maxLen int) secretRule {
	r := rule(id, keywords, offset, pattern, chars, maxLen)
	r.low = true
	return r
}

// Confidence says how sure a rule is that a match is a credential.
type Confidence int

const (
	// High rules match a provider's own token format: their matches
	// block writes into shared or synced memory.
	High Confidence = iota
	// Low rules match the shapes credentials often take (a password
	// assignment, a URL with a password, a bearer header): their
	// matches are redacted but never block, since ordinary prose and
	// code hit them too.
	Low
)

func (c Confidence) String() string {
	if c == Low {
		return "low"
	}
	return "high"
}

// Token characters shared by most rules; a token must not touch another
// one of these on either side.
const tokenChars = `0-9A-Za-z_\-`

// rule compiles a rule. chars is the character class of bytes that may
// not border the token ("" for none).
func rule(id string, keywords []string, offset int, pattern, chars string, maxLen int) secretRule {
	r := secretRule{id: id, keywords: keywords, offset: offset, maxLen: maxLen}
	expr := `^(` + pattern + `)`
	if chars != "" {
		expr += `(?:$|[^` + chars + `])`
		class := regexp.MustCompile(`^[` + chars + `]$`)
		for b := 0; b < 256; b++ {
			r.inToken[b] = class.MatchString(string([]byte{byte(b)}))
		}
	}
	r.body = regexp.MustCompile(expr)
	return r
}

// secretRules returns the rule set, in a fixed order.
func secretRules() []secretRule {
	return []secretRule{
		// AWS access key IDs: a four-letter prefix and 16 base-32 characters.
		rule("aws-access-token", []string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T"}, 0,
			`(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}`, tokenChars, 20),
		// Google API keys: "AIza" and 35 URL-safe characters.
		rule("gcp-api-key", []string{"AIza"}, 0, `AIza[0-9A-Za-z_\-]{35}`, tokenChars, 39),
		// Entra ID (Azure AD) client secrets: three characters, a digit, "Q~", then 31-34 more.
		rule("azure-ad-client-secret", []string{"Q~"}, 4, `[a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.\-]{31,34}`, `0-9A-Za-z_~.\-`, 40),
		rule("digitalocean-pat", []string{"dop_v1_"}, 0, `dop_v1_[a-f0-9]{64}`, tokenChars, 71),
		rule("digitalocean-access-token", []string{"doo_v1_"}, 0, `doo_v1_[a-f0-9]{64}`, tokenChars, 71),
		rule("anthropic-api-key", []string{"sk-ant-api03-"}, 0, `sk-ant-api03-[a-zA-Z0-9_\-]{93}AA`, tokenChars, 108),
		rule("anthropic-admin-api-key", []string{"sk-ant-admin01-"}, 0, `sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA`, tokenChars, 110),
		// OpenAI keys embed "T3BlbkFJ" (base64 of "OpenAI") between two random halves.
		rule("openai-api-key", []string{"sk-"}, 0,
			`sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_\-]{20,74}T3BlbkFJ[A-Za-z0-9_\-]{20,74}`, tokenChars, 170),
		rule("huggingface-access-token", []string{"hf_"}, 0, `hf_[a-zA-Z]{34}`, tokenChars, 37),
		rule("github-pat", []string{"ghp_"}, 0, `ghp_[0-9a-zA-Z]{36}`, tokenChars, 40),
		rule("github-fine-grained-pat", []string{"github_pat_"}, 0, `github_pat_[0-9a-zA-Z_]{82}`, tokenChars, 93),
		rule("github-app-token", []string{"ghu_", "ghs_"}, 0, `(?:ghu|ghs)_[0-9a-zA-Z]{36}`, tokenChars, 40),
		rule("github-oauth", []string{"gho_"}, 0, `gho_[0-9a-zA-Z]{36}`, tokenChars, 40),
		rule("github-refresh-token", []string{"ghr_"}, 0, `ghr_[0-9a-zA-Z]{36}`, tokenChars, 40),
		rule("gitlab-pat", []string{"glpat-"}, 0, `glpat-[0-9a-zA-Z_\-]{20}`, tokenChars, 26),
		rule("gitlab-deploy-token", []string{"gldt-"}, 0, `gldt-[0-9a-zA-Z_\-]{20}`, tokenChars, 25),
		rule("slack-bot-token", []string{"xoxb-"}, 0, `xoxb-[0-9]{10,13}-[0-9]{10,13}(?:-[a-zA-Z0-9]{20,32})?`, tokenChars, 66),
		rule("slack-user-token", []string{"xoxp-", "xoxe-"}, 0, `xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9]{28,34}`, tokenChars, 82),
		rule("slack-app-token", []string{"xapp-"}, 0, `xapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,14}-[a-z0-9]{32,72}`, tokenChars, 108),
		// Twilio API key SIDs: "SK" and 32 hex digits.
		rule("twilio-api-key", []string{"SK"}, 0, `SK[0-9a-fA-F]{32}`, tokenChars, 34),
		rule("sendgrid-api-token", []string{"SG."}, 0, `SG\.[a-zA-Z0-9_\-]{22}\.[a-zA-Z0-9_\-]{43}`, tokenChars+`.`, 69),
		rule("npm-access-token", []string{"npm_"}, 0, `npm_[a-zA-Z0-9]{36}`, tokenChars, 40),
		// PyPI tokens are macaroons whose base64 starts with the issuer "pypi.org".
		rule("pypi-upload-token", []string{"pypi-AgEIcHlwaS5vcmc"}, 0, `pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}`, tokenChars, 4096),
		rule("databricks-api-token", []string{"dapi"}, 0, `dapi[a-f0-9]{32}(?:-[0-9])?`, tokenChars, 38),
		// Terraform Cloud tokens: 14 characters, ".atlasv1.", 60-70 more.
		rule("hashicorp-tf-api-token", []string{".atlasv1."}, 14, `[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9_\-=]{60,70}`, tokenChars+`=`, 93),
		rule("pulumi-api-token", []string{"pul-"}, 0, `pul-[a-f0-9]{40}`, tokenChars, 44),
		rule("postman-api-token", []string{"PMAK-"}, 0, `PMAK-[a-f0-9]{24}-[a-f0-9]{34}`, tokenChars, 64),
		// Grafana API keys are base64 JSON starting {"k":"
		rule("grafana-api-key", []string{"eyJrIjoi"}, 0, `eyJrIjoi[A-Za-z0-9+/]{70,400}={0,2}`, `0-9A-Za-z+/=`, 410),
		rule("grafana-cloud-api-token", []string{"glc_"}, 0, `glc_[A-Za-z0-9+/]{32,400}={0,2}`, `0-9A-Za-z_+/=`, 406),
		rule("grafana-service-account-token", []string{"glsa_"}, 0, `glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`, tokenChars, 46),
		rule("sentry-user-token", []string{"sntryu_"}, 0, `sntryu_[a-f0-9]{64}`, tokenChars, 71),
		// Sentry org tokens: "sntrys_" and a base64 JSON payload starting {"iat":
		rule("sentry-org-token", []string{"sntrys_"}, 0, `sntrys_eyJpYXQiO[A-Za-z0-9+/=_]{40,600}`, `0-9A-Za-z+/=_`, 623),
		rule("stripe-access-token", []string{"sk_", "rk_"}, 0, `(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}`, tokenChars, 110),
		rule("shopify-access-token", []string{"shpat_"}, 0, `shpat_[a-fA-F0-9]{32}`, tokenChars, 38),
		rule("shopify-shared-secret", []string{"shpss_"}, 0, `shpss_[a-fA-F0-9]{32}`, tokenChars, 38),
		// Added in Claude Code 2.1.328's rule set.
		// Google OAuth client secrets: "GOCSPX-" and 28 characters.
		rule("google-oauth-client-secret", []string{"GOCSPX-"}, 0, `GOCSPX-[a-zA-Z0-9_\-]{28}`, tokenChars, 35),
		rule("anthropic-oauth-token", []string{"sk-ant-oat01-"}, 0, `sk-ant-oat01-[a-zA-Z0-9_\-]{93}AA`, tokenChars, 108),
		// The first OpenAI keys: "sk-", 20 characters, "T3BlbkFJ", 20 more.
		rule("openai-legacy-api-key", []string{"T3BlbkFJ"}, 23, `sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20}`, tokenChars, 51),
		rule("supabase-secret-key", []string{"sb_secret_"}, 0, `sb_secret_[a-zA-Z0-9_\-]{31,64}`, tokenChars, 74),
		rule("supabase-access-token", []string{"sbp_"}, 0, `sbp_(?:v0_)?[a-f0-9]{40}`, tokenChars, 47),
		rule("gitlab-runner-authentication-token", []string{"glrt-"}, 0, `glrt-[0-9a-zA-Z_\-]{20,300}`, tokenChars, 305),
		rule("gitlab-oauth-app-secret", []string{"gloas-"}, 0, `gloas-[0-9a-zA-Z_\-]{64}`, tokenChars, 70),
		rule("gitlab-pipeline-trigger-token", []string{"glptt-"}, 0, `glptt-[0-9a-f]{40}`, tokenChars, 46),
		rule("gitlab-kubernetes-agent-token", []string{"glagent-"}, 0, `glagent-[0-9a-zA-Z_\-]{50}`, tokenChars, 58),
		rule("gitlab-incoming-mail-token", []string{"glimt-"}, 0, `glimt-[0-9a-zA-Z_\-]{25}`, tokenChars, 31),
		rule("gitlab-scim-oauth-token", []string{"glsoat-"}, 0, `glsoat-[0-9a-zA-Z_\-]{20}`, tokenChars, 27),
		rule("gitlab-ci-build-token", []string{"glcbt-"}, 0, `glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_\-]{20}`, tokenChars, 32),
		rule("gitlab-feed-token", []string{"glft-"}, 0, `glft-[0-9a-zA-Z_\-]{20}`, tokenChars, 25),
		rule("gitlab-feature-flag-client-token", []string{"glffct-"}, 0, `glffct-[0-9a-zA-Z_\-]{20}`, tokenChars, 27),
		// Slack configuration tokens: the refresh ("rotation") token and the
		// access token that workflow and app configuration use.
		rule("slack-rotation-token", []string{"xoxe-"}, 0, `xoxe-[0-9]-[A-Z0-9]{146}`, tokenChars, 153),
		rule("slack-workflow-token", []string{"xoxe.xox"}, 0, `xoxe\.xox[bp]-[0-9]-[A-Z0-9]{163,166}`, tokenChars, 177),
		rule("slack-webhook-url", []string{"hooks.slack.com/"}, 0, `hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`, tokenChars, 82),
		rule("private-key", []string{"-----BEGIN"}, 0,
			`-----BEGIN[ A-Z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]{64,}?-----END[ A-Z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----`, "", 64<<10),

		// Low confidence (Claude Code 2.1.328's 13): shapes, not formats.
		// A URL with a password: scheme://user:password@host.
		lowRule("url-userinfo", []string{"://"}, 0, `://[^\s/:@?#]+:[^\s/@?#]{3,}@[A-Za-z0-9.\-]+`, "", 512),
		// A password with a slash in it: the URL parser would end the
		// authority early and miss it.
		lowRule("url-userinfo-tail", []string{"://"}, 0, `://[^\s/:@?#]+:[^\s@?#]*/[^\s@?#]*@[A-Za-z0-9.\-]+`, "", 512),
		// A password with an "@" in it: the host follows the last one.
		lowRule("url-userinfo-later-at", []string{"://"}, 0, `://[^\s/:@?#]+:[^\s/?#]*@[^\s/?#]*@[A-Za-z0-9.\-]+`, "", 512),
		// The same, percent-encoded inside another URL or a log line.
		lowRule("url-userinfo-encoded", []string{"%3A%2F%2F", "%3a%2f%2f"}, 0,
			`%3[Aa]%2[Ff]%2[Ff][A-Za-z0-9._~\-]+%3[Aa][A-Za-z0-9._~%\-]{3,}%40[A-Za-z0-9.\-]+`, "", 512),
		// A Google service account key file: its private_key_id field.
		lowRule("gcp-service-account", []string{`"private_key_id"`}, 0, `"private_key_id"\s*:\s*"[a-f0-9]{40}"`, "", 80),
		// Anything shaped like an Anthropic key that no exact rule took.
		lowRule("loose-anthropic-key", []string{"sk-ant-"}, 0, `sk-ant-[A-Za-z0-9_\-]{24,}`, tokenChars, 300),
		// An Authorization header's credentials.
		lowRule("http-auth-scheme", []string{"Bearer ", "bearer ", "Basic ", "basic ", "Token ", "token "}, 0,
			`(?:[Bb]earer|[Bb]asic|[Tt]oken) [A-Za-z0-9._~+/\-]{16,}=*`, tokenChars, 2048),
		// A JSON Web Token: three base64url parts, the first two JSON.
		lowRule("loose-jwt", []string{"eyJ"}, 0, `eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`, tokenChars, 4096),
		// A value assigned to a name that says it is secret.
		lowRule("sensitive-assign", sensitiveNames, 0,
			`(?i:password|passwd|secret|token|api_?key|access_?key|private_?key)["']?\s*[:=]\s*["']?[^\s"'<>]{8,}`, "", 300),
		// The same inside an escaped JSON string (\"password\":\"...\").
		lowRule("sensitive-assign-escaped", sensitiveNames, 0,
			`(?i:password|passwd|secret|token|api_?key|access_?key|private_?key)\\"\s*:\s*\\"[^\\"\s]{8,}`, "", 300),
		// A cloud credential in an environment assignment.
		lowRule("cloud-env-var", []string{"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_STORAGE_KEY",
			"ARM_CLIENT_SECRET", "GOOGLE_API_KEY", "DIGITALOCEAN_ACCESS_TOKEN", "CLOUDFLARE_API_TOKEN"}, 0,
			`[A-Z_]+\s*[:=]\s*["']?[A-Za-z0-9/+=._\-]{16,}`, "", 400),
		// A value masked at the start whose rest is still in the clear.
		lowRule("masked-value-rest", []string{"****"}, 0, `\*{4,}[A-Za-z0-9_\-]{16,}`, "", 300),
		// An Anthropic key masked in the middle with its signed rest shown.
		lowRule("anthropic-signed-key-rest", []string{"sk-ant-"}, 0, `sk-ant-[a-z]+[0-9]*-(?:\.{3}|\*{3,}|…)[A-Za-z0-9_\-]{16,}`, "", 300),
	}
}

// sensitiveNames are the keywords of the assignment rules, in the cases
// code writes them.
var sensitiveNames = []string{"password", "Password", "PASSWORD", "passwd", "PASSWD", "secret", "Secret", "SECRET",
	"token", "Token", "TOKEN", "api_key", "apikey", "apiKey", "ApiKey", "API_KEY", "APIKEY", "access_key", "accessKey",
	"ACCESS_KEY", "private_key", "privateKey", "PRIVATE_KEY"}

// RuleIDs lists the IDs of every secret rule, in scan order: the
// high-confidence ones and private-key, then the low-confidence ones.
func RuleIDs() []string {
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
	"ci": "CI", "scim": "SCIM",
}

// label turns a rule ID into a name for people: "github-pat" →
// "GitHub PAT", "aws-access-token" → "AWS Access Token".
func label(ruleID string) string {
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

// Match names a kind of secret found in a text. It never holds the
// secret itself.
type Match struct {
	RuleID     string
	Label      string
	Confidence Confidence
}

// Scanner finds credentials in text. Create one with New and reuse
// it: it is safe for concurrent use.
type Scanner struct {
	rules []secretRule
	high  keywordIndex // the high-confidence rules: what blocks
	all   keywordIndex // every rule
}

// keywordIndex indexes rule keywords by their first two bytes, so a scan
// finds all candidates in one pass over the text.
type keywordIndex struct {
	// slot maps a byte pair to its group in groups (0: no keyword starts
	// with it): a table lookup per byte of text, no hashing.
	slot   *[1 << 16]uint16
	groups [][]keywordRef
}

func (x *keywordIndex) add(rule int, kw string) {
	if x.slot == nil {
		x.slot = new([1 << 16]uint16)
		x.groups = [][]keywordRef{nil}
	}
	p := uint16(kw[0])<<8 | uint16(kw[1]) // every keyword has two bytes or more
	if x.slot[p] == 0 {
		x.slot[p] = uint16(len(x.groups))
		x.groups = append(x.groups, nil)
	}
	g := x.slot[p]
	x.groups[g] = append(x.groups[g], keywordRef{rule: rule, kw: kw})
}

// keywordRef is one keyword of one rule.
type keywordRef struct {
	rule int
	kw   string
}

// New returns a Scanner with the 66 built-in rules: the 52
// high-confidence rules of Claude Code 2.1.328, its private-key check,
// and its 13 low-confidence rules (which redact but never block).
func New() *Scanner {
	s := &Scanner{rules: secretRules()}
	for i, r := range s.rules {
		for _, k := range r.keywords {
			s.all.add(i, k)
			if !r.low {
				s.high.add(i, k)
			}
		}
	}
	return s
}

// scan calls hit for each rule of x that matches text, in text order of
// its first matching keyword, once per rule, until hit returns false.
func (s *Scanner) scan(x *keywordIndex, text string, hit func(rule int) bool) {
	var done []bool
	if x.slot == nil {
		return
	}
	slot := x.slot
	for i := 0; i+1 < len(text); i++ {
		g := slot[uint16(text[i])<<8|uint16(text[i+1])]
		if g == 0 {
			continue
		}
		for _, ref := range x.groups[g] {
			if done != nil && done[ref.rule] || !strings.HasPrefix(text[i:], ref.kw) {
				continue
			}
			r := &s.rules[ref.rule]
			start := i - r.offset
			if start < 0 {
				continue
			}
			if _, ok := r.matchAt(text, start); !ok {
				continue
			}
			if done == nil {
				done = make([]bool, len(s.rules))
			}
			done[ref.rule] = true
			if !hit(ref.rule) {
				return
			}
		}
	}
}

// Scan returns one Match per high-confidence rule that matches text, in
// rule order; nil when the text holds none. These are the matches that
// block a write.
func (s *Scanner) Scan(text string) []Match { return s.matches(&s.high, text) }

// ScanAll is Scan with the low-confidence rules too (Match.Confidence
// tells them apart): for reports and redaction, not for refusing writes.
func (s *Scanner) ScanAll(text string) []Match { return s.matches(&s.all, text) }

func (s *Scanner) matches(x *keywordIndex, text string) []Match {
	var found []int
	s.scan(x, text, func(rule int) bool { found = append(found, rule); return true })
	if found == nil {
		return nil
	}
	sort.Ints(found)
	out := make([]Match, len(found))
	for i, r := range found {
		out[i] = Match{RuleID: s.rules[r].id, Label: label(s.rules[r].id)}
		if s.rules[r].low {
			out[i].Confidence = Low
		}
	}
	return out
}

// First returns the first high-confidence rule (in rule order) that
// matches text, and whether one did.
func (s *Scanner) First(text string) (Match, bool) {
	m := s.Scan(text)
	if len(m) == 0 {
		return Match{}, false
	}
	return m[0], true
}

// Redact replaces every match of every rule, low-confidence ones
// included, with "[REDACTED]".
func (s *Scanner) Redact(text string) string { return s.redact(text, true) }

// RedactBlocking replaces what the high-confidence rules match only (a
// provider's token, a private key): what blocks a shared write. A
// password assignment or the user part of a URL stays as written.
func (s *Scanner) RedactBlocking(text string) string { return s.redact(text, false) }

func (s *Scanner) redact(text string, low bool) string {
	for i := range s.rules {
		r := &s.rules[i]
		if r.low && !low {
			continue
		}
		var b strings.Builder
		last := 0
		for {
			start, end, ok := r.next(text, last)
			if !ok {
				break
			}
			b.WriteString(text[last:start])
			b.WriteString(redacted)
			last = end
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

// next finds the first token at or after from: the smallest start among
// the keyword hits whose anchored pattern matches.
func (r *secretRule) next(text string, from int) (start, end int, ok bool) {
	best := -1
	for _, k := range r.keywords {
		for pos := from + r.offset; pos < len(text); {
			i := strings.Index(text[pos:], k)
			if i < 0 {
				break
			}
			kw := pos + i
			pos = kw + 1
			s := kw - r.offset
			if s < from || (best >= 0 && s >= best) {
				continue
			}
			if e, hit := r.matchAt(text, s); hit {
				best, end = s, e
				break
			}
		}
	}
	return best, end, best >= 0
}

// matchAt reports whether a token starts exactly at s, and where it ends.
func (r *secretRule) matchAt(text string, s int) (int, bool) {
	if s > 0 && r.inToken[text[s-1]] {
		return 0, false
	}
	window := text[s:min(len(text), s+r.maxLen+1)]
	m := r.body.FindStringSubmatchIndex(window)
	if m == nil {
		return 0, false
	}
	if m[3] == len(window) && s+len(window) < len(text) {
		// The window cut the text: the token may continue past it.
		return 0, false
	}
	return s + m[3], true
}

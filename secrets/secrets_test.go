package secrets

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rep repeats an alphabet cyclically to n characters.
func rep(alphabet string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteByte(alphabet[i%len(alphabet)])
	}
	return b.String()
}

const (
	alnum = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU"
	hexLo = "0a1b2c3d4e5f6789"
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64   = "Ab3+De5/Fg7Hj9Kl"
)

// cat joins parts so that no complete token appears as a literal in this
// repository; each is built from the provider's documented format.
func cat(parts ...string) string { return strings.Join(parts, "") }

// samples has one true positive per rule.
func samples() map[string]string {
	return map[string]string{
		"aws-access-token":                   cat("AK", "IA", rep(upper, 16)),
		"gcp-api-key":                        cat("AI", "za", rep(alnum+"_-", 35)),
		"azure-ad-client-secret":             cat("abc", "8Q", "~", rep(alnum+"~._-", 34)),
		"digitalocean-pat":                   cat("dop", "_v1_", rep(hexLo, 64)),
		"digitalocean-access-token":          cat("doo", "_v1_", rep(hexLo, 64)),
		"anthropic-api-key":                  cat("sk-ant-", "api03-", rep(alnum+"_-", 93), "AA"),
		"anthropic-admin-api-key":            cat("sk-ant-", "admin01-", rep(alnum+"_-", 93), "AA"),
		"openai-api-key":                     cat("sk-", "proj-", rep(alnum, 58), "T3Blbk", "FJ", rep(alnum, 58)),
		"huggingface-access-token":           cat("hf", "_", rep("abcdefXYZqrs", 34)),
		"github-pat":                         cat("gh", "p_", rep(alnum, 36)),
		"github-fine-grained-pat":            cat("github", "_pat_", rep(alnum, 22), "_", rep(alnum, 59)),
		"github-app-token":                   cat("gh", "s_", rep(alnum, 36)),
		"github-oauth":                       cat("gh", "o_", rep(alnum, 36)),
		"github-refresh-token":               cat("gh", "r_", rep(alnum, 36)),
		"gitlab-pat":                         cat("gl", "pat-", rep(alnum, 20)),
		"gitlab-deploy-token":                cat("gl", "dt-", rep(alnum, 20)),
		"slack-bot-token":                    cat("xo", "xb-", "1234567890123-1234567890123-", rep(alnum, 24)),
		"slack-user-token":                   cat("xo", "xp-", "1234567890-1234567890-1234567890-", rep(alnum, 32)),
		"slack-app-token":                    cat("xa", "pp-1-", "A0123456789-1234567890123-", rep("abc123def456", 64)),
		"twilio-api-key":                     cat("S", "K", rep(hexLo, 32)),
		"sendgrid-api-token":                 cat("S", "G.", rep(alnum, 22), ".", rep(alnum+"_-", 43)),
		"npm-access-token":                   cat("np", "m_", rep(alnum, 36)),
		"pypi-upload-token":                  cat("pypi-", "AgEIcHlwaS5vcmc", rep(alnum+"_-", 70)),
		"databricks-api-token":               cat("da", "pi", rep(hexLo, 32)),
		"hashicorp-tf-api-token":             cat(rep(alnum, 14), ".atlas", "v1.", rep(alnum+"_-", 65)),
		"pulumi-api-token":                   cat("pu", "l-", rep(hexLo, 40)),
		"postman-api-token":                  cat("PM", "AK-", rep(hexLo, 24), "-", rep(hexLo, 34)),
		"grafana-api-key":                    cat("eyJr", "Ijoi", rep(alnum, 90), "=="),
		"grafana-cloud-api-token":            cat("gl", "c_", rep(b64, 80), "="),
		"grafana-service-account-token":      cat("gl", "sa_", rep(alnum, 32), "_", rep(hexLo, 8)),
		"sentry-user-token":                  cat("sntr", "yu_", rep(hexLo, 64)),
		"sentry-org-token":                   cat("sntr", "ys_", "eyJpYXQiO", rep(b64, 120), "_", rep(alnum, 43)),
		"stripe-access-token":                cat("sk", "_live_", rep(alnum, 24)),
		"shopify-access-token":               cat("shp", "at_", rep(hexLo, 32)),
		"shopify-shared-secret":              cat("shp", "ss_", rep(hexLo, 32)),
		"google-oauth-client-secret":         cat("GOC", "SPX-", rep(alnum+"_-", 28)),
		"anthropic-oauth-token":              cat("sk-ant-", "oat01-", rep(alnum+"_-", 93), "AA"),
		"openai-legacy-api-key":              cat("sk-", rep(alnum, 20), "T3Blbk", "FJ", rep(alnum, 20)),
		"supabase-secret-key":                cat("sb_", "secret_", rep(alnum+"_-", 40)),
		"supabase-access-token":              cat("sb", "p_", rep(hexLo, 40)),
		"gitlab-runner-authentication-token": cat("gl", "rt-", rep(alnum+"_-", 27)),
		"gitlab-oauth-app-secret":            cat("gl", "oas-", rep(alnum, 64)),
		"gitlab-pipeline-trigger-token":      cat("gl", "ptt-", rep(hexLo, 40)),
		"gitlab-kubernetes-agent-token":      cat("gl", "agent-", rep(alnum, 50)),
		"gitlab-incoming-mail-token":         cat("gl", "imt-", rep(alnum, 25)),
		"gitlab-scim-oauth-token":            cat("gl", "soat-", rep(alnum, 20)),
		"gitlab-ci-build-token":              cat("gl", "cbt-", "64", "_", rep(alnum, 20)),
		"gitlab-feed-token":                  cat("gl", "ft-", rep(alnum, 20)),
		"gitlab-feature-flag-client-token":   cat("gl", "ffct-", rep(alnum, 20)),
		"slack-rotation-token":               cat("xo", "xe-1-", rep(upper, 146)),
		"slack-workflow-token":               cat("xo", "xe.xoxp-1-", rep(upper, 164)),
		"slack-webhook-url":                  cat("hooks.", "slack.com/services/", "T0123ABCD/B0123ABCD/", rep(alnum, 24)),
		"private-key": cat("-----BEGIN ", "RSA PRIVATE KEY-----\n", rep(b64, 64), "\n", rep(b64, 64),
			"\n-----END ", "RSA PRIVATE KEY-----"),
		// Low confidence.
		"url-userinfo":              cat("postgres://", "admin:", "s3cretpass@", "db.internal:5432/app"),
		"url-userinfo-tail":         cat("https://", "deploy:", "pa/ss/word@", "git.example.com/repo"),
		"url-userinfo-later-at":     cat("https://", "deploy:", "p@ssword@", "git.example.com/repo"),
		"url-userinfo-encoded":      cat("next=https", "%3A%2F%2F", "bot%3A", "hunter2secret%40", "ci.example.com"),
		"gcp-service-account":       cat(`"private`, `_key_id": "`, rep(hexLo, 40), `"`),
		"loose-anthropic-key":       cat("sk-ant-", "sid01-", rep(alnum, 40)),
		"http-auth-scheme":          cat("Authorization: ", "Bearer ", rep(alnum, 32)),
		"loose-jwt":                 cat("ey", "J", rep(alnum, 20), ".ey", "J", rep(alnum, 30), ".", rep(alnum+"_-", 43)),
		"sensitive-assign":          cat("db_pass", "word = ", "Tr0ub4dor-x9"),
		"sensitive-assign-escaped":  cat(`{\"api`, `_key\":\"`, rep(alnum, 24), `\"}`),
		"cloud-env-var":             cat("AWS_SECRET", "_ACCESS_KEY=", rep(alnum+"/+", 40)),
		"masked-value-rest":         cat("key ", "****************", rep(alnum, 20)),
		"anthropic-signed-key-rest": cat("sk-ant-", "api03-", "...", rep(alnum, 30)),
	}
}

// lowSecrets is the secret part of each low-confidence sample: what
// redaction must remove (the rest of the shape may stay).
func lowSecrets() map[string]string {
	return map[string]string{
		"url-userinfo": "s3cretpass", "url-userinfo-tail": "pa/ss/word", "url-userinfo-later-at": "p@ssword",
		"url-userinfo-encoded": "hunter2secret", "gcp-service-account": rep(hexLo, 40), "loose-anthropic-key": rep(alnum, 40),
		"http-auth-scheme": rep(alnum, 32), "loose-jwt": rep(alnum, 30), "sensitive-assign": "Tr0ub4dor-x9",
		"sensitive-assign-escaped": rep(alnum, 24), "cloud-env-var": rep(alnum+"/+", 40), "masked-value-rest": rep(alnum, 20),
		"anthropic-signed-key-rest": rep(alnum, 30),
	}
}

// lowRules are the ids of the low-confidence rules.
func lowRules() map[string]bool {
	out := map[string]bool{}
	for _, r := range secretRules() {
		if r.low {
			out[r.id] = true
		}
	}
	return out
}

func TestSecretRulesTruePositives(t *testing.T) {
	s := New()
	ids := RuleIDs()
	require.Len(t, ids, 66, "52 high-confidence rules, private-key and 13 low-confidence rules")
	low := lowRules()
	require.Len(t, low, 13)
	sm := samples()
	require.Len(t, sm, 66, "one sample per rule")
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			token, ok := sm[id]
			require.True(t, ok, "no sample for %s", id)
			for _, text := range []string{token, "key: " + token + "\n", `"token": "` + token + `",`, "(" + token + ")"} {
				var hit bool
				for _, m := range s.ScanAll(text) {
					if m.RuleID == id {
						hit = true
						assert.Equal(t, label(id), m.Label)
						assert.Equal(t, low[id], m.Confidence == Low)
					}
					assert.NotContains(t, fmt.Sprintf("%+v", m), token[4:12], "results never carry the secret, in any field")
				}
				assert.True(t, hit, "%s not found in %q", id, text)
				blocked := false
				for _, m := range s.Scan(text) {
					blocked = blocked || m.RuleID == id
				}
				assert.Equal(t, !low[id], blocked, "only a high-confidence rule blocks (%s)", id)
			}
			red := s.Redact("before " + token + " after")
			if secret, ok := lowSecrets()[id]; ok {
				assert.NotContains(t, red, secret, "a low-confidence match is redacted")
				assert.Contains(t, red, "[REDACTED]")
			} else {
				assert.Equal(t, "before [REDACTED] after", red)
			}
		})
	}
}

func TestSecretNearMisses(t *testing.T) {
	misses := []string{
		cat("AK", "IA", rep(upper, 15)),                // too short
		cat("ak", "ia", rep(upper, 16)),                // wrong case
		cat("AK", "IA", rep("abcdefghijklmnop", 16)),   // lower-case body
		cat("XAK", "IA", rep(upper, 16)),               // inside a longer word
		cat("gh", "p_", rep(alnum, 35)),                // one short
		cat("gh", "p_", rep(alnum, 37)),                // one long
		cat("gh", "x_", rep(alnum, 36)),                // unknown prefix
		cat("sk-ant-", "api03-", rep(alnum, 93), "AB"), // wrong suffix
		cat("gl", "pat-", rep(alnum, 19)),
		cat("S", "K", rep("0123456789abcdeg", 32)), // not hex
		cat("np", "m_", rep(alnum, 20)),
		cat("sk", "_live_", "short"),
		cat("shp", "at_", rep("xyz", 32)),
		cat("-----BEGIN ", "PUBLIC KEY-----\n", rep(b64, 64), "\n-----END ", "PUBLIC KEY-----"),
		cat("-----BEGIN ", "RSA PRIVATE KEY-----\n", "-----END ", "RSA PRIVATE KEY-----"), // no body
		cat("GOC", "SPX-", rep(alnum, 27)),                                                // one short
		cat("sk-ant-", "oat01-", rep(alnum, 93), "AB"),                                    // wrong suffix
		cat("sb", "p_", rep("xyz", 40)),                                                   // not hex
		cat("gl", "ptt-", rep("XYZ", 40)),                                                 // not hex
		cat("gl", "cbt-", rep(alnum, 20)),                                                 // no part before "_"
		cat("gl", "ft-", rep(alnum, 19)),                                                  // one short
		cat("xo", "xe-1-", rep("abc", 146)),                                               // lower case
		cat("https://hooks.", "slack.com/services/", "T01"),                               // no secret part
		cat("sk-", rep(alnum, 19), "T3Blbk", "FJ", rep(alnum, 20)),
		"hf_short", "dapi-is-a-word", "xoxb-not-a-token", "the SKU list", "sk-learn", "task_dop_v1_",
	}
	s := New()
	for _, m := range misses {
		assert.Empty(t, s.Scan(m), "%q must not match", m)
	}
	// Nor do these match a low-confidence rule.
	lowMisses := []string{
		"see https://example.com/path?user=me@example.com", "mail deploy@example.com", "https://user@host.example.com/",
		"a password is needed to log in", "password: <ask the user>", "the token endpoint", "token = short",
		"Bearer tokens expire", "Basic auth", "eyJhbGciOiJIUzI1NiJ9.not-a-jwt", "AWS_SECRET_ACCESS_KEY is read from the vault",
		"**** the end ****", "sk-ant-short", `"private_key_id": "not-hex"`,
	}
	for _, m := range lowMisses {
		assert.Empty(t, s.ScanAll(m), "%q must not match", m)
	}
}

// cleanDocument builds about n bytes of realistic memory text with no
// credentials: prose, code, paths, hashes, UUIDs and base64 that is not a
// token.
func cleanDocument(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the build uses make generate before every commit integration tests hit a real database " +
		"deploys happen on tuesdays skip flaky tests in ci never mock the queue config lives in config/app.yaml " +
		"ask before changing the schema SKU order task_runner dop dapi hf sk learn pul api key token secret private")
	var b strings.Builder
	for b.Len() < n {
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "commit %x touched internal/store/%s.go:%d\n", r.Uint64(), words[r.IntN(len(words))], r.IntN(900))
		case 1:
			fmt.Fprintf(&b, "id %08x-%04x-%04x-%04x-%012x\n", r.Uint32(), r.IntN(1<<16), r.IntN(1<<16), r.IntN(1<<16), r.Uint64()&(1<<48-1))
		case 2:
			b.WriteString("```go\nfunc handle(ctx context.Context, req *Request) error {\n\treturn store.Save(ctx, req.Key)\n}\n```\n")
		default:
			for i := 0; i < 12; i++ {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString("\n")
		}
	}
	return b.String()[:n]
}

func TestCleanDocumentHasNoSecrets(t *testing.T) {
	doc := cleanDocument(250_000)
	s := New()
	assert.Empty(t, s.Scan(doc))
	assert.Equal(t, doc, s.Redact(doc))
}

func TestRedactSeveral(t *testing.T) {
	sm := samples()
	gh, npm := sm["github-pat"], sm["npm-access-token"]
	text := "a " + gh + " " + gh + "\nb=" + npm + "."
	assert.Equal(t, "a [REDACTED] [REDACTED]\nb=[REDACTED].", New().Redact(text))
	got := New().Scan(text)
	assert.Equal(t, []Match{{"github-pat", "GitHub PAT", High}, {"npm-access-token", "NPM Access Token", High}}, got)
}

func TestLabel(t *testing.T) {
	for id, want := range map[string]string{
		"github-pat": "GitHub PAT", "aws-access-token": "AWS Access Token", "azure-ad-client-secret": "Azure AD Client Secret",
		"hashicorp-tf-api-token": "HashiCorp TF API Token", "github-oauth": "GitHub OAuth", "pypi-upload-token": "PyPI Upload Token",
		"some-jwt": "Some JWT", "digitalocean-pat": "DigitalOcean PAT", "huggingface-access-token": "HuggingFace Access Token",
		"sendgrid-api-token": "SendGrid API Token", "openai-api-key": "OpenAI API Key", "gitlab-pat": "GitLab PAT",
	} {
		assert.Equal(t, want, label(id))
	}
}

func TestSlackWebhookWithItsScheme(t *testing.T) {
	url := cat("https://hooks.", "slack.com/services/", "T0123ABCD/B0123ABCD/", rep(alnum, 24))
	m, ok := New().First("post to " + url + " on deploy")
	require.True(t, ok)
	assert.Equal(t, "slack-webhook-url", m.RuleID)
	assert.Equal(t, "Slack Webhook Url", m.Label, "the label rule: only the listed words are special")
	assert.Equal(t, "GitLab CI Build Token", label("gitlab-ci-build-token"))
	assert.Equal(t, "GitLab SCIM OAuth Token", label("gitlab-scim-oauth-token"))
}

// TestOnePassScanAgreesWithEachRule: the one-pass keyword index finds
// exactly the rules that each rule's own search finds, on random texts
// made of true positives, near misses, keywords and noise.
func TestOnePassScanAgreesWithEachRule(t *testing.T) {
	s := New()
	var pieces []string
	for _, v := range samples() {
		pieces = append(pieces, v, v[:len(v)/2], v[1:])
	}
	for _, r := range s.rules {
		pieces = append(pieces, r.keywords...)
	}
	pieces = append(pieces, " ", "\n", "x", "_", "-", "/", "==", "https://")
	rng := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for k := rng.IntN(12); k >= 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		var want, wantAll []Match
		for i := range s.rules {
			if _, _, ok := s.rules[i].next(text, 0); ok {
				m := Match{RuleID: s.rules[i].id, Label: label(s.rules[i].id)}
				if s.rules[i].low {
					m.Confidence = Low
				} else {
					want = append(want, m)
				}
				wantAll = append(wantAll, m)
			}
		}
		require.Equal(t, want, s.Scan(text), "%q", text)
		require.Equal(t, wantAll, s.ScanAll(text), "%q", text)
	}
}

// BenchmarkScanSecrets reports the throughput of a secret scan over a
// 250 KB clean document (the largest entry a sync pushes).
func BenchmarkScanSecrets(b *testing.B) {
	doc := cleanDocument(250_000)
	s := New()
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := s.Scan(doc); got != nil {
			b.Fatalf("false positive: %v", got)
		}
	}
}

// BenchmarkScanSecretsWorstCase is the same document with every keyword
// prefix sprinkled through it, so every rule's pattern has to run.
func BenchmarkScanSecretsWorstCase(b *testing.B) {
	var kw strings.Builder
	for _, r := range secretRules() {
		for _, k := range r.keywords {
			kw.WriteString(" " + k + "x ")
		}
	}
	doc := cleanDocument(250_000-kw.Len()) + kw.String()
	s := New()
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Scan(doc)
	}
}

// BenchmarkScanAllSecrets is BenchmarkScanSecrets with the
// low-confidence rules too (ScanAll, what redaction reports).
func BenchmarkScanAllSecrets(b *testing.B) {
	doc := cleanDocument(250_000)
	s := New()
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := s.ScanAll(doc); got != nil {
			b.Fatalf("false positive: %v", got)
		}
	}
}

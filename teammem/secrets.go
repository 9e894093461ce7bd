package teammem

import "github.com/agentmem/agentmem/secrets"

// The secret scanner lives in package secrets; these names are the ones
// the team-memory API has always offered.
type (
	// Scanner finds credentials in text (secrets.Scanner).
	Scanner = secrets.Scanner
	// SecretMatch names a kind of secret found, never the secret.
	SecretMatch = secrets.Match
	// SecretError reports a write into the team directory refused because
	// the new text contains a credential (secrets.Error).
	SecretError = secrets.Error
)

// ErrSecret is matched (errors.Is) by every *SecretError.
var ErrSecret = secrets.ErrFound

// NewScanner returns a Scanner with the 36 built-in rules.
func NewScanner() *Scanner { return secrets.New() }

// SecretRuleIDs lists the IDs of every secret rule, in scan order.
func SecretRuleIDs() []string { return secrets.RuleIDs() }

// SecretLabel turns a rule ID into a name for people ("github-pat" →
// "GitHub PAT").
func SecretLabel(ruleID string) string { return secrets.Label(ruleID) }

// ScanSecrets returns one SecretMatch per rule that matches text.
func ScanSecrets(text string) []SecretMatch { return secrets.Scan(text) }

// RedactSecrets replaces every secret in text with "[REDACTED]".
func RedactSecrets(text string) string { return secrets.Redact(text) }

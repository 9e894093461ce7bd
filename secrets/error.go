package secrets

import "errors"

// ErrFound is matched (errors.Is) by every *Error.
var ErrFound = errors.New("secret in team memory write")

// Error reports a write refused because its text holds a credential. It
// names the kind of secret, never the secret, so its message is safe to
// return to a model.
type Error struct {
	RuleID string
	Label  string
	// Synced says the write was headed for private memory that is synced
	// to the user's account, not for team memory.
	Synced bool
}

func (e *Error) Error() string {
	if e.Synced {
		return "refusing to write a secret (" + e.Label + ") into memory, which is synced to your account; " +
			"remove it and write again"
	}
	return "refusing to write a secret (" + e.Label + ") into team memory, which every contributor can read; " +
		"remove it and write again"
}

// Is makes errors.Is(err, ErrFound) true.
func (e *Error) Is(target error) bool { return target == ErrFound }

// Check returns an *Error for the first secret in text, or nil. A nil
// Scanner means New().
func (s *Scanner) Check(text string) error {
	if s == nil {
		s = New()
	}
	if m, ok := s.First(text); ok {
		return &Error{RuleID: m.RuleID, Label: m.Label}
	}
	return nil
}

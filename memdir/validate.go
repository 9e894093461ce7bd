package memdir

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// ErrInvalidMemoryPath is matched (errors.Is) by every *MemoryPathError.
var ErrInvalidMemoryPath = errors.New("invalid memory path")

// The reasons ValidateMemoryPath gives. None of them echoes the path.
const (
	rejectEmpty        = "empty path"
	rejectNUL          = "path contains a NUL byte"
	rejectUNC          = "UNC network paths are not allowed"
	rejectTildeTrivial = "~ expansion must name a directory below the home directory"
	rejectNotAbsolute  = "path is not absolute"
	rejectTooShort     = "path is too short to be a memory directory"
	rejectDriveRoot    = "a drive root is not a memory directory"
)

// MemoryPathError reports a memory directory that failed validation. Its
// message carries only the reason, never the path, so it is safe to show to
// a model or a remote caller.
type MemoryPathError struct {
	// Reason says, in words, why ValidateMemoryPath refused the path.
	Reason string
}

func (e *MemoryPathError) Error() string { return "memdir: invalid memory path: " + e.Reason }

// Is makes errors.Is(err, ErrInvalidMemoryPath) true.
func (e *MemoryPathError) Is(target error) bool { return target == ErrInvalidMemoryPath }

var driveRoot = regexp.MustCompile(`^[A-Za-z]:$`)

// ValidateMemoryPath checks a candidate memory directory and returns it
// cleaned, NFC-normalised and ending in exactly one separator.
//
// When home is non-empty, a leading "~/" or "~\" is expanded against it; a
// remainder that stays at or above home ("~/", "~/.", "~/..", "~/a/..",
// "~/../x") is refused, since it would aim memory at the home directory or
// its parent. A bare "~" is never expanded and then fails as not absolute.
// Pass home == "" for sources that must not expand "~" (an explicit
// override).
//
// Refused: empty, any NUL byte, UNC prefixes ("\\" or "//"), a path that is
// not absolute after cleaning, shorter than 3 characters, or a bare drive
// root such as "C:". Errors are *MemoryPathError.
func ValidateMemoryPath(raw, home string) (string, error) {
	reject := func(r string) (string, error) { return "", &MemoryPathError{Reason: r} }
	if raw == "" {
		return reject(rejectEmpty)
	}
	if strings.IndexByte(raw, 0) >= 0 {
		return reject(rejectNUL)
	}
	candidate := raw
	expanded := home != "" && (strings.HasPrefix(raw, "~/") || strings.HasPrefix(raw, `~\`))
	if expanded {
		candidate = filepath.Clean(home) + string(filepath.Separator) + raw[2:]
	}
	if strings.HasPrefix(candidate, `\\`) || strings.HasPrefix(candidate, "//") {
		return reject(rejectUNC)
	}
	// Trailing separators of either kind go before cleaning, so a trailing
	// backslash cannot hide a ".." from Clean.
	trimmed := strings.TrimRight(candidate, `/\`)
	if trimmed == "" {
		trimmed = candidate[:1]
	}
	cleaned := filepath.Clean(trimmed)
	if expanded {
		// The expansion must land strictly below home: "~/", "~/.", "~//",
		// "~/a/.." and "~/../x" would aim memory at home or above it.
		rel, err := filepath.Rel(filepath.Clean(home), cleaned)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return reject(rejectTildeTrivial)
		}
	}
	switch {
	case !filepath.IsAbs(cleaned):
		return reject(rejectNotAbsolute)
	case utf16Len(cleaned) < 3: // counted as Claude Code counts, before NFC
		return reject(rejectTooShort)
	case driveRoot.MatchString(cleaned):
		return reject(rejectDriveRoot)
	}
	return norm.NFC.String(cleaned + string(filepath.Separator)), nil
}

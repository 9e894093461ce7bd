package teammem

import (
	"errors"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// TeamMemPath returns the team directory of an auto-memory directory:
// <autoMemDir>/team/, NFC-normalised, with one trailing separator so that
// a prefix check never matches a sibling such as team-old/.
func TeamMemPath(autoMemDir string) string { return memdir.TeamMemPath(autoMemDir) }

// TeamMemoryEnabled reports whether team memory is on: auto memory must be
// on and the host's own gate must allow it.
func TeamMemoryEnabled(autoMemoryEnabled, hostGate bool) bool {
	return autoMemoryEnabled && hostGate
}

// TeamMemoryActive reports whether the team section belongs in the prompt:
// team memory is enabled and the last sync found content on the server.
func TeamMemoryActive(enabled, serverHasContent bool) bool {
	return enabled && serverHasContent
}

// IsTeamMemPath reports whether path, cleaned and made absolute, lies
// inside teamDir. It is a pure string check: no gate, no filesystem, no
// symlinks (use ValidateTeamMemWritePath before writing).
func IsTeamMemPath(teamDir, path string) bool {
	if path == "" || !filepath.IsAbs(path) {
		return false
	}
	return strings.HasPrefix(filepath.Clean(path), withSep(teamDir))
}

// IsTeamMemFile reports whether path is inside teamDir and team memory is
// enabled.
func IsTeamMemFile(teamDir, path string, enabled bool) bool {
	return enabled && IsTeamMemPath(teamDir, path)
}

// withSep returns dir cleaned, NFC-normalised, with one trailing separator.
func withSep(dir string) string {
	return norm.NFC.String(strings.TrimSuffix(filepath.Clean(dir), string(filepath.Separator)) + string(filepath.Separator))
}

// SanitizeKey applies the seven key checks, in order, and returns the first
// failure as a *PathTraversalError:
//
//  1. a NUL byte anywhere;
//  2. percent-encoding: when the key decodes (repeatedly, to catch double
//     encoding) to something different that contains "..", "/", "\" or
//     NUL, or is not valid UTF-8 (overlong forms); a key with malformed
//     escapes is taken literally;
//  3. Unicode compatibility forms: when NFKC(key) differs and contains
//     "..", "/", "\" or NUL (fullwidth "．．／", "‥", "﹒﹒", ...);
//  4. any backslash;
//  5. a character that looks like a slash, a backslash or a dot
//     (teamwire.Lookalike: U+2215, U+2044, a fullwidth dot...);
//  6. a leading "/";
//  7. invalid UTF-8, or a control or format character (an escape sequence
//     that a teammate's terminal would run when the key is printed).
//
// It does not check length or containment: ValidateTeamMemKey does.
func SanitizeKey(key string) error { return fromWire(teamwire.SanitizeKey(key)) }

// fromWire turns the wire package's key refusal into a *PathTraversalError
// with the same reason.
func fromWire(err error) error {
	var ke *teamwire.KeyError
	if errors.As(err, &ke) {
		return traversal(memdir.TraversalReason(ke.Reason), ke.Key)
	}
	return err
}

// ValidateTeamMemKey turns a sync key such as "notes/ci.md" into the
// absolute path to use under teamDir, or explains with a
// *PathTraversalError why it must not be used: the key fails SanitizeKey,
// is longer than teamwire.MaxKeyLength (or has a segment over teamwire.MaxKeySegmentLength),
// does not name something strictly inside teamDir once cleaned (so
// "../x", "a/../../x" and a sibling "team-evil/" never pass), or reaches
// outside teamDir through a symbolic link (see ValidateTeamMemWritePath).
func ValidateTeamMemKey(fsys afero.Fs, teamDir, key string) (string, error) {
	if err := SanitizeKey(key); err != nil {
		return "", err
	}
	if len(key) > teamwire.MaxKeyLength {
		return "", traversal(memdir.ReasonTooLong, key)
	}
	for _, seg := range strings.Split(key, "/") {
		if len(seg) > teamwire.MaxKeySegmentLength {
			return "", traversal(memdir.ReasonTooLong, key)
		}
	}
	// Judge the key on its own first: joined to a root of "/", a leading
	// ".." would be clamped away by cleaning and look harmless.
	clean := path.Clean(key)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", traversal(memdir.ReasonEscapes, key)
	}
	root := withSep(teamDir)
	full := filepath.Join(root, filepath.FromSlash(clean))
	if !strings.HasPrefix(full, root) {
		return "", traversal(memdir.ReasonEscapes, key)
	}
	if err := memdir.CheckTeamContainment(fsys, root, clean); err != nil {
		var pte *PathTraversalError
		if errors.As(err, &pte) {
			pte.Key = key
		}
		return "", err
	}
	return full, nil
}

// ValidateTeamMemWritePath checks an absolute path that a model or a tool
// wants to write inside teamDir and returns it cleaned. It refuses, with a
// *PathTraversalError: a NUL byte, a relative path, a path that is not
// strictly inside teamDir once cleaned (a sibling that shares the prefix,
// such as team-evil/, included), and any path whose existing part reaches
// outside teamDir through symbolic links: a link that leads out, a chain
// of links, a linked middle directory, a dangling link (a write would
// create its target wherever it points), a link loop. Errors other than
// "does not exist" while checking fail closed. A teamDir that does not
// exist yet is fine.
//
// The check and the write are separate steps: on a real disk, run the
// write through a confined filesystem (package rootfs) as well, so a link
// swapped in between cannot redirect it.
func ValidateTeamMemWritePath(fsys afero.Fs, teamDir, absPath string) (string, error) {
	if strings.IndexByte(absPath, 0) >= 0 {
		return "", traversal(memdir.ReasonNUL, "")
	}
	if !filepath.IsAbs(absPath) {
		return "", traversal(memdir.ReasonNotAbsolute, "")
	}
	root := withSep(teamDir)
	full := filepath.Clean(absPath)
	if !strings.HasPrefix(full, root) {
		return "", traversal(memdir.ReasonEscapes, "")
	}
	if err := memdir.CheckTeamContainment(fsys, root, strings.TrimPrefix(full, root)); err != nil {
		return "", err
	}
	return full, nil
}

// validateKeySyntax checks a sync key without a filesystem, as the sync
// server does for every key it receives: SanitizeKey, the length limits,
// and a clean relative "/"-separated path (no empty, "." or ".." segment,
// no trailing "/"). It returns a *PathTraversalError.
func validateKeySyntax(key string) error { return fromWire(teamwire.ValidateKeySyntax(key)) }

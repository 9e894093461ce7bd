package teamserver

import (
	"errors"
	"maps"
	"slices"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/screen"
)

// screenEntry returns the screens' refusal of content written at key (a
// team key or a store path), or nil: everything the server holds is
// shared (screen.CheckShared, the check the sync clients make before
// they send).
func screenEntry(key, content string) *screen.Error {
	err := screen.CheckShared(key, content)
	var se *screen.Error
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// screenCode is the error code of a screen's refusal.
func screenCode(se *screen.Error) string {
	switch se.Screen {
	case screen.ScreenInvisible:
		return teamwire.CodeInvisibleCharacter
	case screen.ScreenIndexLink:
		return teamwire.CodeIndexLink
	}
	return teamwire.CodeInjection
}

// entryKeys returns m's keys in byte order, so the refusal of a batch
// names the same entry every time.
func entryKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

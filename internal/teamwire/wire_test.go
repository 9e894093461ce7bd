package teamwire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateKeySyntax(t *testing.T) {
	for key, reason := range map[string]string{
		"a\x00b": ReasonNUL, "%2e%2e/x": ReasonEncoded, "%252e%252e%252fx": ReasonEncoded, "．．/x": ReasonUnicode,
		"a\\b": ReasonBackslash, "/etc/passwd": ReasonAbsolute, "": ReasonTooLong, strings.Repeat("a", 256): ReasonTooLong,
		"a/../b": ReasonEscapes, "a//b": ReasonEscapes, "a/": ReasonEscapes, "./a": ReasonEscapes,
		// What a memory-store path refuses too: C0 and C1 controls (a
		// terminal's title sequence), format characters (a bidi override,
		// a zero-width space), line separators, invalid UTF-8.
		"a\u001b]0;TITLE\u0007.md": ReasonControl, "a\u009b31m.md": ReasonControl, "a\u202egpj.md": ReasonControl,
		"a\u200bb.md": ReasonControl, "a\u2028b.md": ReasonControl, "caf\xe9.md": ReasonControl, "a\tb.md": ReasonControl,
	} {
		err := ValidateKeySyntax(key)
		var ke *KeyError
		if assert.ErrorAs(t, err, &ke, "%q", key) {
			assert.Equal(t, reason, ke.Reason, "%q", key)
			assert.NotContains(t, err.Error(), key+"/", "the message never holds the key")
		}
	}
	for _, ok := range []string{"ci.md", "notes/deploys.md", "a.b.md", "é.md"} {
		assert.NoError(t, ValidateKeySyntax(ok), ok)
	}
}

func TestChecksums(t *testing.T) {
	a := EntryChecksum("hello")
	assert.True(t, strings.HasPrefix(a, "sha256:"))
	assert.Equal(t, RepoChecksum(map[string]string{"x": a, "y": EntryChecksum("y")}), RepoChecksum(map[string]string{"y": EntryChecksum("y"), "x": a}))
	assert.NotEqual(t, RepoChecksum(map[string]string{"x": a}), RepoChecksum(map[string]string{"z": a}))
}

// A write's record laid over a sync client's own provenance: its door
// always, its session and origin where it names them; a record without a
// door, or one not valid on the wire, leaves the client's own.
func TestProvenanceOverlay(t *testing.T) {
	own := Provenance{Door: DoorSync, Session: "watcher"}
	got, ok := own.Overlay(DoorMCP, "", OriginToolOutput)
	assert.True(t, ok)
	assert.Equal(t, Provenance{Door: DoorMCP, Session: "watcher", Origin: OriginToolOutput}, got)
	got, ok = own.Overlay(DoorConsolidation, "s-1", "")
	assert.True(t, ok)
	assert.Equal(t, Provenance{Door: DoorConsolidation, Session: "s-1"}, got)
	for _, rec := range [][3]string{{"", "s-1", OriginFetched}, {DoorMCP, "bad session\n", ""}, {DoorMCP, "", "somewhere"}} {
		got, ok = own.Overlay(rec[0], rec[1], rec[2])
		assert.False(t, ok, "%q", rec)
		assert.Equal(t, own, got)
	}
}

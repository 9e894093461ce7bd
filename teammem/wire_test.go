package teammem

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// The wire package's key reasons must read as memdir's: teammem turns one
// into the other by value.
func TestWireReasonsMatchMemdir(t *testing.T) {
	for w, m := range map[string]memdir.TraversalReason{
		teamwire.ReasonNUL: memdir.ReasonNUL, teamwire.ReasonEncoded: memdir.ReasonEncoded, teamwire.ReasonUnicode: memdir.ReasonUnicode,
		teamwire.ReasonBackslash: memdir.ReasonBackslash, teamwire.ReasonAbsolute: memdir.ReasonAbsolute,
		teamwire.ReasonTooLong: memdir.ReasonTooLong, teamwire.ReasonEscapes: memdir.ReasonEscapes,
	} {
		assert.Equal(t, string(m), w)
	}
	err := validateKeySyntax("a/../../etc/passwd")
	var pte *PathTraversalError
	assert.ErrorAs(t, err, &pte)
	assert.Equal(t, memdir.ReasonEscapes, pte.Reason)
}

package teammem

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// The wire package's key reasons must read as memdir's: teammem turns one
// into the other by value.
func TestWireReasonsMatchMemdir(t *testing.T) {
	for w, m := range map[string]memdir.TraversalReason{
		wire.ReasonNUL: memdir.ReasonNUL, wire.ReasonEncoded: memdir.ReasonEncoded, wire.ReasonUnicode: memdir.ReasonUnicode,
		wire.ReasonBackslash: memdir.ReasonBackslash, wire.ReasonAbsolute: memdir.ReasonAbsolute,
		wire.ReasonTooLong: memdir.ReasonTooLong, wire.ReasonEscapes: memdir.ReasonEscapes,
	} {
		assert.Equal(t, string(m), w)
	}
	err := validateKeySyntax("a/../../etc/passwd")
	var pte *PathTraversalError
	assert.ErrorAs(t, err, &pte)
	assert.Equal(t, memdir.ReasonEscapes, pte.Reason)
}

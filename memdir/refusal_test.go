package memdir

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentmem-sdk/agentmem/secrets"
)

// One wording for every refusal, whichever tool met it.
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&PathTraversalError{Reason: ReasonNotMemoryPath}, "refused: notes/x.md is outside the memory directory"},
		{fmt.Errorf("wrapped: %w", &PathTraversalError{Reason: ReasonSymlinkEscape}), "refused: notes/x.md would escape the memory directory (" + string(ReasonSymlinkEscape) + ")"},
		{&secrets.Error{RuleID: "github-pat", Label: "GitHub PAT"}, "refused: notes/x.md would hold a credential (GitHub PAT), and team memory is shared with every contributor; remove the secret and try again"},
		{&secrets.Error{RuleID: "github-pat", Label: "GitHub PAT", Synced: true}, "refused: notes/x.md would hold a credential (GitHub PAT), and this memory is synced to your account; remove the secret and try again"},
		{ErrCrossRoot, "refused: notes/x.md cannot move into or out of the team directory; move its files one by one"},
	} {
		r := Refusal("notes/x.md", "memory", c.err)
		if assert.NotNil(t, r, "%v", c.err) {
			assert.Equal(t, c.want, r.Error())
		}
	}
	assert.Nil(t, Refusal("x", "memory", errors.New("disk full")), "not a refusal")
	assert.Equal(t, "refused: the path is outside the /memories directory", Refusal("", "/memories", &PathTraversalError{Reason: ReasonNotMemoryPath}).Error())
}

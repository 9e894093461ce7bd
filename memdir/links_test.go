package memdir

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLinkNames(t *testing.T) {
	assert.Equal(t, []string{"deploy_window", "deploy-window"}, LinkNames("team/deploy_window.md", " Deploy-Window "))
	assert.Equal(t, []string{"oncall"}, LinkNames("oncall.md", "oncall"), "one key when name and file agree")
	assert.Equal(t, []string{"oncall"}, LinkNames("oncall.md", ""))
	assert.Equal(t, "deploy-window", LinkKey(" Deploy-Window"))
}

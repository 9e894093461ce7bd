package memdir

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolCallFromJSON(t *testing.T) {
	c, err := ToolCallFromJSON("Write", []byte(`{"file_path":"/m/team/x.md","content":"hi","n":3}`))
	require.NoError(t, err)
	assert.Equal(t, "Write", c.Name)
	assert.Equal(t, "/m/team/x.md", c.String("file_path"))
	assert.Equal(t, "", c.String("n"), "not text")
	assert.Equal(t, "", c.String("missing"))
	_, err = ToolCallFromJSON("Write", []byte(`[1,2]`))
	assert.ErrorContains(t, err, "not a JSON object")
	c, err = ToolCallFromJSON("List", nil)
	require.NoError(t, err)
	assert.Nil(t, c.Input)
}

package edits

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApply(t *testing.T) {
	got, err := Apply("a b a", []Edit{{Old: "b", New: "c"}, {Old: "a", New: "x", All: true}})
	require.NoError(t, err)
	assert.Equal(t, "x c x", got, "each edit sees the text the ones before it left")

	_, err = Apply("a b a", []Edit{{Old: "b", New: "c"}, {Old: "a", New: "x"}})
	var ee *Error
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, Error{Index: 1, Count: 2}, *ee, "ambiguous without All")
	_, err = Apply("a", []Edit{{Old: "z", New: "y"}})
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, Error{Index: 0, Count: 0}, *ee)
	_, err = Apply("a", []Edit{{Old: "", New: "y"}})
	assert.ErrorAs(t, err, &ee, "an empty old_string never applies")
}

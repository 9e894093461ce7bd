package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAnywhere(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		dir  string
		pos  []string
	}{
		{[]string{"deploy friday", "--dir", "X"}, "X", []string{"deploy friday"}},
		{[]string{"--dir", "X", "deploy friday"}, "X", []string{"deploy friday"}},
		{[]string{"a", "--dir=X", "b"}, "X", []string{"a", "b"}},
		{[]string{"--", "--dir", "X"}, "", []string{"--dir", "X"}},
		{[]string{"a", "--", "-b"}, "", []string{"a", "-b"}},
		{nil, "", nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		dir := fs.String("dir", "", "")
		pos, err := parseAnywhere(fs, c.args)
		require.NoError(t, err, "%v", c.args)
		assert.Equal(t, c.dir, *dir, "%v", c.args)
		assert.Equal(t, c.pos, pos, "%v", c.args)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := parseAnywhere(fs, []string{"a", "--nope"})
	assert.Error(t, err, "an unknown flag after the argument is an error, not ignored")
}

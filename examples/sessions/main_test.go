package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostRecordsResumesAndDreams: a host records five sessions, lists,
// resumes and continues one, and dream passes its session gate without
// Force and searches the recorded sessions in its run.
func TestHostRecordsResumesAndDreams(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), &out, afero.NewOsFs(), t.TempDir(), "/work/shop"))
	s := out.String()
	assert.Contains(t, s, "5 sessions in -work-shop")
	assert.Contains(t, s, "Flaky checkout test")
	assert.Contains(t, s, "4 messages, last: \"The db team owns migrations/.\"")
	assert.Contains(t, s, "continued: 6 messages now")
	assert.Contains(t, s, "dream: ran=true over 5 sessions")
	assert.Contains(t, s, "dream searched the sessions: session ")
	// Search covers tool results too: the best match in the refunds
	// session is the tool's answer.
	assert.Contains(t, s, "(Where do refunds go?): calls the refunds service")
}

package foldersync

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDecide(t *testing.T) {
	then := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	later := then.Add(time.Hour)
	for name, c := range map[string]struct {
		s           pathState
		keep, reset bool
		want        action
	}{
		"equal":                      {s: pathState{l: "s1", r: "s1", b: "s1"}, want: actNone},
		"local edit":                 {s: pathState{l: "s2", r: "s1", b: "s1"}, want: actPush},
		"remote edit":                {s: pathState{l: "s1", r: "s3", b: "s1"}, want: actPull},
		"both edit":                  {s: pathState{l: "s2", r: "s3", b: "s1"}, want: actConflict},
		"local delete":               {s: pathState{r: "s1", b: "s1"}, want: actDeleteThere},
		"remote delete, evidence":    {s: pathState{l: "s1", b: "s1", deleted: then}, want: actDeleteHere},
		"remote lost, no evidence":   {s: pathState{l: "s1", b: "s1"}, want: actPush},
		"local delete, remote edit":  {s: pathState{r: "s3", b: "s1"}, want: actPull},
		"remote delete, local edit":  {s: pathState{l: "s2", b: "s1", deleted: then}, want: actPush},
		"gone both":                  {s: pathState{b: "s1"}, want: actForget},
		"new here":                   {s: pathState{l: "s2"}, want: actPush},
		"new there":                  {s: pathState{r: "s3"}, want: actPull},
		"new both, different":        {s: pathState{l: "s2", r: "s3"}, want: actDiverged},
		"new both, local newer":      {s: pathState{l: "s2", r: "s3", mtime: later, written: then}, want: actKeepLocal},
		"new both, remote newer":     {s: pathState{l: "s2", r: "s3", mtime: then, written: later}, want: actDiverged},
		"new both, within the slack": {s: pathState{l: "s2", r: "s3", mtime: then.Add(clockSlack / 2), written: then}, want: actDiverged},
		"new both, same":             {s: pathState{l: "s3", r: "s3"}, want: actNone},
		"stale copy":                 {s: pathState{l: "s1", deleted: later, mtime: then}, want: actStale},
		"copy newer than deletion":   {s: pathState{l: "s1", deleted: then, mtime: later}, want: actPush},
		"keep deleted, here":         {s: pathState{r: "s1", b: "s1"}, keep: true, want: actRestore},
		"keep deleted, there":        {s: pathState{l: "s1", b: "s1", deleted: then}, keep: true, want: actNone},
		"reset, both differ":         {s: pathState{l: "s2", r: "s3", b: "s1"}, reset: true, want: actKeepLocal},
		"reset, remote lacks it":     {s: pathState{l: "s1", b: "s1", deleted: then}, reset: true, want: actPush},
		"reset, local lacks it":      {s: pathState{r: "s1", b: "s1"}, reset: true, want: actPull},
	} {
		assert.Equal(t, c.want, decide(c.s, c.keep, c.reset), name)
	}
}

func TestFolderClashes(t *testing.T) {
	set := func(ps ...string) map[string]bool {
		out := map[string]bool{}
		for _, p := range ps {
			out[p] = true
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		paths  map[string]bool
		locals map[string]*local
		want   map[string]string
	}{
		{"no clash", set("a.md", "a.mdx/b.md", "dir/b.md"), nil, map[string]string{}},
		{"both only on the remote: both left", set("clash.md", "clash.md/inner.md"), nil,
			map[string]string{"clash.md": "clash.md/inner.md", "clash.md/inner.md": "clash.md"}},
		{"the file is here: the path below it is left", set("clash.md", "clash.md/inner.md"), map[string]*local{"clash.md": {}},
			map[string]string{"clash.md/inner.md": "clash.md"}},
		{"the path below is here: the file is left", set("clash.md", "clash.md/inner.md"), map[string]*local{"clash.md/inner.md": {}},
			map[string]string{"clash.md": "clash.md/inner.md"}},
		{"deeper", set("a", "a/b/c.md"), nil, map[string]string{"a": "a/b/c.md", "a/b/c.md": "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, folderClashes(tc.paths, tc.locals))
		})
	}
}

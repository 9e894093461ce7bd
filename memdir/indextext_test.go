package memdir

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIndexTextEdits: IndexWithoutPointers drops every line linking the
// target (also as ./target) and keeps the others byte for byte;
// IndexWithPointer adds a pointer once and never twice.
func TestIndexTextEdits(t *testing.T) {
	index := "# Notes\n- [A](a.md) — first\n- [B](./b.md)\n- [A again](a.md)\n- [AB](ab.md)\n"
	got, dropped := IndexWithoutPointers(index, "a.md")
	assert.True(t, dropped)
	assert.Equal(t, "# Notes\n- [B](./b.md)\n- [AB](ab.md)\n", got)
	same, dropped := IndexWithoutPointers(got, "a.md")
	assert.False(t, dropped)
	assert.Equal(t, got, same)
	only, dropped := IndexWithoutPointers("- [B](b.md)\n", "b.md")
	assert.True(t, dropped)
	assert.Empty(t, only)

	added, ok := IndexWithPointer(got, "a.md", Memory{Name: "A", Description: "first"})
	assert.True(t, ok)
	assert.Equal(t, got+IndexLine(Memory{Name: "A", Description: "first"}, "a.md")+"\n", added)
	again, ok := IndexWithPointer(added, "a.md", Memory{Name: "other"})
	assert.False(t, ok)
	assert.Equal(t, added, again)
	fresh, ok := IndexWithPointer("", "c.md", Memory{})
	assert.True(t, ok)
	assert.Equal(t, "- [c](c.md)\n", fresh)
}

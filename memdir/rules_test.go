package memdir

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSaveRefusesWhatLintReports: Save writes nothing that breaks a rule
// lint reports (CheckMemoryFile, CheckIndexLine), and refuses it with the
// same *MemoryError.
func TestSaveRefusesWhatLintReports(t *testing.T) {
	cases := []struct {
		name string
		m    Memory
		want string
	}{
		{"body not UTF-8", Memory{Name: "Deploys", Description: "when we deploy", Body: "Tuesdays \xff\xfe"}, problemNotText},
		{"NUL in the body", Memory{Name: "Deploys", Description: "when we deploy", Body: "Tues\x00days"}, problemNotText},
		{"name too long for the index", Memory{File: "deploys.md", Name: strings.Repeat("n", 5000), Description: "when we deploy", Body: "Tuesdays."}, problemLongEntry},
		{"file name with a control character", Memory{File: "de\x07ploys.md", Name: "Deploys", Description: "d", Body: "Tuesdays."}, problemFileName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			d, err := NewDir(fsys, "/mem", DirOptions{})
			require.NoError(t, err)
			_, err = d.Save(context.Background(), c.m)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidMemory)
			var me *MemoryError
			require.True(t, errors.As(err, &me), "a *MemoryError: %v", err)
			assert.Equal(t, c.want, me.Problem)
			files, _ := afero.ReadDir(fsys, "/mem")
			assert.Empty(t, files, "nothing is written")
		})
	}
}

// TestCheckMemoryFileAcceptsWhatSaveWrites: a memory Save writes breaks no
// rule, and a body of any valid text stays accepted.
func TestCheckMemoryFileAcceptsWhatSaveWrites(t *testing.T) {
	fsys := afero.NewMemMapFs()
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)
	res, err := d.Save(context.Background(), Memory{Name: "Déploiements: mardi", Description: "quand on déploie", Body: "Le mardi. 日本語"})
	require.NoError(t, err)
	data, err := afero.ReadFile(fsys, res.Path)
	require.NoError(t, err)
	assert.Empty(t, CheckMemoryFile(res.File, data))
	assert.Nil(t, CheckIndexLine(res.IndexLine))
}

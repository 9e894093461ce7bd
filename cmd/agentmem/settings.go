package main

import (
	"encoding/json"
	"path/filepath"

	"github.com/agentmem/agentmem/memdir"
	"github.com/spf13/afero"
)

// readSettings reads autoMemoryDirectory from the settings files the
// command can see: user (<config>/settings.json), local
// (<project>/.claude/settings.local.json) and project
// (<project>/.claude/settings.json, reported but never trusted).
func readSettings(fsys afero.Fs, configHome, project string) (map[memdir.SettingSource]string, []string) {
	files := []struct {
		src  memdir.SettingSource
		path string
	}{
		{memdir.SourceUser, filepath.Join(configHome, "settings.json")},
		{memdir.SourceLocal, filepath.Join(project, ".claude", "settings.local.json")},
		{memdir.SourceProject, filepath.Join(project, ".claude", "settings.json")},
	}
	out := map[memdir.SettingSource]string{}
	var ignored []string
	for _, f := range files {
		data, err := afero.ReadFile(fsys, f.path)
		if err != nil {
			continue
		}
		var s struct {
			AutoMemoryDirectory string `json:"autoMemoryDirectory"`
		}
		if json.Unmarshal(data, &s) != nil || s.AutoMemoryDirectory == "" {
			continue
		}
		if !f.src.Trusted() {
			ignored = append(ignored, f.src.String()+" settings set autoMemoryDirectory (ignored: project settings are never trusted)")
			continue
		}
		out[f.src] = s.AutoMemoryDirectory
	}
	return out, ignored
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/memdir"
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

// autoMemorySetting is autoMemoryEnabled from the settings files, later
// ones winning (user, then project, then local), or nil when none sets it.
// Project settings may turn memory off: unlike a directory, an opt-out is
// safe to trust.
func autoMemorySetting(fsys afero.Fs, configHome, project string) *bool {
	var out *bool
	for _, p := range []string{
		filepath.Join(configHome, "settings.json"),
		filepath.Join(project, ".claude", "settings.json"),
		filepath.Join(project, ".claude", "settings.local.json"),
	} {
		data, err := afero.ReadFile(fsys, p)
		if err != nil {
			continue
		}
		var s struct {
			AutoMemoryEnabled *bool `json:"autoMemoryEnabled"`
		}
		if json.Unmarshal(data, &s) == nil && s.AutoMemoryEnabled != nil {
			out = s.AutoMemoryEnabled
		}
	}
	return out
}

// errMemoryDisabled says the enable chain turned memory off.
var errMemoryDisabled = errors.New("auto memory is disabled here (CLAUDE_CODE_DISABLE_AUTO_MEMORY, CLAUDE_CODE_SIMPLE, CLAUDE_CODE_REMOTE, or autoMemoryEnabled: false in settings); nothing was done")

// memoryEnabled applies the enable chain to the process and the settings.
func memoryEnabled(e env, c *common, project string) bool {
	var setting *bool
	if home, err := configHome(e, c); err == nil {
		setting = autoMemorySetting(e.fs, home, project)
	}
	return memdir.IsAutoMemoryEnabled(e.getenv, setting)
}

// existingMemory resolves the memory directory for a command that needs
// one: memory must be enabled and the directory must exist.
func existingMemory(e env, c *common) (resolved, error) {
	r, err := resolve(e, c)
	if err != nil {
		return r, err
	}
	if !memoryEnabled(e, c, r.project) {
		return r, errMemoryDisabled
	}
	info, err := e.fs.Stat(r.path.Dir)
	if err != nil || !info.IsDir() {
		return r, fmt.Errorf("no memory directory at %s yet: save a first memory with agentmem new (see agentmem new --help and agentmem path)", r.path.Dir)
	}
	return r, nil
}

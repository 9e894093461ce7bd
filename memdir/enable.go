package memdir

import "strings"

// EnvBool is the three-valued reading of a boolean environment variable.
type EnvBool int8

const (
	// EnvUnset means the variable is absent or holds no recognised value.
	EnvUnset EnvBool = iota
	// EnvTrue means the value is one of 1, true, yes, on.
	EnvTrue
	// EnvFalse means the value is one of 0, false, no, off.
	EnvFalse
)

// parseEnvBool reads a boolean environment value the way Claude Code does:
// trimmed and lower-cased, "1 true yes on" are true, "0 false no off" are
// false, anything else (including "") is unset.
func parseEnvBool(v string) EnvBool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return EnvTrue
	case "0", "false", "no", "off":
		return EnvFalse
	}
	return EnvUnset
}

// EnableSettings is everything the auto-memory enable chain looks at. The
// host fills it from its own environment and settings; EnableSettingsFromEnv
// fills the environment part using Claude Code's variable names.
type EnableSettings struct {
	// DisableAutoMemory: true turns memory off, an explicit false turns it
	// on and wins over every later rule.
	DisableAutoMemory EnvBool
	// Simple (bare mode) turns memory off when true.
	Simple EnvBool
	// Remote turns memory off when true and RemoteMemoryDir is empty.
	Remote EnvBool
	// RemoteMemoryDir is where a remote session keeps memory.
	RemoteMemoryDir string
	// AutoMemoryEnabled is the merged settings value, nil when no settings
	// file defines it. Project settings may opt out here.
	AutoMemoryEnabled *bool
}

// IsAutoMemoryEnabled applies the enable chain; the first rule that matches
// wins:
//
//  1. DisableAutoMemory true → off; explicitly false → on.
//  2. Simple true → off.
//  3. Remote true without a RemoteMemoryDir → off.
//  4. AutoMemoryEnabled, when set.
//  5. On.
func IsAutoMemoryEnabled(s EnableSettings) bool {
	switch s.DisableAutoMemory {
	case EnvTrue:
		return false
	case EnvFalse:
		return true
	}
	if s.Simple == EnvTrue {
		return false
	}
	if s.Remote == EnvTrue && s.RemoteMemoryDir == "" {
		return false
	}
	if s.AutoMemoryEnabled != nil {
		return *s.AutoMemoryEnabled
	}
	return true
}

// EnvNames names the environment variables that EnableSettingsFromEnv and
// AutoMemPathRequestFromEnv read. A host that uses its own names sets them
// here; DefaultEnvNames returns Claude Code's.
type EnvNames struct {
	DisableAutoMemory string
	Simple            string
	Remote            string
	RemoteMemoryDir   string
	ConfigDir         string
	PathOverride      string
}

// DefaultEnvNames returns the variable names Claude Code uses.
func DefaultEnvNames() EnvNames {
	return EnvNames{
		DisableAutoMemory: "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
		Simple:            "CLAUDE_CODE_SIMPLE",
		Remote:            "CLAUDE_CODE_REMOTE",
		RemoteMemoryDir:   "CLAUDE_CODE_REMOTE_MEMORY_DIR",
		ConfigDir:         "CLAUDE_CONFIG_DIR",
		PathOverride:      "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
	}
}

// EnableSettingsFromEnv reads the environment part of EnableSettings through
// getenv (os.Getenv in a host; a map lookup in tests). autoMemoryEnabled is
// the host's merged settings value, or nil.
func EnableSettingsFromEnv(getenv func(string) string, names EnvNames, autoMemoryEnabled *bool) EnableSettings {
	return EnableSettings{
		DisableAutoMemory: parseEnvBool(getenv(names.DisableAutoMemory)),
		Simple:            parseEnvBool(getenv(names.Simple)),
		Remote:            parseEnvBool(getenv(names.Remote)),
		RemoteMemoryDir:   getenv(names.RemoteMemoryDir),
		AutoMemoryEnabled: autoMemoryEnabled,
	}
}

package memdir

import "strings"

// The environment variables Claude Code reads for memory. A host whose
// runtime uses other names maps them in the getenv it passes.
const (
	envDisableAutoMemory = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"
	envSimple            = "CLAUDE_CODE_SIMPLE"
	envRemote            = "CLAUDE_CODE_REMOTE"
	envRemoteMemoryDir   = "CLAUDE_CODE_REMOTE_MEMORY_DIR"
	envConfigDir         = "CLAUDE_CONFIG_DIR"
	envPathOverride      = "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"
)

// envBool is the three-valued reading of a boolean environment variable.
type envBool int8

const (
	// envUnset means the variable is absent or holds no recognised value.
	envUnset envBool = iota
	// envTrue means the value is one of 1, true, yes, on.
	envTrue
	// envFalse means the value is one of 0, false, no, off.
	envFalse
)

// parseEnvBool reads a boolean environment value the way Claude Code does:
// trimmed and lower-cased, "1 true yes on" are true, "0 false no off" are
// false, anything else (including "") is unset.
func parseEnvBool(v string) envBool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return envTrue
	case "0", "false", "no", "off":
		return envFalse
	}
	return envUnset
}

// enableSettings is everything the auto-memory enable chain looks at.
type enableSettings struct {
	// disableAutoMemory: true turns memory off, an explicit false turns it
	// on and wins over every later rule.
	disableAutoMemory envBool
	// simple (bare mode) turns memory off when true.
	simple envBool
	// remote turns memory off when true and remoteMemoryDir is empty.
	remote envBool
	// remoteMemoryDir is where a remote session keeps memory.
	remoteMemoryDir string
	// autoMemoryEnabled is the merged settings value, nil when no settings
	// file defines it. Project settings may opt out here.
	autoMemoryEnabled *bool
}

// IsAutoMemoryEnabled applies Claude Code's enable chain to the environment
// read through getenv (os.Getenv in a host; a map lookup in tests) and the
// host's merged autoMemoryEnabled setting (nil when no settings file sets
// it). The first rule that matches wins:
//
//  1. CLAUDE_CODE_DISABLE_AUTO_MEMORY true → off; explicitly false → on.
//  2. CLAUDE_CODE_SIMPLE (bare mode) true → off.
//  3. CLAUDE_CODE_REMOTE true without CLAUDE_CODE_REMOTE_MEMORY_DIR → off.
//  4. The setting, when set.
//  5. On.
//
// Booleans are read as Claude Code reads them: "1 true yes on" and
// "0 false no off", any case, trimmed; anything else is unset. A runtime
// with its own variable names maps them in getenv.
func IsAutoMemoryEnabled(getenv func(string) string, setting *bool) bool {
	return enableSettings{
		disableAutoMemory: parseEnvBool(getenv(envDisableAutoMemory)),
		simple:            parseEnvBool(getenv(envSimple)),
		remote:            parseEnvBool(getenv(envRemote)),
		remoteMemoryDir:   getenv(envRemoteMemoryDir),
		autoMemoryEnabled: setting,
	}.enabled()
}

// enabled applies the enable chain of IsAutoMemoryEnabled.
func (s enableSettings) enabled() bool {
	switch s.disableAutoMemory {
	case envTrue:
		return false
	case envFalse:
		return true
	}
	if s.simple == envTrue {
		return false
	}
	if s.remote == envTrue && s.remoteMemoryDir == "" {
		return false
	}
	if s.autoMemoryEnabled != nil {
		return *s.autoMemoryEnabled
	}
	return true
}

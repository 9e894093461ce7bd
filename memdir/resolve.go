package memdir

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// Names of the fixed parts of a memory tree.
const (
	// EntrypointName is the index file of a memory directory.
	EntrypointName = "MEMORY.md"
	// autoMemDirName is the last element of a default auto-memory path.
	autoMemDirName = "memory"
	// ProjectsDirName holds one directory per project under the memory base.
	ProjectsDirName = "projects"
	// TeamDirName is the team-shared subdirectory of an auto-memory dir.
	TeamDirName = "team"
)

// Errors returned by ResolveAutoMemPath when a required input is missing.
var (
	ErrNoMemoryBase  = errors.New("memdir: no config home or remote memory dir given (set AutoMemPathRequest.ConfigHome to an absolute path)")
	ErrNoProjectRoot = errors.New("memdir: no project root given (set AutoMemPathRequest.ProjectRoot to an absolute path)")
)

// SettingSource names where a setting came from. Only some sources may
// choose where memory is written: see Trusted.
type SettingSource int

// Setting sources, as in Claude Code's settings layering.
const (
	SourceUser    SettingSource = iota + 1 // ~/.claude/settings.json
	SourceProject                          // <repo>/.claude/settings.json (never trusted)
	SourceLocal                            // <repo>/.claude/settings.local.json
	SourceFlag                             // --settings on the command line
	SourcePolicy                           // managed policy
)

func (s SettingSource) String() string {
	return enumName("SettingSource", int(s), []string{SourceUser: "user", SourceProject: "project",
		SourceLocal: "local", SourceFlag: "flag", SourcePolicy: "policy"})
}

// enumName returns names[v], or type(v) for a value without a name.
func enumName(typ string, v int, names []string) string {
	if v >= 0 && v < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// trustedSources lists, highest priority first, the sources that may set
// autoMemoryDirectory. Project settings are absent on purpose: a cloned
// repository could otherwise aim memory writes at ~/.ssh.
var trustedSources = [...]SettingSource{SourcePolicy, SourceFlag, SourceLocal, SourceUser}

// Trusted reports whether a setting from s may choose the memory directory.
func (s SettingSource) Trusted() bool {
	return slices.Contains(trustedSources[:], s)
}

// AutoMemPathRequest is what ResolveAutoMemPath needs; the host fills it.
type AutoMemPathRequest struct {
	// ConfigHome is the runtime's config root (Claude Code: ~/.claude).
	ConfigHome string
	// RemoteMemoryDir, when set, replaces ConfigHome as the memory base.
	RemoteMemoryDir string
	// HomeDir is used to expand "~/" in settings values; "" disables it.
	HomeDir string
	// Override is an explicit, programmatic path (no "~" expansion).
	Override string
	// AutoMemoryDirectory holds the autoMemoryDirectory setting per source.
	// Untrusted sources are ignored.
	AutoMemoryDirectory map[SettingSource]string
	// ProjectRoot is the project's directory; its canonical git root (or
	// itself outside git) names the default memory directory.
	ProjectRoot string
}

// PathOrigin says which rule chose the auto-memory directory.
type PathOrigin int

// The rules of ResolveAutoMemPath, highest first.
const (
	OriginOverride PathOrigin = iota + 1
	OriginSetting
	OriginDefault
)

func (o PathOrigin) String() string {
	return enumName("PathOrigin", int(o), []string{OriginOverride: "override", OriginSetting: "setting", OriginDefault: "default"})
}

// AutoMemPath is a resolved auto-memory directory.
type AutoMemPath struct {
	// Dir is absolute, NFC-normalised and ends in one separator.
	Dir string
	// Origin is the rule that chose Dir.
	Origin PathOrigin
	// Source is the settings source when Origin is OriginSetting.
	Source SettingSource
}

// MemoryBase returns where memory lives: the remote memory dir when set,
// else the config home.
func MemoryBase(configHome, remoteMemoryDir string) string {
	return cmp.Or(remoteMemoryDir, configHome)
}

// ResolveAutoMemPath picks the auto-memory directory, highest rule first:
//
//  1. in.Override, validated without "~" expansion;
//  2. the autoMemoryDirectory setting of the first trusted source that sets
//     it (policy, flag, local, user), validated with "~" expansion;
//  3. <memory base>/projects/<SanitizePath(canonical git root)>/memory/.
//
// A value that fails ValidateMemoryPath falls through to the next rule. fsys
// is only read (to find the git root) when rule 3 applies.
func ResolveAutoMemPath(fsys afero.Fs, in AutoMemPathRequest) (AutoMemPath, error) {
	if in.Override != "" {
		if dir, err := ValidateMemoryPath(in.Override, ""); err == nil {
			return AutoMemPath{Dir: dir, Origin: OriginOverride}, nil
		}
	}
	for _, src := range trustedSources {
		v := in.AutoMemoryDirectory[src]
		if v == "" {
			continue
		}
		// The first trusted source that sets a value decides, as in Claude
		// Code; an invalid value there falls through to the default.
		if dir, err := ValidateMemoryPath(v, in.HomeDir); err == nil {
			return AutoMemPath{Dir: dir, Origin: OriginSetting, Source: src}, nil
		}
		break
	}
	dir, err := defaultAutoMemPath(fsys, MemoryBase(in.ConfigHome, in.RemoteMemoryDir), in.ProjectRoot)
	if err != nil {
		return AutoMemPath{}, err
	}
	return AutoMemPath{Dir: dir, Origin: OriginDefault}, nil
}

// defaultAutoMemPath returns <memoryBase>/projects/<key>/memory/ where key
// is SanitizePath of the project's canonical git root, or of projectRoot
// itself outside git.
func defaultAutoMemPath(fsys afero.Fs, memoryBase, projectRoot string) (string, error) {
	if memoryBase == "" || !filepath.IsAbs(memoryBase) {
		return "", ErrNoMemoryBase
	}
	if projectRoot == "" || !filepath.IsAbs(projectRoot) {
		return "", ErrNoProjectRoot
	}
	dir := filepath.Join(memoryBase, ProjectsDirName, SanitizePath(ProjectKey(fsys, projectRoot)), autoMemDirName)
	return norm.NFC.String(dir + string(filepath.Separator)), nil
}

// ProjectKey returns the directory that names a project's memory: its
// canonical git root, or projectRoot itself when it is not in git.
func ProjectKey(fsys afero.Fs, projectRoot string) string {
	if root, ok := FindCanonicalGitRoot(fsys, projectRoot); ok {
		return root
	}
	return filepath.Clean(projectRoot)
}

// TeamMemPath returns the team-shared directory inside an auto-memory dir, with
// one trailing separator and NFC-normalised.
func TeamMemPath(autoMemDir string) string {
	return norm.NFC.String(filepath.Join(autoMemDir, TeamDirName) + string(filepath.Separator))
}

// AutoMemPathRequestFromEnv fills the environment part of AutoMemPathRequest
// through getenv, with home as the user's home directory: the override
// (CLAUDE_COWORK_MEMORY_PATH_OVERRIDE), the remote memory dir
// (CLAUDE_CODE_REMOTE_MEMORY_DIR), and the config home (CLAUDE_CONFIG_DIR,
// or <home>/.claude). The host adds settings and the project root. A
// runtime with its own variable names maps them in getenv.
func AutoMemPathRequestFromEnv(getenv func(string) string, home string) AutoMemPathRequest {
	configHome := getenv(envConfigDir)
	if configHome == "" && home != "" {
		configHome = filepath.Join(home, ".claude")
	}
	return AutoMemPathRequest{
		ConfigHome:      configHome,
		RemoteMemoryDir: getenv(envRemoteMemoryDir),
		HomeDir:         home,
		Override:        getenv(envPathOverride),
	}
}

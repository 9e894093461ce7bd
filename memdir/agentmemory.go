package memdir

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// AgentMemoryScope says who shares a sub-agent's memory.
type AgentMemoryScope string

// The three agent-memory scopes.
const (
	// ScopeUser is shared by every project of this user.
	ScopeUser AgentMemoryScope = "user"
	// ScopeProject lives in the project and can be committed with it.
	ScopeProject AgentMemoryScope = "project"
	// ScopeLocal lives in the project but is meant to stay out of git.
	ScopeLocal AgentMemoryScope = "local"
)

// ErrInvalidAgentType reports an agent type that cannot name a directory.
var ErrInvalidAgentType = errors.New("memdir: invalid agent type (use a non-empty name without path separators, \"..\" or NUL)")

// AgentMemoryDirRequest locates one sub-agent type's memory.
type AgentMemoryDirRequest struct {
	// AgentType is the sub-agent's type, such as "explorer" or
	// "my-plugin:reviewer" (':' becomes '-').
	AgentType string
	Scope     AgentMemoryScope
	// ConfigHome and RemoteMemoryDir give the memory base, as for the auto
	// memory directory.
	ConfigHome      string
	RemoteMemoryDir string
	// Cwd is the session's working directory.
	Cwd string
}

// AgentMemoryDir returns a sub-agent type's memory directory:
//
//	user:    <memory base>/agent-memory/<type>/
//	project: <cwd>/.claude/agent-memory/<type>/
//	local:   <cwd>/.claude/agent-memory-local/<type>/
//	         or, with a remote memory dir,
//	         <remote>/projects/<SanitizePath(git root)>/agent-memory-local/<type>/
//
// fsys is read only for the remote local scope (to find the git root).
func AgentMemoryDir(fsys afero.Fs, in AgentMemoryDirRequest) (string, error) {
	agent, err := sanitizeAgentType(in.AgentType)
	if err != nil {
		return "", err
	}
	var dir string
	switch in.Scope {
	case ScopeUser:
		base := MemoryBase(in.ConfigHome, in.RemoteMemoryDir)
		if base == "" || !filepath.IsAbs(base) {
			return "", ErrNoMemoryBase
		}
		dir = filepath.Join(base, "agent-memory", agent)
	case ScopeProject, ScopeLocal:
		if in.Cwd == "" || !filepath.IsAbs(in.Cwd) {
			return "", ErrNoProjectRoot
		}
		switch {
		case in.Scope == ScopeProject:
			dir = filepath.Join(in.Cwd, ".claude", "agent-memory", agent)
		case in.RemoteMemoryDir != "":
			dir = filepath.Join(in.RemoteMemoryDir, ProjectsDirName, SanitizePath(ProjectKey(fsys, in.Cwd)), "agent-memory-local", agent)
		default:
			dir = filepath.Join(in.Cwd, ".claude", "agent-memory-local", agent)
		}
	default:
		return "", fmt.Errorf("memdir: unknown agent memory scope %q (want user, project or local)", in.Scope)
	}
	return norm.NFC.String(dir + string(filepath.Separator)), nil
}

func sanitizeAgentType(t string) (string, error) {
	s := strings.ReplaceAll(t, ":", "-")
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") {
		return "", ErrInvalidAgentType
	}
	return s, nil
}

// agentScopeNote is the one line each scope adds to the agent prompt.
func agentScopeNote(scope AgentMemoryScope) string {
	switch scope {
	case ScopeUser:
		return "Scope: user. These memories follow you into every project, so keep them general: nothing specific to one codebase."
	case ScopeProject:
		return "Scope: project. This directory is inside the project and may be committed, so write only what every contributor's copy of you should know."
	case ScopeLocal:
		return "Scope: local. These memories belong to this project on this machine and are not shared through version control."
	}
	return ""
}

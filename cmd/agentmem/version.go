package main

import (
	"fmt"
	"runtime/debug"
)

// version is this build's module version: the tag it was installed at
// (go install .../cmd/agentmem@v0.1.0), or "(devel)" for a build from a
// checkout. MCP clients are told it too.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// versionLine is what agentmem version prints: the version, the Go
// toolchain, and the commit a checkout build was made from.
func versionLine() string {
	line := "agentmem " + version()
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	line += " (" + info.GoVersion
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			line += ", commit " + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			line += ", modified"
		}
	}
	return line + ")"
}

func printVersion(e env) int {
	fmt.Fprintln(e.stdout, versionLine())
	return exitOK
}

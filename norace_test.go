//go:build !race

package agentmem_test

// buildFlags: see race_test.go.
var buildFlags []string

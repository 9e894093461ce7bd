//go:build race

package agentmem_test

// buildFlags are the build flags of this test binary that the go commands
// the tests run pass too, so that they find the packages go test has
// compiled already instead of compiling everything once more.
var buildFlags = []string{"-race"}

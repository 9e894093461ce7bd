package wire_test

import (
	"fmt"

	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// Client and server agree on a repo's state by its checksum: the hash of
// every key's entry checksum, independent of order.
func ExampleRepoChecksum() {
	a := wire.RepoChecksum(map[string]string{"ci.md": wire.EntryChecksum("CI runs nightly"), "ports.md": wire.EntryChecksum("8080")})
	b := wire.RepoChecksum(map[string]string{"ports.md": wire.EntryChecksum("8080"), "ci.md": wire.EntryChecksum("CI runs nightly")})
	fmt.Println(a == b)
	fmt.Println(wire.ValidateKeySyntax("notes/ci.md"), wire.ValidateKeySyntax("../etc/passwd") != nil)
	// Output:
	// true
	// <nil> true
}

package teamwire_test

import (
	"fmt"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// Client and server agree on a repo's state by its checksum: the hash of
// every key's entry checksum, independent of order.
func ExampleRepoChecksum() {
	a := teamwire.RepoChecksum(map[string]string{"ci.md": teamwire.EntryChecksum("CI runs nightly"), "ports.md": teamwire.EntryChecksum("8080")})
	b := teamwire.RepoChecksum(map[string]string{"ports.md": teamwire.EntryChecksum("8080"), "ci.md": teamwire.EntryChecksum("CI runs nightly")})
	fmt.Println(a == b)
	fmt.Println(teamwire.ValidateKeySyntax("notes/ci.md"), teamwire.ValidateKeySyntax("../etc/passwd") != nil)
	// Output:
	// true
	// <nil> true
}

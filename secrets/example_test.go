package secrets_test

import (
	"fmt"

	"github.com/agentmem-sdk/agentmem/secrets"
)

func ExampleScanner_Redact() {
	text := "use " + "npm_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tUaB3dE5fG7h" + " to publish"
	s := secrets.New()
	fmt.Println(s.Redact(text))
	fmt.Println(s.Scan(text))
	// Output:
	// use [REDACTED] to publish
	// [{npm-access-token NPM Access Token high}]
}

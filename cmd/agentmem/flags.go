package main

import (
	"flag"
	"fmt"
	"net/url"
	"strings"
)

// parseAnywhere parses flags wherever they stand among the positional
// arguments ("recall 'deploy friday' --dir X" as well as "recall --dir X
// 'deploy friday'") and returns the positional arguments in order. "--"
// ends the flags: everything after it is positional.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		// flag stops at "--" (consumed) or at the first positional argument.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// checkServerURL reports a --server (or --team-server) value that is not
// an http:// or https:// URL with a host, saying what to type instead:
// "127.0.0.1:8787" alone would otherwise fail with Go's URL parse error.
func checkServerURL(name, s string) error {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	if !strings.Contains(s, "://") {
		return fmt.Errorf("%s %s: the server address needs http:// or https://, such as %s http://%s (nothing was done)", name, s, name, s)
	}
	return fmt.Errorf("%s %s: want an http:// or https:// URL with a host, such as %s https://team.example.com (nothing was done)", name, s, name)
}

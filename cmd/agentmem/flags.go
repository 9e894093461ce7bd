package main

import "flag"

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

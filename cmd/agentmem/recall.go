package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/recall"
)

func recallFlags(fs *flag.FlagSet) runner {
	explain := fs.Bool("explain", false, "show the lexical scores of the best candidates")
	return func(e env, c *common, args []string) (int, error) { return runRecall(e, c, args, *explain) }
}

func runRecall(e env, c *common, args []string, explain bool) (int, error) {
	query := strings.TrimSpace(strings.Join(args, " "))
	if query == "" {
		return exitError, fmt.Errorf("give the message to recall for, e.g. agentmem recall \"how do we test?\"")
	}
	r, err := existingMemory(e, c)
	if err != nil {
		return exitError, err
	}
	now, err := c.clock()
	if err != nil {
		return exitError, err
	}
	ctx := context.Background()
	d, err := memdir.NewDir(e.fs, r.path.Dir, memdir.DirOptions{})
	if err != nil {
		return exitError, err
	}
	finder, err := recall.NewFinder(d, recall.FinderOptions{})
	if err != nil {
		return exitError, err
	}
	defer finder.Close()
	if explain {
		hits, err := finder.Rank(ctx, query, 10)
		if err != nil {
			return exitError, err
		}
		o := finder.Options()
		fmt.Fprintf(e.stdout, "tokens: %s\n", strings.Join(lexical.Tokenize(query), " "))
		fmt.Fprintf(e.stdout, "best candidates (score, strength, query words matched); nothing is selected when the best matches one word with strength < %.2f, else up to %d scoring >= %.0f%% of the best:\n",
			o.MinStrength, recall.MaxSelected, 100*o.MinRelative)
		if len(hits) == 0 {
			fmt.Fprintln(e.stdout, "  none match")
		}
		for _, h := range hits {
			fmt.Fprintf(e.stdout, "  %7.2f %5.2f %3d  %s\n", h.Score, h.Strength, h.Matched, h.Key)
		}
		fmt.Fprintln(e.stdout)
	}
	got := recall.NewSession(finder, recall.SessionOptions{Now: func() time.Time { return now }}).Recall(ctx, query, nil)
	if len(got) == 0 {
		fmt.Fprintln(e.stdout, "nothing to surface for this message")
		return exitOK, nil
	}
	for i, s := range got {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintln(e.stdout, s.Text())
	}
	return exitOK, nil
}

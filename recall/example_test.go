package recall_test

import (
	"context"
	"fmt"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/recall"
	"github.com/spf13/afero"
)

func ExampleSession() {
	fsys := afero.NewMemMapFs()
	dir, _ := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	_, _ = dir.Save(context.Background(), memdir.Memory{File: "testing_policy.md", Name: "Testing policy", Type: memdir.TypeFeedback,
		Description: "Integration tests hit the real database, never mocks", Body: "Use the testdb helper."})
	_, _ = dir.Save(context.Background(), memdir.Memory{File: "deploy.md", Name: "Deploy days", Type: memdir.TypeProject,
		Description: "Deploys happen on Tuesdays and Thursdays", Body: "No Friday deploys."})

	finder, _ := recall.NewFinder(dir, recall.FinderOptions{
		Observer: func(e recall.Event) { fmt.Printf("%s: %d of %d\n", e.Selector, e.Selected, e.Candidates) }})
	session := recall.NewSession(finder, recall.SessionOptions{})
	for _, m := range session.Recall(context.Background(), "should this integration test mock the database?", nil) {
		fmt.Println(m.Path)
	}
	fmt.Println(len(session.Recall(context.Background(), "thanks", nil))) // one word: skipped, no selection
	// Output:
	// lexical: 1 of 2
	// /mem/testing_policy.md
	// 0
}

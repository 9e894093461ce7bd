package llmtest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
)

func ExampleNew() {
	m := llmtest.New(llmtest.Text("first"), llmtest.Fail(errors.New("overloaded")))
	r, err := m.Generate(context.Background(), llm.Request{Purpose: llm.PurposeAutoDream})
	fmt.Println(r.Text(), err)
	_, err = m.Generate(context.Background(), llm.Request{})
	fmt.Println(err)
	_, err = m.Generate(context.Background(), llm.Request{})
	fmt.Println(err)
	fmt.Println(len(m.Requests()), m.Requests()[0].Purpose)
	// Output:
	// first <nil>
	// overloaded
	// llmtest: no scripted reply left
	// 3 auto_dream
}

package agentmem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/llm"
)

// Budget bounds the tokens the background jobs (extraction, the session
// summary, consolidation, a model selector) may spend, input and output
// together, in the last hour and the last 24 hours. Zero means no bound.
type Budget struct {
	TokensPerHour int
	TokensPerDay  int
}

// LayerBudget names the events of the budget: Err is ErrBudgetSpent the
// first time a bound stops a call, and Detail the Budget.
const LayerBudget = "budget"

// ErrBudgetSpent is what a background job's model call returns once
// Options.Budget is spent; the job fails with it and no request is sent.
// The budget frees itself as the window moves on.
var ErrBudgetSpent = errors.New("agentmem: the background jobs' token budget is spent (Options.Budget); they resume when the window moves on")

// budgetedModel is the jobs' model behind a Budget.
type budgetedModel struct {
	next   llm.Model
	budget Budget
	now    func() time.Time
	notify func(error)

	mu       sync.Mutex
	spent    []spend // in time order, the last 24 hours
	notified bool    // the current stop was reported
}

type spend struct {
	at     time.Time
	tokens int
}

func (b *budgetedModel) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := b.check(); err != nil {
		return llm.Response{}, err
	}
	resp, err := b.next.Generate(ctx, req)
	if n := resp.Usage.InputTokens + resp.Usage.OutputTokens; n > 0 {
		b.mu.Lock()
		b.spent = append(b.spent, spend{at: b.now(), tokens: n})
		b.mu.Unlock()
	}
	return resp, err
}

// check refuses a call while a window's total is at its bound.
func (b *budgetedModel) check() error {
	b.mu.Lock()
	now := b.now()
	keep := b.spent[:0]
	hour, day := 0, 0
	for _, s := range b.spent {
		if now.Sub(s.at) >= 24*time.Hour {
			continue
		}
		keep = append(keep, s)
		day += s.tokens
		if now.Sub(s.at) < time.Hour {
			hour += s.tokens
		}
	}
	b.spent = keep
	var err error
	switch {
	case b.budget.TokensPerHour > 0 && hour >= b.budget.TokensPerHour:
		err = fmt.Errorf("%w: %d of %d tokens in the last hour", ErrBudgetSpent, hour, b.budget.TokensPerHour)
	case b.budget.TokensPerDay > 0 && day >= b.budget.TokensPerDay:
		err = fmt.Errorf("%w: %d of %d tokens in the last 24 hours", ErrBudgetSpent, day, b.budget.TokensPerDay)
	}
	first := err != nil && !b.notified
	b.notified = err != nil
	b.mu.Unlock()
	if first && b.notify != nil {
		b.notify(err)
	}
	return err
}

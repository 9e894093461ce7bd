// Package jobs runs a component's background work one job at a time: the
// runner behind extraction after each turn, the session summary and the
// front door's consolidation check.
//
// A job gets a context with the values of the call that offered it (trace
// IDs, loggers) but not its cancellation: it ends when the runner is
// closed. While a job runs, a newly offered job is either held as the one
// to run next (Offer; a later offer replaces it, so the latest state
// wins) or refused (Try). Drain waits for the runner to go idle; Close
// drops a held job, cancels the running one and waits; a second Close is
// a no-op. A Runner is safe for concurrent use and never leaves a
// goroutine behind after Close.
package jobs

import (
	"context"
	"sync"

	"github.com/agentmem-sdk/agentmem/internal/bgctx"
)

// Outcome says what became of an offered job.
type Outcome int

// Outcomes.
const (
	// Started: the job runs now.
	Started Outcome = iota
	// Held: a job runs; this one runs after it unless replaced.
	Held
	// Busy: a job runs and the offer was a Try.
	Busy
	// Skipped: prepare returned no job.
	Skipped
	// Closed: the runner is closed; nothing runs.
	Closed
)

// Prepare turns an offer into the job to run, or nil for none. held says
// whether the offer waited behind another job. The runner calls it with
// its lock held, so prepare sees a settled state: it must not call the
// runner.
type Prepare func(held bool) func(ctx context.Context)

// Runner runs jobs one at a time.
type Runner struct {
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running bool
	idle    chan struct{} // closed while no job runs
	held    *offer
	closed  bool
}

type offer struct {
	ctx     context.Context
	prepare Prepare
}

// New returns an idle Runner.
func New() *Runner {
	life, cancel := context.WithCancel(context.Background())
	idle := make(chan struct{})
	close(idle)
	return &Runner{life: life, cancel: cancel, idle: idle}
}

// Offer starts the job prepare returns now when the runner is idle, or
// holds the offer to run after the current job (replacing a held one) and
// calls onHeld, if set, under the runner's lock (so it is ordered before
// the held job starts; it must not call the runner).
func (r *Runner) Offer(ctx context.Context, prepare Prepare, onHeld func()) Outcome {
	return r.offer(ctx, prepare, true, onHeld)
}

// Try starts the job prepare returns only when the runner is idle; it
// reports Busy otherwise (prepare is not called).
func (r *Runner) Try(ctx context.Context, prepare Prepare) Outcome {
	return r.offer(ctx, prepare, false, nil)
}

func (r *Runner) offer(ctx context.Context, prepare Prepare, hold bool, onHeld func()) Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return Closed
	case r.running && hold:
		r.held = &offer{ctx: ctx, prepare: prepare}
		if onHeld != nil {
			onHeld()
		}
		return Held
	case r.running:
		return Busy
	}
	job := prepare(false)
	if job == nil {
		return Skipped
	}
	r.running = true
	r.idle = make(chan struct{})
	r.wg.Add(1)
	go r.loop(ctx, job)
	return Started
}

func (r *Runner) loop(call context.Context, job func(context.Context)) {
	defer r.wg.Done()
	for {
		ctx, done := bgctx.Detach(call, r.life)
		job(ctx)
		done()
		r.mu.Lock()
		job = nil
		for job == nil && r.held != nil && !r.closed {
			next := r.held
			r.held = nil
			call, job = next.ctx, next.prepare(true)
		}
		if job == nil {
			r.running = false
			close(r.idle)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}

// Running reports whether a job runs now.
func (r *Runner) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// Drain waits until no job runs or is held, or until ctx ends (then it
// returns ctx's error).
func (r *Runner) Drain(ctx context.Context) error {
	for {
		r.mu.Lock()
		idle := r.idle
		r.mu.Unlock()
		select {
		case <-idle:
			r.mu.Lock()
			still := r.running
			r.mu.Unlock()
			if !still {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close drops a held job, cancels the running one and waits for it. Later
// offers report Closed.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.held = nil
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// Package bgctx makes the context of background work started on behalf of
// a call: it keeps the call's values (trace IDs, loggers, request-scoped
// data) but not its cancellation or deadline, and ends with the owner of
// the work instead.
package bgctx

import "context"

// Detach returns a context with call's values that is cancelled when life
// is done or when the returned cancel is called. Call cancel when the work
// ends, to release the link to life.
func Detach(call, life context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(call))
	stop := context.AfterFunc(life, cancel)
	return ctx, func() { stop(); cancel() }
}

package bgctx

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

type key struct{}

func TestDetachKeepsValuesNotCancellation(t *testing.T) {
	call, cancelCall := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	life, endLife := context.WithCancel(context.Background())
	ctx, done := Detach(call, life)
	defer done()
	cancelCall()
	assert.NoError(t, ctx.Err(), "the call ending does not end the work")
	assert.Equal(t, "v", ctx.Value(key{}))
	endLife()
	<-ctx.Done()
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "the owner ending does")

	ctx2, done2 := Detach(context.Background(), context.Background())
	done2()
	assert.ErrorIs(t, ctx2.Err(), context.Canceled, "done releases it")
}

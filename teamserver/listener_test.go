package teamserver_test

import (
	"net"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := teamserver.LimitListener(raw, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		require.NoError(t, err)
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted past the limit")
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, first.Close())
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("closing one did not let the waiting one in")
	}
	second.Close()
	assert.NoError(t, ln.Close())
}

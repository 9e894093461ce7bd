package mcpserver

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AnswerAll wraps a transport so that the end of its input does not drop
// the requests already read. The MCP SDK stops a session as soon as a
// read reports the end of input, and cancels the requests still being
// handled, so a client that writes several requests and closes its side
// (`printf '...' | agentmem mcp`) would get only the first answer. Through
// AnswerAll, the connection reports the end of input only once every
// request it has read has been answered, or when the connection is
// closed, the read's context ends or a write fails.
//
// The connections it returns are safe for concurrent use, as the SDK
// requires of a connection.
func AnswerAll(t mcp.Transport) mcp.Transport {
	return answerAll{t}
}

type answerAll struct{ t mcp.Transport }

func (a answerAll) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := a.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, pending: map[jsonrpc.ID]bool{}, changed: make(chan struct{}), closed: make(chan struct{})}, nil
}

// answeringConn counts the requests read and not yet answered.
type answeringConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
	broken  bool          // a write failed: no answer can be delivered
	changed chan struct{} // closed and replaced whenever pending shrinks
	closed  chan struct{}
	once    sync.Once
}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.pending[req.ID] = true
			c.mu.Unlock()
		}
		return msg, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	for {
		c.mu.Lock()
		done, changed := len(c.pending) == 0 || c.broken, c.changed
		c.mu.Unlock()
		if done {
			return nil, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, err
		case <-c.closed:
			return nil, err
		}
	}
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	resp, isResponse := msg.(*jsonrpc.Response)
	if err == nil && !isResponse {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.broken = true
	} else {
		delete(c.pending, resp.ID)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	return err
}

func (c *answeringConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

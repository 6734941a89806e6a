package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is MCP's stdio transport (newline-delimited JSON-RPC on a
// reader and a writer) with these differences from the go-sdk's
// IOTransport, which ends the whole connection on the first bad line
// (modelcontextprotocol/go-sdk#1209):
//
//   - A line that is not one JSON-RPC message (not JSON, a batch, {}, a
//     wrong version tag, longer than MaxLine) is answered with a JSON-RPC
//     error (-32700 or -32600, the request's id when it has a usable one,
//     else null) and skipped; the server keeps serving every other
//     request and long-poll.
//   - After notifications/cancelled for an in-flight request, that
//     request's response is withheld (MCP: the receiver SHOULD NOT
//     respond).
//   - A request id the go-sdk cannot echo exactly is refused, and no
//     answer carries the code 0 (check.go).
//   - At the end of the input, Read reports it only once every request
//     read has been answered: the go-sdk ends the session when Read
//     does, and a program then exits, so a request followed by the end of
//     its input (echo REQUEST | program) would otherwise go unanswered.
//
// Memory per line is bounded by MaxLine; the in-flight and cancelled sets
// by the number of requests in flight.
type Transport struct {
	R io.Reader
	W io.Writer
	// MaxLine bounds one message (mcp.DefaultMaxRequestBodyBytes, 4 MiB,
	// as an HTTP request body, when 0).
	MaxLine int
}

// Connect starts the reader; a Transport is connected once.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = mcp.DefaultMaxRequestBodyBytes
	}
	c := newConn(t.W)
	go c.readLoop(NewReader(t.R, max), max)
	return c, nil
}

// conn is one connected Transport. Its methods are safe for concurrent
// use, as mcp.Connection requires.
type conn struct {
	wmu sync.Mutex
	w   io.Writer

	in      chan jsonrpc.Message
	readErr error // set before in is closed

	mu        sync.Mutex
	inflight  map[jsonrpc.ID]bool
	cancelled map[jsonrpc.ID]bool
	idle      chan struct{} // closed when inflight empties, for drain

	closeOnce sync.Once
	done      chan struct{}
}

func newConn(w io.Writer) *conn {
	return &conn{w: w, in: make(chan jsonrpc.Message), done: make(chan struct{}),
		inflight: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}}
}

// SessionID is empty: the connection is the session.
func (c *conn) SessionID() string { return "" }

// Close ends Read; the reader and writer are the caller's.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return nil
}

// Read returns the next good message; at the end of the input, once
// every request read has been answered, the error that ended it (io.EOF).
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg, ok := <-c.in:
		if !ok {
			c.drain(ctx)
			return nil, c.readErr
		}
		return msg, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// drain waits until no request read is still unanswered, the connection
// is closed or ctx ends.
func (c *conn) drain(ctx context.Context) {
	for {
		c.mu.Lock()
		if len(c.inflight) == 0 {
			c.mu.Unlock()
			return
		}
		if c.idle == nil {
			c.idle = make(chan struct{})
		}
		idle := c.idle
		c.mu.Unlock()
		select {
		case <-idle:
		case <-c.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Write writes one message as a line, unless it answers a cancelled
// request.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp {
		c.mu.Lock()
		drop := c.cancelled[resp.ID]
		c.mu.Unlock()
		if drop {
			c.answered(resp.ID)
			return nil
		}
		if resp.Error != nil {
			// What the go-sdk answers without a code before its
			// handlers run is a request the session cannot take yet
			// (a call before initialize).
			msg = &jsonrpc.Response{ID: resp.ID, Result: resp.Result, Error: CodedError(resp.Error, jsonrpc.CodeInvalidRequest)}
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err == nil {
		err = c.writeLine(b)
	}
	if isResp {
		c.answered(resp.ID) // once written: drain may end the session next
	}
	return err
}

// answered forgets an answered (or cancelled) request, waking drain when
// none is left.
func (c *conn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, id)
	delete(c.cancelled, id)
	if len(c.inflight) == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

func (c *conn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

// readLoop reads lines until the input ends, handing each good message to
// Read and answering each bad one itself.
func (c *conn) readLoop(r *Reader, maxLine int) {
	defer close(c.in)
	for {
		line, err := r.Next()
		switch {
		case errors.Is(err, ErrTooLong):
			c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: message longer than %d bytes", maxLine))
			continue
		case err != nil:
			c.readErr = err
			return
		}
		if msg := c.decode(line); msg != nil {
			select {
			case c.in <- msg:
			case <-c.done:
				return
			}
		}
	}
}

// decode parses one line; for a bad one it answers and returns nil.
func (c *conn) decode(line []byte) jsonrpc.Message {
	if !json.Valid(line) {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: the line is not JSON")
		return nil
	}
	if t := bytes.Trim(line, " \t\r\n"); t[0] == '[' {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported")
		return nil
	}
	if err := CheckRequestID(line); err != nil {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.reject(PeekID(line), jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message")
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if req.Method == "initialize" && req.IsCall() {
			if err := CheckInitializeParams(req.Params); err != nil {
				c.reject(req.ID, jsonrpc.CodeInvalidParams, err.Error())
				return nil
			}
		}
		c.mu.Lock()
		switch {
		case req.IsCall():
			c.inflight[req.ID] = true
		case req.Method == "notifications/cancelled":
			if id, ok := CancelledID(req.Params); ok && c.inflight[id] {
				c.cancelled[id] = true
			}
		}
		c.mu.Unlock()
	}
	return msg
}

// reject writes a JSON-RPC error response for a line that is no message.
func (c *conn) reject(id jsonrpc.ID, code int64, msg string) {
	if b, err := ErrorResponse(id, &jsonrpc.Error{Code: code, Message: msg}); err == nil {
		_ = c.writeLine(b)
	}
}

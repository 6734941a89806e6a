package main

import (
	"bufio"
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

// stdioTransport is the stdio framing (newline-delimited JSON-RPC) with
// two differences from the go-sdk's IOTransport, which ends the whole
// connection on the first bad line:
//
//   - A line that is not one JSON-RPC message (not JSON, a batch, {}, a
//     wrong version tag, longer than maxLine) is answered with a JSON-RPC
//     error (-32700 or -32600, the request's id when it has a usable one,
//     else null) and skipped; the connector keeps serving every other
//     request and long-poll (R6).
//   - After notifications/cancelled for an in-flight request, that
//     request's response is withheld (MCP: the receiver SHOULD NOT
//     respond; R8).
//   - A request id the go-sdk cannot echo exactly is refused, and no
//     answer carries the code 0 (rpccheck.go).
//
// Memory per line is bounded by maxLine; the in-flight and cancelled sets
// by the number of requests in flight.
type stdioTransport struct {
	r       io.Reader
	w       io.Writer
	maxLine int
}

// Connect starts the reader; it is called once per process.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{w: t.w, in: make(chan jsonrpc.Message), done: make(chan struct{}),
		inflight: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}}
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10), t.maxLine)
	return c, nil
}

type stdioConn struct {
	wmu sync.Mutex
	w   io.Writer

	in      chan jsonrpc.Message
	readErr error // set before in is closed

	mu        sync.Mutex
	inflight  map[jsonrpc.ID]bool
	cancelled map[jsonrpc.ID]bool

	closeOnce sync.Once
	done      chan struct{}
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return nil
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg, ok := <-c.in:
		if !ok {
			return nil, c.readErr
		}
		return msg, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		drop := c.cancelled[resp.ID]
		delete(c.cancelled, resp.ID)
		delete(c.inflight, resp.ID)
		c.mu.Unlock()
		if drop {
			return nil
		}
		if resp.Error != nil {
			// What the go-sdk answers without a code before its
			// handlers run is a request the session cannot take yet
			// (a call before initialize).
			msg = &jsonrpc.Response{ID: resp.ID, Result: resp.Result, Error: codedError(resp.Error, jsonrpc.CodeInvalidRequest)}
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

func (c *stdioConn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

// readLoop reads lines until EOF (or a read error), handing each good
// message to Read and answering each bad one itself.
func (c *stdioConn) readLoop(r *bufio.Reader, maxLine int) {
	defer close(c.in)
	for {
		line, tooLong, err := readLine(r, maxLine)
		if tooLong {
			c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: message longer than %d bytes", maxLine))
		} else if !blank(line) {
			if msg := c.decode(line); msg != nil {
				select {
				case c.in <- msg:
				case <-c.done:
					return
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			c.readErr = err
			return
		}
	}
}

// blank reports whether a line holds only JSON white space (RFC 8259:
// space, tab, CR, LF), which is skipped. Other white space (a vertical
// tab, U+00A0) is not JSON's: such a line is answered as any line that is
// not JSON is, as it is when it is too long to read.
func blank(line []byte) bool { return len(bytes.Trim(line, " \t\r\n")) == 0 }

// readLine returns the next line without its newline. A line over max
// bytes is consumed to its end and reported as tooLong, with no content,
// unless it is blank: then it is returned empty, and skipped as a short
// blank line is.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	spaceOnly := true
	for {
		frag, err := r.ReadSlice('\n')
		spaceOnly = spaceOnly && blank(frag)
		if !tooLong {
			if len(line)+len(frag) > max+2 { // room for "\r\n"
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong && spaceOnly {
			return nil, false, err
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// decode parses one line; for a bad one it answers and returns nil.
func (c *stdioConn) decode(line []byte) jsonrpc.Message {
	if !json.Valid(line) {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: the line is not JSON")
		return nil
	}
	if t := bytes.Trim(line, " \t\r\n"); t[0] == '[' {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported")
		return nil
	}
	if err := checkRequestID(line); err != nil {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.reject(peekID(line), jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message")
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if req.Method == "initialize" && req.IsCall() {
			if err := checkInitializeParams(req.Params); err != nil {
				c.reject(req.ID, jsonrpc.CodeInvalidParams, err.Error())
				return nil
			}
		}
		c.mu.Lock()
		switch {
		case req.IsCall():
			c.inflight[req.ID] = true
		case req.Method == "notifications/cancelled":
			if id, ok := cancelledID(req.Params); ok && c.inflight[id] {
				c.cancelled[id] = true
			}
		}
		c.mu.Unlock()
	}
	return msg
}

// reject writes a JSON-RPC error response for a line that is no message.
func (c *stdioConn) reject(id jsonrpc.ID, code int64, msg string) {
	if b, err := errorResponse(id, code, msg); err == nil {
		_ = c.writeLine(b)
	}
}

// errorResponse encodes a JSON-RPC error response. Without a usable
// request id the id is null, as JSON-RPC 2.0 requires (the SDK's encoder
// would leave the member out).
func errorResponse(id jsonrpc.ID, code int64, msg string) ([]byte, error) {
	if id.IsValid() {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	}
	return json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, &jsonrpc.Error{Code: code, Message: msg}})
}

// peekID is a bad message's id when it is a string or an integer.
func peekID(line []byte) jsonrpc.ID {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return jsonrpc.ID{}
	}
	switch m.ID.(type) {
	case string, float64:
		if id, err := jsonrpc.MakeID(m.ID); err == nil {
			return id
		}
	}
	return jsonrpc.ID{}
}

// cancelledID is notifications/cancelled's requestId.
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil && id.IsValid()
}

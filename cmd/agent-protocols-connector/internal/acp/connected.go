package acp

import (
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// connectedMCP handles mcp/connect, mcp/message and mcp/disconnect from
// the agent in the Connected revision. It returns false when the message
// addresses a server or connection of a component before this one, to be
// forwarded.
func (p *proxy) connectedMCP(m *jsonrpc.Request, method string, params []byte) bool {
	if method == methodMCPConnect {
		var cp connectParams
		if err := decode(params, &cp); err != nil {
			p.refuse(m, invalidParams("%s: %s", method, clip(err.Error())))
			return true
		}
		p.mu.Lock()
		ours, up := p.servers[cp.ServerID], p.upServer[cp.ServerID]
		p.mu.Unlock()
		if !ours && up {
			return false
		}
		if !m.IsCall() {
			p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: method + " is a request"})
			return true
		}
		if !ours {
			p.respondError(m.ID, invalidParams("%s: unknown serverId %q", method, clip(cp.ServerID)))
			return true
		}
		cid, err := p.connect()
		if err != nil {
			p.respondError(m.ID, err)
			return true
		}
		p.respond(m.ID, encode(connectResult{ConnectionID: cid}), nil)
		return true
	}
	var (
		msg connectedMessage
		dp  disconnectParams
		err error
		cid string
	)
	if method == methodMCPDisconnect {
		err = decode(params, &dp)
		cid = dp.ConnectionID
	} else {
		err = decode(params, &msg)
		cid = msg.ConnectionID
	}
	if err != nil {
		p.refuse(m, invalidParams("%s: %s", method, clip(err.Error())))
		return true
	}
	p.mu.Lock()
	c, up := p.conns[cid], p.upConn[cid]
	p.mu.Unlock()
	if c == nil && up {
		if method == methodMCPDisconnect {
			p.mu.Lock()
			delete(p.upConn, cid)
			p.mu.Unlock()
		}
		return false
	}
	if c == nil {
		what := "unknown"
		if strings.HasPrefix(cid, p.prefix+":") {
			what = "closed"
		}
		p.refuse(m, invalidParams("%s: %s connectionId %q", method, what, clip(cid)))
		return true
	}
	if method == methodMCPDisconnect {
		if !m.IsCall() {
			p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: method + " is a request"})
			return true
		}
		c.Close()
		p.respond(m.ID, []byte("{}"), nil)
		return true
	}
	// mcp/message: one inner MCP request or notification.
	if msg.Method == "" {
		p.refuse(m, invalidParams("%s: \"method\" must be a non-empty string", method))
		return true
	}
	if !objectOrNull(msg.Params) {
		p.refuse(m, invalidParams("%s: inner \"params\" must be an object or null", method))
		return true
	}
	if err := c.deliverFromAgent(m, "", msg.Method, noNull(msg.Params)); err != nil {
		p.refuse(m, err)
	}
	return true
}

// connect opens one Connected MCP-over-ACP connection: a new session of
// the MCP server over an in-process transport.
func (p *proxy) connect() (string, error) {
	p.mu.Lock()
	if len(p.conns) >= p.maxConns {
		p.mu.Unlock()
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "too many open MCP connections (" + strconv.Itoa(p.maxConns) + ")"}
	}
	p.nConns++
	cid := p.prefix + ":connection:" + strconv.FormatInt(p.nConns, 10)
	c := newMCPConn(p, Connected, cid)
	p.conns[cid] = c
	p.mu.Unlock()
	if err := p.startSession(c); err != nil {
		return "", err
	}
	return cid, nil
}

package acp

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// statelessMessage handles an mcp/message from the agent in the
// Stateless revision: one MCP 2026-07-28 request to the server serverId
// names, answered with its outcome. Every request to one serverId is
// served by one MCP session of the server, which stands in for the MCP
// session 2026-07-28 no longer has: the presented heads and inbox claims
// of the agent's tool calls attach to it. It returns false when serverId
// is a server of a component before this one, to be forwarded.
func (p *proxy) statelessMessage(m *jsonrpc.Request, params []byte) bool {
	var msg statelessMessage
	if err := decode(params, &msg); err != nil {
		p.refuse(m, invalidParams("%s: %s", methodMCPMessage, clip(err.Error())))
		return true
	}
	p.mu.Lock()
	ours, up := p.servers[msg.ServerID], p.upServer[msg.ServerID]
	p.mu.Unlock()
	if !ours && up {
		return false
	}
	if !m.IsCall() {
		// The binding's notifications go from the provider to the caller
		// only; the caller cancels by cancelling its outer request.
		p.log.Warn("connector acp: dropped a notification from the agent: stateless MCP-over-ACP has none toward the server", "method", methodMCPMessage, "inner", clip(msg.Method))
		return true
	}
	switch {
	case msg.ServerID == "" || msg.RequestID == "" || msg.Method == "":
		p.respondError(m.ID, invalidParams("%s: serverId, requestId and method must be non-empty strings", methodMCPMessage))
		return true
	case !objectOrNull(msg.Params):
		p.respondError(m.ID, invalidParams("%s: inner \"params\" must be an object or null", methodMCPMessage))
		return true
	case !ours:
		p.respondError(m.ID, &jsonrpc.Error{Code: codeServerUnavailable, Message: "MCP server registration unavailable",
			Data: encode(struct {
				ServerID string `json:"serverId"`
			}{msg.ServerID})})
		return true
	}
	inner := noNull(msg.Params)
	if e := checkInnerVersion(inner); e != nil {
		p.respond(m.ID, encode(outcome{Error: innerError(e)}), nil)
		return true
	}
	c, err := p.statelessSession(msg.ServerID)
	if err != nil {
		p.respondError(m.ID, err)
		return true
	}
	if err := c.deliverFromAgent(m, msg.RequestID, msg.Method, inner); err != nil {
		p.respondError(m.ID, err)
	}
	return true
}

// checkInnerVersion is the inner MCP error for a request that does not
// name MCP 2026-07-28 in params._meta (nil when it does): the binding
// carries that revision only, and a request without the version would
// reach the server as a request of a session that never initialized.
func checkInnerVersion(params []byte) *jsonrpc.Error {
	var im innerMeta
	if len(params) > 0 {
		if err := jsonv2.Unmarshal(params, &im); err != nil {
			return invalidParams("Invalid params: %s", clip(err.Error()))
		}
	}
	switch v := im.Meta.ProtocolVersion; v {
	case mcpStatelessVersion:
		return nil
	case "":
		return invalidParams("Invalid params: missing %s in params._meta", metaProtocolVersion)
	default:
		return &jsonrpc.Error{Code: codeUnsupportedProtocolVersion, Message: "Unsupported protocol version",
			Data: encode(unsupportedVersion{Supported: []string{mcpStatelessVersion}, Requested: v})}
	}
}

// codeUnsupportedProtocolVersion is MCP 2026-07-28's error for a request
// of a protocol version the server does not serve.
const codeUnsupportedProtocolVersion = -32022

// statelessSession is serverId's MCP session, started on its first
// request. At the bound the least recently used session with no request
// open is closed to make room (its presented heads are forgotten and its
// claims released, as when any MCP session ends); with none idle the
// request is refused.
func (p *proxy) statelessSession(sid string) (*mcpConn, *jsonrpc.Error) {
	p.mu.Lock()
	p.useTick++
	if c := p.conns[sid]; c != nil {
		c.lastUse = p.useTick
		p.mu.Unlock()
		return c, nil
	}
	var victim *mcpConn
	if len(p.conns) >= p.maxConns {
		for _, c := range p.conns {
			if c.active.Load() == 0 && (victim == nil || c.lastUse < victim.lastUse) {
				victim = c
			}
		}
		if victim == nil {
			p.mu.Unlock()
			return nil, &jsonrpc.Error{Code: codeResourceLimitExceeded, Message: fmt.Sprintf("too many busy MCP sessions (%d)", p.maxConns)}
		}
		delete(p.conns, victim.id)
	}
	c := newMCPConn(p, Stateless, sid)
	c.lastUse = p.useTick
	p.conns[sid] = c
	p.mu.Unlock()
	if victim != nil {
		p.log.Warn("connector acp: closed an idle MCP session to make room", "closed", victim.id, "for", sid)
		victim.Close()
	}
	if err := p.startSession(c); err != nil {
		return nil, err
	}
	return c, nil
}

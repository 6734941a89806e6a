package mcptools

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionFor names the engine session a request belongs to (see the
// package doc's Sessions). When a connection-scoped session ends, the
// engine forgets it: its claimed inbox items become available to other
// sessions again.
func (s *Server) sessionFor(sess *mcp.ServerSession, extra *mcp.RequestExtra) string {
	if sess == nil {
		return ""
	}
	if sess.ID() == "" && extra != nil && extra.Header != nil {
		// The transport refused a malformed conversation header already.
		name, _ := ConversationSession(extra.Header)
		s.useConversation(name)
		return name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.sessions[sess]; ok {
		return id
	}
	var id string
	if hid := sess.ID(); hid != "" {
		id = HTTPSessionName(hid)
	} else {
		s.nextSession++
		id = fmt.Sprintf("mcp-%d", s.nextSession)
	}
	s.sessions[sess] = id
	go func() {
		_ = sess.Wait()
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		s.eng.EndSession(id)
	}()
	return id
}

// useConversation records a use of an HTTP conversation; past
// maxConversations the least recently used other one is ended.
func (s *Server) useConversation(name string) {
	now := time.Now()
	s.mu.Lock()
	s.conversations[name] = now
	var evict string
	if len(s.conversations) > s.maxConversations {
		oldest := now
		for n, t := range s.conversations {
			if n != name && !t.After(oldest) {
				evict, oldest = n, t
			}
		}
		delete(s.conversations, evict)
	}
	s.mu.Unlock()
	if evict != "" {
		s.eng.EndSession(evict)
	}
}

// EndSession ends the engine session name (an [HTTPSessionName] or a
// [ConversationSession]) whose client went away (its last stream
// closed): its claims are released at once, and its presented heads
// forgotten (a client that comes back re-reads before writing, or its
// writes are judged against the latest verified head).
func (s *Server) EndSession(name string) {
	s.mu.Lock()
	delete(s.conversations, name)
	s.mu.Unlock()
	s.eng.EndSession(name)
}

// HTTPSessionName is the engine session of a Streamable HTTP session of
// MCP 2025-11-25 and earlier, named by its Mcp-Session-Id.
func HTTPSessionName(mcpSessionID string) string { return "http-" + mcpSessionID }

// ConversationHeader names a 2026-07-28 client's conversation over HTTP.
const ConversationHeader = "Agent-Protocols-Conversation"

// maxConversationKey bounds a conversation header's value.
const maxConversationKey = 64

// ConversationSession is the engine session of a 2026-07-28 request over
// HTTP, which has no protocol session: the conversation its client names
// with the [ConversationHeader] (1–64 characters of A–Z a–z 0–9 - . _ ~),
// or without one the default conversation of the bearer token, which
// every such client of a connector shares. The presented heads (§4.2) and
// inbox claims (§4.3) of the conversation last across its requests, as a
// session's do. A malformed header is an error, for the transport to
// refuse the request with.
func ConversationSession(h http.Header) (string, error) {
	key := h.Get(ConversationHeader)
	if key == "" {
		return "http2026", nil
	}
	if len(key) > maxConversationKey || strings.Trim(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") != "" {
		return "", fmt.Errorf("bad request: %s wants 1 to %d characters of A-Z a-z 0-9 - . _ ~", ConversationHeader, maxConversationKey)
	}
	return "http2026:" + key, nil
}

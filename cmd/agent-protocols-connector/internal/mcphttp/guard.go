// Package mcphttp is the connector program's Streamable HTTP endpoint: the
// connector spec's §3 guard for a loopback HTTP connector (a literal
// loopback listen address, Host and Origin checks against DNS rebinding
// and browsers, a bearer token from a 0600 file) in front of the go-sdk's
// Streamable HTTP handlers, one per protocol era, behind a front that
// makes their answers those of the stdio transport where the SDK answers
// otherwise (each such place names the go-sdk issue it works around).
package mcphttp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

// §3: a loopback Streamable HTTP connector MUST bind to 127.0.0.1 or ::1,
// validate Origin, defend against DNS rebinding and authenticate its
// client — loopback is not an authentication boundary.

// CheckLoopbackAddr refuses a listen address that is not a literal
// loopback IP with a port: "localhost" could resolve elsewhere, and
// 0.0.0.0 is every interface.
func CheckLoopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: want 127.0.0.1:PORT or [::1]:PORT: %v", addr, err)
	}
	// Exactly the two addresses §3 names: other 127/8 addresses are
	// loopback too, but the documentation promises these two.
	ip, err := netip.ParseAddr(host)
	if err != nil || (ip != netip.AddrFrom4([4]byte{127, 0, 0, 1}) && ip != netip.IPv6Loopback()) {
		return fmt.Errorf("--http %q: the connector listens on a loopback address only, 127.0.0.1 or ::1", addr)
	}
	if port == "" {
		return fmt.Errorf("--http %q: missing port", addr)
	}
	return nil
}

// isLoopbackHost reports whether a Host header or Origin host names the
// loopback interface: a loopback IP literal or "localhost". Anything else
// is a name an attacker's DNS could point at 127.0.0.1 (rebinding).
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// guard wraps the MCP handler with the §3 checks, cheapest first: Host
// (rebinding), Origin (browsers), then the bearer token. Every refusal is
// a plain HTTP error before any MCP processing.
func guard(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackHost(r.Host) {
			http.Error(w, "forbidden: Host is not a loopback address", http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !isLoopbackHost(u.Host) {
				http.Error(w, "forbidden: foreign Origin", http.StatusForbidden)
				return
			}
		}
		// The scheme is case-insensitive (RFC 9110 §11.1); the token is
		// compared in constant time.
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(tok), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agent-protocols-connector"`)
			http.Error(w, "unauthorized: missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// replayBuffer is the replay buffer of resumable streams. A reconnect
// whose Last-Event-ID names events no longer held (evicted past the
// bound, or never known) replays nothing and gets a fresh stream, rather
// than the go-sdk's HTTP 400 (MemoryEventStore.After fails; see
// modelcontextprotocol/go-sdk#754): a client given 400 stops
// reconnecting, and the spec's answer to missed events is a re-read of
// the resources, which needs a stream to come back on.
type replayBuffer struct{ *mcp.MemoryEventStore }

// After yields the events after index, or nothing when they are gone.
// (The store fails before yielding any event, so nothing partial is sent.)
func (b replayBuffer) After(ctx context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for data, err := range b.MemoryEventStore.After(ctx, session, stream, index) {
			if err != nil || !yield(data, nil) {
				return
			}
		}
	}
}

// Options configures [Handler]; nil means defaults.
type Options struct {
	// Logger receives the go-sdk handlers' diagnostics; nil discards them.
	Logger *slog.Logger
	// Grace is how long a session whose client had a GET (or
	// subscriptions/listen) stream open may have no stream at all before
	// its client counts as gone and its claims are released; 0 means 5 s.
	Grace time.Duration
	// ReplayBytes bounds the replay buffer of resumable streams, all
	// sessions together; 0 means 4 MiB.
	ReplayBytes int
}

// Handler is the guarded Streamable HTTP endpoint for srv: the go-sdk's
// stateful handler for MCP 2025-11-25 and earlier and its stateless one
// for 2026-07-28, behind the front, which picks by the request's
// protocol version. Only clients presenting "Authorization: Bearer
// token" are served.
func Handler(srv *mcptools.Server, token string, opts *Options) http.Handler {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	grace, replay := opts.Grace, opts.ReplayBytes
	if grace <= 0 {
		grace = 5 * time.Second
	}
	if replay <= 0 {
		replay = 4 << 20
	}
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(replay)
	getServer := func(*http.Request) *mcp.Server { return srv.MCP() }
	sessions := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: log,
		// An abandoned session is closed after an idle hour, so sessions
		// (and their presented heads) cannot pile up.
		SessionTimeout: time.Hour,
		// Resumable streams: SSE events carry ids, and a client that
		// reconnects with Last-Event-ID is sent what it missed, from a
		// replay buffer bounded for all sessions together (oldest
		// dropped first).
		EventStore: replayBuffer{events},
		// guard does the DNS-rebinding check, comparing Host names
		// case-insensitively; the SDK's own check is case-sensitive.
		DisableLocalhostProtection: true,
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:    log,
		Stateless: true,
		// 2026-07-28: closing a request's response stream cancels the
		// request, so a long-poll whose client went away ends there and
		// claims nothing.
		PropagateRequestCancellation: true,
		DisableLocalhostProtection:   true,
	})
	calls := newPendingCalls()
	srv.MCP().AddReceivingMiddleware(calls.middleware)
	return guard(token, newJSONRPCFront(sessions, stateless, calls, srv.EndSession, grace))
}

// LoadOrCreateToken reads the bearer token from path, creating it (mode
// 0600, 32 random bytes, base64url) on first run. A token file readable by
// others is refused: any local user could drive the signing key with it.
func LoadOrCreateToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", err
		}
		tok := base64.RawURLEncoding.EncodeToString(raw[:])
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		if _, err := f.WriteString(tok + "\n"); err != nil {
			f.Close()
			return "", fmt.Errorf("token file: %w", err)
		}
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		return tok, nil
	}
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s: mode %v is readable by others; chmod 600 it", path, fi.Mode().Perm())
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("token file %s: want one token of at least 16 characters", path)
	}
	return tok, nil
}

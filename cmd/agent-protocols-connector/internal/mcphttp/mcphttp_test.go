package mcphttp

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckLoopbackAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "127.0.0.2:1": false, "[::ffff:127.0.0.1]:1": false,
		"0.0.0.0:8080": false, "localhost:8080": false, "192.168.1.2:80": false, ":8080": false, "127.0.0.1": false,
	} {
		if err := CheckLoopbackAddr(addr); (err == nil) != ok {
			t.Errorf("%s: err %v", addr, err)
		}
	}
}

func TestTokenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "token")
	tok, err := LoadOrCreateToken(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, %v", fi.Mode().Perm(), err)
	}
	again, err := LoadOrCreateToken(p)
	if err != nil || again != tok {
		t.Fatalf("second load %q %v, want %q", again, err, tok)
	}
	os.Chmod(p, 0o644)
	if _, err := LoadOrCreateToken(p); err == nil {
		t.Fatal("a world-readable token file was accepted")
	}
}

// TestPendingCallsAbandonedBeforeStart: a call abandoned before its
// handler started starts cancelled; one finished normally is forgotten,
// and one abandoned while running is cancelled.
func TestPendingCallsAbandonedBeforeStart(t *testing.T) {
	p := newPendingCalls()
	k := p.begin()
	p.finish(k, true)
	ctx, end := p.start(context.Background(), k)
	if ctx.Err() == nil {
		t.Error("a call abandoned before it started runs uncancelled")
	}
	end()
	k = p.begin()
	ctx, end = p.start(context.Background(), k)
	p.finish(k, true)
	if ctx.Err() == nil {
		t.Error("a running call abandoned is not cancelled")
	}
	end()
	k = p.begin()
	p.finish(k, false)
	if ctx, _ := p.start(context.Background(), k); ctx.Err() != nil || len(p.calls) != 0 {
		t.Errorf("a finished call is remembered (%d) or starts cancelled", len(p.calls))
	}
}

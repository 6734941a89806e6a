package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestRun: the example prints its origin and serves the host there until
// its context ends.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", pw); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	origin := strings.TrimSpace(line)
	k, err := identity.NewKeyFromSeed(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	c, err := adp.NewClient(origin, &adp.ClientOptions{Signer: k, AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Discover(ctx)
	if err != nil || d.Endpoints == nil || d.Endpoints.API != origin+"/v1" {
		t.Fatalf("discovery %+v: %v", d, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

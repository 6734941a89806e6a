package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// start runs the command and returns its origin and a stop function.
func start(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no origin printed: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the host did not stop")
		}
	}
	return strings.TrimSpace(line), stop
}

func client(t *testing.T, origin string) *adp.Client {
	t.Helper()
	k, err := identity.NewKeyFromSeed(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	c, err := adp.NewClient(origin, &adp.ClientOptions{Signer: k, AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunServesDiscovery: the command prints its origin and serves the
// discovery document there.
func TestRunServesDiscovery(t *testing.T) {
	origin, stop := start(t, "--addr", "127.0.0.1:0")
	defer stop()
	d, err := client(t, origin).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Protocol != adp.Protocol || d.Endpoints == nil || d.Endpoints.API != origin+"/v1" {
		t.Fatalf("discovery: %+v", d)
	}
}

// TestRunSurvivesRestart: with --data, rooms and their histories survive
// a restart, and the replayed host keeps accepting writes.
func TestRunSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	origin, stop := start(t, "--addr", "127.0.0.1:0", "--data", dir)
	c := client(t, origin)
	now := time.Now()
	rec, err := c.CreateRoom(ctx, adp.RoomCreate{Topic: "persist", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, rec.RoomID, adp.Message{ContentType: "text/plain", Content: adp.TextContent("before restart")}); err != nil {
		t.Fatal(err)
	}
	stop()

	origin2, stop2 := start(t, "--addr", "127.0.0.1:0", "--data", dir)
	defer stop2()
	c2 := client(t, origin2)
	latest, err := c2.Sync(ctx, rec.RoomID)
	if err != nil || latest.Seq != 2 {
		t.Fatalf("after restart: seq %d, %v", latest.Seq, err)
	}
	if _, err := c2.SendMessage(ctx, rec.RoomID, adp.Message{ContentType: "text/plain", Content: adp.TextContent("after restart")}); err != nil {
		t.Fatal(err)
	}
}

// TestRunOrigin: --origin is announced in discovery and required as the
// request-JWT audience (a token for the listen address is refused).
func TestRunOrigin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	origin, stop := start(t, "--addr", addr, "--origin", "https://adp.example.com")
	defer stop()
	if origin != "https://adp.example.com" {
		t.Fatalf("printed %q", origin)
	}
	c := client(t, "http://"+addr)
	d, err := c.Discover(context.Background())
	if err != nil || d.Endpoints == nil || d.Endpoints.API != "https://adp.example.com/v1" || d.Host != "adp.example.com" {
		t.Fatalf("discovery %+v, %v", d, err)
	}
	refused := false
	for _, err := range c.MyRooms(context.Background(), adp.RoomQuery{}) {
		if !errors.Is(err, adp.ErrInvalidToken) {
			t.Fatalf("token for the listen address: %v", err)
		}
		refused = true
	}
	if !refused {
		t.Fatal("a token for the listen address was accepted")
	}
}

// TestRunDataInUse: a second host process on the --data directory another
// one is serving exits non-zero within 10 s, saying the file is in use,
// instead of waiting for its lock.
func TestRunDataInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts host processes")
	}
	dir := t.TempDir()
	first := &hostProc{tb: t, addr: freeAddr(t)}
	first.args = "--addr " + first.addr + " --data " + dir
	first.start()
	defer first.stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostProcess$")
	cmd.Env = append(os.Environ(), envHostArgs+"=--addr 127.0.0.1:0 --data "+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() <= 0 || ctx.Err() != nil {
		t.Fatalf("the second process: %v after %v (stderr %q)", err, time.Since(start), stderr.String())
	}
	if !strings.Contains(stderr.String(), "in use by another process") {
		t.Fatalf("the second process said %q", stderr.String())
	}
	t.Logf("exit %d after %v: %s", exit.ExitCode(), time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr.String()))
}

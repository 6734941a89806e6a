package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adpconform/adpconformtest"
)

// envHostArgs carries the command line of the host process that
// TestConformanceProcess starts (this test binary, re-executed).
const envHostArgs = "ADPCONFORM_HOST_ARGS"

// TestHostProcess is the host process of TestConformanceProcess; on its
// own it does nothing.
func TestHostProcess(t *testing.T) {
	args := os.Getenv(envHostArgs)
	if args == "" {
		t.Skip("the host process of TestConformanceProcess")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, strings.Fields(args), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err) // as main does
		os.Exit(1)
	}
	os.Exit(0)
}

// TestConformanceProcess runs the conformance suite against this command
// as a separate process: on the memory store and on the bbolt store
// (--data).
func TestConformanceProcess(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		conformProcess(t, "--addr 127.0.0.1:0")
	})
	t.Run("bbolt", func(t *testing.T) {
		t.Parallel()
		conformProcess(t, "--addr 127.0.0.1:0 --data "+t.TempDir())
	})
	// The 2026-09-24 draft (--draft), which the suite reads from the
	// host's discovery document.
	t.Run("memory-2026-09-24", func(t *testing.T) {
		t.Parallel()
		rep := conformProcess(t, "--addr 127.0.0.1:0 --draft 2026-09-24")
		if rep.Draft != adpconform.DraftLater {
			t.Errorf("the suite checked %q", rep.Draft)
		}
	})
	t.Run("bbolt-2026-09-24", func(t *testing.T) {
		t.Parallel()
		conformProcess(t, "--addr 127.0.0.1:0 --draft 2026-09-24 --data "+t.TempDir())
	})
}

// conformProcess starts the host process with args and runs the suite.
func conformProcess(t *testing.T, args string) *adpconform.Report {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostProcess$")
	cmd.Env = append(os.Environ(), envHostArgs+"="+args)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The host's log (a panic a handler recovered, a refused write) is
	// shown when the run fails.
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the host process's log:\n%s", logs.String())
		}
	}()
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("the host process did not stop")
		}
	}()
	rd := bufio.NewReader(out)
	origin, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("the host process printed no origin: %v", err)
	}
	go io.Copy(io.Discard, rd)
	return adpconformtest.Run(t, strings.TrimSpace(origin), &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true},
	})
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

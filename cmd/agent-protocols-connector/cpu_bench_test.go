package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// BenchmarkConnectorCPUPerWrite measures, from outside, the CPU time the
// connector program spends on one signed write: the program serves MCP
// over stdio, a host program without quotas (cmd/adphost --no-quotas,
// state in memory) runs as another process on loopback, and after a
// warm-up of 50 calls each round makes CONNECTOR_BENCH_WRITES (default
// 400) sequential room_send_message calls. The connector process's CPU
// time (utime + stime of /proc/PID/stat, every thread) per write is
// reported in µs and in units of one crypto/ed25519.Verify timed in this
// process (verifies/write), the best round of b.N; sys-µs/write is the
// system (kernel) share of that round.
//
// CONNECTOR_BENCH_BIN names the program (default: this command, built);
// CONNECTOR_BENCH_BASE names a second build, which runs beside it against
// the same host with the rounds interleaved (base-… metrics and the
// ratio). CONNECTOR_BENCH_CPUPROFILE=FILE adds a third connector: this
// test binary serving as the program does, writing a CPU profile of
// itself to FILE when it exits (go tool pprof -top FILE):
//
//	go build -o /tmp/after ./cmd/agent-protocols-connector
//	(git stash; go build -o /tmp/before ./cmd/agent-protocols-connector; git stash pop)
//	CONNECTOR_BENCH_BASE=/tmp/before CONNECTOR_BENCH_BIN=/tmp/after go test ./cmd/agent-protocols-connector \
//	  -run '^$' -bench ConnectorCPUPerWrite -benchtime 5x
func BenchmarkConnectorCPUPerWrite(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc to read a process's CPU time")
	}
	writes := 400
	if s := os.Getenv("CONNECTOR_BENCH_WRITES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("CONNECTOR_BENCH_WRITES=%q", s)
		}
		writes = n
	}
	verify := ed25519VerifyTime()
	origin := startHostProcess(b)

	type conn struct {
		name string
		cs   *mcp.ClientSession
		pid  int
		room string
		best time.Duration
		sys  time.Duration // system CPU time per write in the best round
	}
	var conns []*conn
	add := func(name string, cmd *exec.Cmd) {
		cs, pid := connectCommand(b, cmd, origin)
		conns = append(conns, &conn{name: name, cs: cs, pid: pid, best: -1})
	}
	bin := os.Getenv("CONNECTOR_BENCH_BIN")
	if bin == "" {
		bin = buildConnector(b)
	}
	add("", exec.Command(bin))
	if base := os.Getenv("CONNECTOR_BENCH_BASE"); base != "" {
		add("base-", exec.Command(base))
	}
	if prof := os.Getenv("CONNECTOR_BENCH_CPUPROFILE"); prof != "" {
		self, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), benchChildEnv+"="+prof)
		add("profiled-", cmd)
	}
	ctx := context.Background()
	send := func(c *conn) {
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_send_message",
			Arguments: map[string]any{"room_id": c.room, "content": "benchmark message"}})
		if err != nil || res.IsError {
			b.Fatalf("room_send_message: %v %+v", err, res)
		}
	}
	for _, c := range conns {
		now := time.Now().UnixMilli()
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_create", Arguments: map[string]any{
			"host": origin, "topic": "cpu bench", "visibility": "public", "start_time": now - 60_000, "end_time": now + 3_600_000}})
		if err != nil || res.IsError {
			b.Fatalf("room_create: %v %+v", err, res)
		}
		c.room, _ = get(structured(b, res), "room.room_id").(string)
		for range 50 {
			send(c)
		}
	}
	round := 0
	for b.Loop() {
		for j := range conns {
			c := conns[(j+round)%len(conns)] // alternate which goes first
			u0, s0 := processCPU(b, c.pid)
			for range writes {
				send(c)
			}
			u1, s1 := processCPU(b, c.pid)
			d := (u1 + s1 - u0 - s0) / time.Duration(writes)
			if c.best < 0 || d < c.best {
				c.best, c.sys = d, (s1-s0)/time.Duration(writes)
			}
		}
		round++
	}
	for _, c := range conns {
		b.ReportMetric(float64(c.best.Nanoseconds())/1e3, c.name+"cpu-µs/write")
		b.ReportMetric(float64(c.best)/float64(verify), c.name+"verifies/write")
		b.ReportMetric(float64(c.sys.Nanoseconds())/1e3, c.name+"sys-µs/write")
	}
	b.ReportMetric(float64(verify.Nanoseconds())/1e3, "ed25519-verify-µs")
	if len(conns) > 1 && conns[1].name == "base-" && conns[1].best > 0 {
		b.ReportMetric(float64(conns[0].best)/float64(conns[1].best), "ratio-to-base")
	}
	for _, c := range conns {
		c.cs.Close() // the profiled child writes its profile as it exits
	}
}

// benchChildEnv makes this test binary serve as the connector program,
// profiling itself into the file the variable names (see TestMain).
const benchChildEnv = "CONNECTOR_BENCH_CHILD_CPUPROFILE"

// benchChild is the connector program inside this test binary, for
// profiling: run as main runs it, under a CPU profile written on exit.
func benchChild(prof string) int {
	f, err := os.Create(prof)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitSetup
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitSetup
	}
	defer pprof.StopCPUProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// ed25519VerifyTime is the best of five timings of one
// crypto/ed25519.Verify on this machine.
func ed25519VerifyTime() time.Duration {
	pub, priv, _ := ed25519.GenerateKey(nil)
	msg := bytes.Repeat([]byte{7}, 32)
	sig := ed25519.Sign(priv, msg)
	best := time.Duration(-1)
	for range 5 {
		const n = 2000
		t0 := time.Now()
		for range n {
			if !ed25519.Verify(pub, msg, sig) {
				panic("ed25519")
			}
		}
		if d := time.Since(t0) / n; best < 0 || d < best {
			best = d
		}
	}
	return best
}

// processCPU is the user and the system CPU time of every thread of
// process pid so far, from /proc/PID/stat (in clock ticks of 10 ms).
func processCPU(b *testing.B, pid int) (user, sys time.Duration) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which ends with the last ')':
	// state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, raw)
	}
	const tick = 10 * time.Millisecond // USER_HZ, 100 on Linux
	return time.Duration(ut) * tick, time.Duration(st) * tick
}

// startHostProcess builds cmd/adphost and runs it with its state in
// memory and no quotas on a loopback port; it returns the host's origin.
func startHostProcess(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "adphost")
	if out, err := exec.Command("go", "build", "-o", bin, "../adphost").CombinedOutput(); err != nil {
		b.Fatalf("go build adphost: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--no-quotas")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("adphost printed no origin: %v", err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

// connectCommand configures cmd as `connector serve` with a fresh
// development key allowing origin, starts it through the go-sdk's
// CommandTransport (stdio) and returns the session and the process id.
func connectCommand(b *testing.B, cmd *exec.Cmd, origin string) (*mcp.ClientSession, int) {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "connector.json")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"keygen", "--config", cfg, "--unencrypted-dev"}, nil, io.Discard, &stderr); code != exitOK {
		b.Fatalf("keygen: %s", stderr.String())
	}
	conf, _ := json.Marshal(map[string]any{"hosts": []map[string]any{{"host": origin}}, "key_unencrypted_dev": true,
		"allow_loopback_http": true, "writes_per_minute": -1})
	if err := os.WriteFile(cfg, conf, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd.Args = append(cmd.Args, "serve", "--config", cfg)
	client := mcp.NewClient(&mcp.Implementation{Name: "cpu-bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs, cmd.Process.Pid
}

// Package interop is the client-interop stage: it builds the connector and
// host programs and drives them with the official TypeScript clients
// (the MCP SDK, the 2026-era MCP client, the MCP Inspector), installed from
// npm at the versions package.json pins. interop/run installs them and runs
// these tests; without its environment they skip.
package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The programs the stage drives, as go build names them. Their installed
// names (the path's last element, as go install names them) are the ones
// the READMEs' command lines call.
const (
	connectorPkg = "github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector"
	hostPkg      = "github.com/agentprotocols/go-sdk/cmd/adphost"
)

// The environment interop/run sets.
const (
	envDir     = "AGENT_PROTOCOLS_INTEROP_DIR" // holds node_modules from npm ci of package.json
	envNode    = "AGENT_PROTOCOLS_NODE"        // a node of at least minNode
	envRequire = "AGENT_PROTOCOLS_INTEROP"     // "require": fail where the tests would skip
)

// minNode is the oldest Node major the pinned clients run on (the
// Inspector 2.12 needs 22).
const minNode = 22

// clients is what the tests need from outside Go: Node and the pinned
// npm packages.
type clients struct {
	dir  string // contains node_modules
	node string // the node binary
}

var (
	clientsOnce sync.Once
	clientsEnv  *clients
	clientsErr  error
)

// needClients returns the pinned clients, or skips the test with a
// one-line reason; under AGENT_PROTOCOLS_INTEROP=require it fails instead.
func needClients(t *testing.T) *clients {
	t.Helper()
	switch v := os.Getenv(envRequire); v {
	case "", "require":
	default:
		t.Fatalf("%s=%q: want require or unset", envRequire, v)
	}
	clientsOnce.Do(func() { clientsEnv, clientsErr = findClients() })
	if clientsErr != nil {
		if os.Getenv(envRequire) == "require" {
			t.Fatalf("client interop: %v", clientsErr)
		}
		t.Skipf("client interop: %v (interop/run sets it up)", clientsErr)
	}
	return clientsEnv
}

func findClients() (*clients, error) {
	dir := os.Getenv(envDir)
	if dir == "" {
		return nil, fmt.Errorf("%s unset", envDir)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	node := os.Getenv(envNode)
	if node == "" {
		if node, err = exec.LookPath("node"); err != nil {
			return nil, fmt.Errorf("%s unset and no node on PATH", envNode)
		}
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %v", node, err)
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNode {
		return nil, fmt.Errorf("%s is Node %s; the pinned clients need Node %d or later", node, v, minNode)
	}
	if err := checkInstalled(dir); err != nil {
		return nil, err
	}
	return &clients{dir: dir, node: node}, nil
}

// readPins returns package.json's dependencies as name → exact version
// (an alias "npm:NAME@V" pins V).
func readPins() (map[string]string, error) {
	b, err := os.ReadFile("package.json")
	if err != nil {
		return nil, err
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return nil, fmt.Errorf("package.json: %v", err)
	}
	for name, spec := range pkg.Dependencies {
		if i := strings.LastIndex(spec, "@"); strings.HasPrefix(spec, "npm:") && i > 0 {
			pkg.Dependencies[name] = spec[i+1:]
		}
	}
	return pkg.Dependencies, nil
}

// pins is readPins for a test.
func pins(t *testing.T) map[string]string {
	t.Helper()
	p, err := readPins()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkInstalled: every package package.json pins is installed in dir at
// exactly that version.
func checkInstalled(dir string) error {
	pins, err := readPins()
	if err != nil {
		return err
	}
	for name, want := range pins {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
		if err != nil {
			return fmt.Errorf("%s: %s is not installed (npm ci in %s)", envDir, name, dir)
		}
		var got struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(b, &got) != nil || got.Version != want {
			return fmt.Errorf("%s: %s is %q, package.json pins %q (npm ci in %s)", envDir, name, got.Version, want, dir)
		}
	}
	return nil
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// program returns the path of the built program pkg (built once per run,
// named as go install names it).
func program(t *testing.T, pkg string) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "agent-protocols-interop"); buildErr != nil {
			return
		}
		for _, p := range []string{connectorPkg, hostPkg} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, path.Base(p)), p).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", p, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, path.Base(pkg))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// startProcess starts cmd and stops it (interrupt, then kill) when the
// test ends, logging its output if the test failed. It waits for the
// first line on stdout or stderr that matches ready and returns the
// pattern's last group (the address the process serves on).
func startProcess(t *testing.T, cmd *exec.Cmd, ready *regexp.Regexp) string {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	logs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
	// One writer for both: exec then writes from one goroutine at a time.
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), logs())
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[len(m)-1]:
				default:
				}
			}
		}
		close(found)
		io.Copy(io.Discard, pr) // past a line too long to scan: never block the process
	}()
	select {
	case s, ok := <-found:
		if !ok {
			t.Fatalf("%s exited before it was ready:\n%s", filepath.Base(cmd.Path), logs())
		}
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("%s not ready after 30 s:\n%s", filepath.Base(cmd.Path), logs())
		return ""
	}
}

// startHost runs the host program on a free loopback port and returns
// its origin.
func startHost(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(program(t, hostPkg), "--addr", "127.0.0.1:0")
	return startProcess(t, cmd, regexp.MustCompile(`^(http://127\.0\.0\.1:[0-9]+)$`))
}

// agent is one connector identity: its config file and Agent ID.
type agent struct {
	config string
	id     string
}

// newAgent writes a development key and a config that allows the host at
// origin (loopback HTTP) and returns them.
func newAgent(t *testing.T, origin string) *agent {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "connector.json")
	conn := program(t, connectorPkg)
	if out, err := exec.Command(conn, "keygen", "--config", cfg, "--unencrypted-dev").CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	b, _ := json.Marshal(map[string]any{
		"hosts":               []any{map[string]any{"host": origin}},
		"allow_loopback_http": true,
		"key_unencrypted_dev": true,
	})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &agent{config: cfg, id: whoami(t, cfg, nil)}
}

// whoami is the Agent ID of the connector config, in env (nil: this
// process's).
func whoami(t *testing.T, config string, env []string) string {
	t.Helper()
	cmd := exec.Command(program(t, connectorPkg), "whoami", "--config", config)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("whoami: %v\n%s", err, out)
	}
	id, _, _ := strings.Cut(string(out), "\n")
	return id
}

// serveHTTP runs `connector serve --http addr` on config, in env (nil:
// this process's), until the test ends; it returns the URL it serves and
// the bearer token (in the default token_file next to config).
func serveHTTP(t *testing.T, config string, env []string, addr string) (url, token string) {
	t.Helper()
	cmd := exec.Command(program(t, connectorPkg), "serve", "--config", config, "--http", addr)
	cmd.Env = env
	url = startProcess(t, cmd, regexp.MustCompile(`serving MCP on (http://[^ ]+/)`))
	b, err := os.ReadFile(filepath.Join(filepath.Dir(config), "http-token"))
	if err != nil {
		t.Fatal(err)
	}
	return url, strings.TrimSpace(string(b))
}

// runNode runs a client script from clients/ with the pinned packages
// and returns its standard output; a non-zero exit fails the test.
func (c *clients) runNode(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(c.dir, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("clients", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.node, append([]string{filepath.Join(dir, script)}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder // read once Output has returned
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	return out
}

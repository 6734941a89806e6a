package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runCmd(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = run(ctx, args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// TestKeygenWhoami: keygen writes an encrypted key and a starter config;
// whoami prints the same Agent ID; a second keygen never overwrites.
func TestKeygenWhoami(t *testing.T) {
	t.Setenv(defaultPassphraseEnv, "correct horse battery staple")
	cfg := filepath.Join(t.TempDir(), "connector.json")
	code, out, errs := runCmd(t, nil, "keygen", "--config", cfg)
	if code != exitOK || !strings.HasPrefix(out, "did:agent:") {
		t.Fatalf("keygen: %d %q %q", code, out, errs)
	}
	id := strings.TrimSpace(out)
	fi, err := os.Stat(filepath.Join(filepath.Dir(cfg), "key.age"))
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("key file: %v %v", err, fi)
	}
	code, out, errs = runCmd(t, nil, "whoami", "--config", cfg)
	if code != exitOK || !strings.HasPrefix(out, id+"\n") {
		t.Fatalf("whoami: %d %q %q", code, out, errs)
	}
	if code, _, errs = runCmd(t, nil, "keygen", "--config", cfg); code != exitSetup || !strings.Contains(errs, "refusing to overwrite") {
		t.Fatalf("second keygen: %d %q", code, errs)
	}
	t.Setenv(defaultPassphraseEnv, "wrong")
	if code, _, errs = runCmd(t, nil, "whoami", "--config", cfg); code != exitSetup {
		t.Fatalf("wrong passphrase: %d %q", code, errs)
	}
}

// TestSetupErrors: a missing key, an unreadable or invalid config and a
// state directory held by another process each fail with a clear message
// and the setup exit status.
func TestSetupErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "connector.json")
	os.WriteFile(cfg, []byte(`{"hosts":[{"host":"https://api.example"}]}`), 0o600)
	if code, _, errs := runCmd(t, nil, "serve", "--config", cfg); code != exitSetup || !strings.Contains(errs, "no key at") || !strings.Contains(errs, "keygen") {
		t.Fatalf("missing key: %d %q", code, errs)
	}
	if code, _, errs := runCmd(t, nil, "whoami", "--config", filepath.Join(dir, "absent.json")); code != exitSetup || !strings.Contains(errs, "does not exist") {
		t.Fatalf("absent config: %d %q", code, errs)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"hosts":[],"hosts":[]}`), 0o600)
	if code, _, errs := runCmd(t, nil, "whoami", "--config", bad); code != exitSetup || !strings.Contains(errs, "not a valid connector config") {
		t.Fatalf("invalid config: %d %q", code, errs)
	}
	unknown := filepath.Join(dir, "unknown.json")
	os.WriteFile(unknown, []byte(`{"hosts":[],"allowlist_tool":true}`), 0o600)
	if code, _, errs := runCmd(t, nil, "whoami", "--config", unknown); code != exitSetup || !strings.Contains(errs, "not a valid connector config") {
		t.Fatalf("unknown member: %d %q", code, errs)
	}
	if os.Geteuid() != 0 {
		unreadable := filepath.Join(dir, "unreadable.json")
		os.WriteFile(unreadable, []byte(`{}`), 0o000)
		if code, _, errs := runCmd(t, nil, "whoami", "--config", unreadable); code != exitSetup || !strings.Contains(errs, "unreadable") {
			t.Fatalf("unreadable config: %d %q", code, errs)
		}
	}
	if code, _, errs := runCmd(t, nil, "serve", "--config", cfg, "--http", "0.0.0.0:9999"); code != exitSetup || !strings.Contains(errs, "loopback") {
		t.Fatalf("non-loopback --http: %d %q", code, errs)
	}

	// Locked state: an engine holds the state directory.
	ldir := t.TempDir()
	lcfg := filepath.Join(ldir, "connector.json")
	if code, _, errs := runCmd(t, nil, "keygen", "--config", lcfg, "--unencrypted-dev"); code != exitOK {
		t.Fatalf("keygen: %q", errs)
	}
	c, err := loadConfig(lcfg, false)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := openEngine(context.Background(), c, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if code, _, errs := runCmd(t, nil, "serve", "--config", lcfg); code != exitSetup || !strings.Contains(errs, "in use by another connector") {
		t.Fatalf("locked state: %d %q", code, errs)
	}
}

// TestServeStdio runs serve over stdio: an initialize line in, the
// answer out, exit 0 at EOF.
func TestServeStdio(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "connector.json")
	if code, _, errs := runCmd(t, nil, "keygen", "--config", cfg, "--unencrypted-dev"); code != exitOK {
		t.Fatalf("keygen: %q", errs)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"serve", "--config", cfg}, inR, outW, &errb)
		outW.Close()
	}()
	io.WriteString(inW, initBody+"\n")
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("serve: %q %v", line, err)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not end at EOF")
	}
}

// TestReadmeConfig: the README's config example is a valid config.
func TestReadmeConfig(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Configure")
	j := strings.Index(s[i:], "```json\n")
	k := strings.Index(s[i+j+8:], "```")
	if i < 0 || j < 0 || k < 0 {
		t.Fatal("no config example in README.md")
	}
	p := filepath.Join(t.TempDir(), "connector.json")
	os.WriteFile(p, []byte(s[i+j+8:i+j+8+k]), 0o600)
	c, err := loadConfig(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Hosts) != 1 || c.Hosts[0].Host != "https://api.al.ink" || len(c.Watch) != 1 {
		t.Fatalf("parsed %+v", c)
	}
}

// TestReadmeInspector: the README's MCP Inspector command lines end
// the Inspector's options with "--" before the connector's command (the
// Inspector takes a bare --config as its own and refuses to start), and
// the command after it is one the connector accepts.
func TestReadmeInspector(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, "@modelcontextprotocol/inspector") || !strings.Contains(line, "connector serve") {
			continue
		}
		n++
		_, cmd, ok := strings.Cut(line, " -- ")
		if !ok || !strings.HasPrefix(strings.TrimSpace(cmd), "agent-protocols-connector serve") {
			t.Errorf("Inspector line without -- before the connector command: %s", strings.Join(strings.Fields(line), " "))
			continue
		}
		args := strings.Fields(cmd)[1:]
		if len(args) != 3 || args[1] != "--config" {
			t.Errorf("connector command %q: want serve --config FILE", cmd)
		}
	}
	if n == 0 {
		t.Fatal("README shows no Inspector command line for stdio")
	}
}

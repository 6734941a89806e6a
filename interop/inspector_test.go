package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/connector"
)

const modulePath = "github.com/agentprotocols/go-sdk"

// readmeCommand is one shell command line printed in a README.
type readmeCommand struct {
	file string
	n    int    // its first line's number
	line string // continuation lines joined, spaces collapsed
}

// inspectorCommands returns the MCP Inspector command lines printed in
// the module's README and the connector's, continuation lines joined.
func inspectorCommands(t *testing.T) []readmeCommand {
	t.Helper()
	var out []readmeCommand
	for _, f := range []string{"README.md", strings.TrimPrefix(connectorPkg, modulePath+"/") + "/README.md"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		inSh := false
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			n, line := i+1, lines[i]
			for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + lines[i]
			}
			switch {
			case strings.HasPrefix(line, "```"):
				inSh = !inSh && strings.TrimPrefix(line, "```") == "sh"
			case inSh && strings.HasPrefix(line, "npx ") && strings.Contains(line, "@modelcontextprotocol/inspector"):
				out = append(out, readmeCommand{f, n, strings.Join(strings.Fields(line), " ")})
			}
		}
	}
	return out
}

// TestInspectorReadmeCommands runs the READMEs' MCP Inspector command
// lines as printed, in a shell, against the built connector installed
// under its go install name: on a key made with `connector keygen` in
// the default config directory, with the passphrase in the environment.
// npx must find the Inspector version package.json pins, offline; a
// tools/list must list every tool, a tools/call must succeed.
func TestInspectorReadmeCommands(t *testing.T) {
	c := needClients(t)
	pinned := "@modelcontextprotocol/inspector@" + pins(t)["@modelcontextprotocol/inspector"]
	loopbackURL := regexp.MustCompile(`http://(127\.0\.0\.1:[0-9]+)/`)
	var stdio, http []readmeCommand
	for _, rc := range inspectorCommands(t) {
		if !strings.Contains(rc.line, pinned+" ") {
			t.Errorf("%s:%d: %q: want the pinned %s (the version this test runs)", rc.file, rc.n, rc.line, pinned)
		}
		switch {
		case loopbackURL.MatchString(rc.line):
			http = append(http, rc)
		case strings.Contains(rc.line, " -- "):
			stdio = append(stdio, rc)
		default:
			t.Errorf("%s:%d: %q: neither a stdio command after -- nor a loopback URL", rc.file, rc.n, rc.line)
		}
	}
	if len(stdio) < 2 || len(http) < 1 {
		t.Fatalf("READMEs print %d stdio and %d HTTP Inspector commands; want a tools/list and a tools/call over stdio and a tools/list over HTTP", len(stdio), len(http))
	}

	origin := startHost(t)
	conn := program(t, connectorPkg)
	home := t.TempDir()
	env := append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME=", "AGENT_PROTOCOLS_PASSPHRASE=interop passphrase",
		"PATH="+filepath.Dir(c.node)+string(os.PathListSeparator)+filepath.Dir(conn)+string(os.PathListSeparator)+os.Getenv("PATH"),
		// npx runs the locally installed, pinned Inspector or fails.
		"npm_config_offline=true", "npm_config_update_notifier=false", "npm_config_fund=false",
	)
	keygen := exec.Command(conn, "keygen")
	keygen.Env = env
	if out, err := keygen.CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	cfg := filepath.Join(home, ".config/agent-protocols-connector/connector.json")
	id := whoami(t, cfg, env)
	b, _ := json.Marshal(map[string]any{"hosts": []any{map[string]any{"host": origin}}, "allow_loopback_http": true})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tl := range connector.Tools() {
		want = append(want, tl.Name)
	}
	slices.Sort(want)

	run := func(rc readmeCommand, line string) {
		t.Run(fmt.Sprintf("%s:%d", rc.file, rc.n), func(t *testing.T) {
			t.Log(line)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sh := exec.CommandContext(ctx, "bash", "-c", line)
			sh.Env, sh.Dir = env, c.dir
			var stderr strings.Builder // read once Output has returned
			sh.Stderr = &stderr
			out, err := sh.Output()
			if err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
			}
			var res struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				IsError           bool           `json:"isError"`
				StructuredContent map[string]any `json:"structuredContent"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("output is not one JSON result: %v\n%s", err, out)
			}
			switch {
			case strings.Contains(line, "--method tools/list"):
				var got []string
				for _, tl := range res.Tools {
					got = append(got, tl.Name)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("tools/list: %d tools %v, want the %d of connector.Tools()", len(got), got, len(want))
				}
			case strings.Contains(line, "--method tools/call"):
				if res.IsError || res.StructuredContent == nil {
					t.Errorf("tools/call: %s", out)
				}
				if strings.Contains(line, "identity_current") && res.StructuredContent["agent_id"] != id {
					t.Errorf("identity_current: %v, want agent_id %s", res.StructuredContent, id)
				}
			default:
				t.Errorf("a method this test does not check: %s", line)
			}
		})
	}
	// The stdio commands first: each starts a connector on the config's
	// state directory, which a running HTTP connector would hold.
	for _, rc := range stdio {
		run(rc, rc.line)
	}
	// Then the HTTP commands, against `connector serve --http ADDR` as the
	// README says; should ADDR be taken on this machine, another port
	// stands in and the command is changed to match.
	served := map[string]string{}
	for _, rc := range http {
		readme := loopbackURL.FindStringSubmatch(rc.line)[1]
		addr, ok := served[readme]
		if !ok {
			addr = readme
			if ln, err := net.Listen("tcp", addr); err != nil {
				t.Logf("%s is taken here; another port stands in", addr)
				addr = "127.0.0.1:0"
			} else {
				ln.Close()
			}
			u, _ := serveHTTP(t, cfg, env, addr)
			addr = loopbackURL.FindStringSubmatch(u)[1]
			served[readme] = addr
		}
		run(rc, strings.ReplaceAll(rc.line, "http://"+readme+"/", "http://"+addr+"/"))
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/mcphttp"
	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
	"github.com/agentprotocols/go-sdk/internal/cli"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

// prog is the program's name, as go install names it and as its messages
// and usage start.
const prog = "agent-protocols-connector"

const usage = `usage:
  agent-protocols-connector keygen [--config FILE] [--unencrypted-dev]
  agent-protocols-connector whoami [--config FILE]
  agent-protocols-connector serve  [--config FILE] [--http 127.0.0.1:PORT]
  agent-protocols-connector acp    [--config FILE]

The local Agent Protocols MCP connector: it holds the operator's Agent ID
key and gives an agent the agent_protocols_ tools and resources over MCP
(serve: stdio, or Streamable HTTP on loopback) or inside an ACP chain
(acp). keygen creates the key and a config file; whoami prints the Agent
ID. The config file defaults to connector.json under the user config
directory. "agent-protocols-connector COMMAND --help" describes COMMAND.

exit status: 0 success, 1 runtime error, 2 usage or setup error (no key, unreadable config,
state directory in use)
`

// synopses are the subcommands' usages.
var synopses = map[string]string{
	"keygen": `usage: agent-protocols-connector keygen [--config FILE] [--unencrypted-dev]

Creates the Agent ID key: an age (scrypt) encrypted seed, whose passphrase
(at least 12 characters) comes from the environment variable the config's
passphrase_env names, AGENT_PROTOCOLS_PASSPHRASE by default; and, when
there is none, a config file with an empty host allowlist. It prints the
Agent ID. --unencrypted-dev writes an unencrypted development key instead,
to key.unencrypted-dev, for throwaway identities only.
`,
	"whoami": `usage: agent-protocols-connector whoami [--config FILE]

Prints the Agent ID, then the config, key and state paths and the hosts.
`,
	"serve": `usage: agent-protocols-connector serve [--config FILE] [--http 127.0.0.1:PORT]

Serves MCP on standard input and output, or with --http over Streamable
HTTP on a loopback address, to clients that present
"Authorization: Bearer TOKEN" (the token file is created 0600 on first run
and its path printed to standard error).
`,
	"acp": `usage: agent-protocols-connector acp [--config FILE]

Runs as a proxy component inside an ACP chain (newline-delimited JSON-RPC
on standard input and output, from a conductor) and offers the connector's
MCP server to the agent over MCP-over-ACP.
`,
}

// exit codes
const (
	exitOK    = 0
	exitError = 1
	exitSetup = cli.StatusUsage
)

// fail prints one error line, the program's name first, and returns code.
func fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "%s: %s\n", prog, untrusted.Terminal(err.Error()))
	return code
}

// run is main without the process: args exclude the program name.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitSetup
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	synopsis, ok := synopses[cmd]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q: want keygen, whoami, serve or acp (see %s --help)\n", prog, untrusted.Terminal(cmd), prog)
		return exitSetup
	}
	fs := flag.NewFlagSet(prog+" "+cmd, flag.ContinueOnError)
	configPath := fs.String("config", "", "config file (default: connector.json under the user config directory)")
	var httpAddr *string
	var unencrypted *bool
	switch cmd {
	case "serve":
		httpAddr = fs.String("http", "", "serve Streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio")
	case "keygen":
		unencrypted = fs.Bool("unencrypted-dev", false, "write an UNENCRYPTED development key (never for real identities)")
	}
	if status, done := cli.Parse(fs, rest, synopsis, stdout, stderr); done {
		return status
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s %s: unexpected arguments %q (see %s %s --help)\n", prog, cmd, fs.Args(), prog, cmd)
		return exitSetup
	}
	path := *configPath
	if path == "" {
		p, err := defaultConfigPath()
		if err != nil {
			return fail(stderr, exitSetup, err)
		}
		path = p
	}
	switch cmd {
	case "keygen":
		return keygen(path, *unencrypted, stdout, stderr)
	case "whoami":
		return whoami(path, stdout, stderr)
	case "acp":
		return serve(ctx, path, "", true, stdin, stdout, stderr)
	default:
		return serve(ctx, path, *httpAddr, false, stdin, stdout, stderr)
	}
}

func keygen(path string, unencrypted bool, stdout, stderr io.Writer) int {
	_, statErr := os.Stat(path)
	fresh := errors.Is(statErr, os.ErrNotExist)
	c, err := loadConfig(path, true)
	if err != nil {
		return fail(stderr, exitSetup, err)
	}
	if fresh {
		c.KeyUnencryptedDev = unencrypted
		c.resolveKeyFile()
	} else if c.KeyUnencryptedDev != unencrypted {
		fmt.Fprintf(stderr, "%s: config %s says key_unencrypted_dev=%v; edit it or pass the matching flag\n", prog, path, c.KeyUnencryptedDev)
		return exitSetup
	}
	if _, err := os.Stat(c.KeyFile); err == nil {
		fmt.Fprintf(stderr, "%s: a key already exists at %s; refusing to overwrite it\n", prog, c.KeyFile)
		return exitSetup
	}
	if err := os.MkdirAll(filepath.Dir(c.KeyFile), 0o700); err != nil {
		return fail(stderr, exitSetup, err)
	}
	var id fmt.Stringer
	if unencrypted {
		aid, err := connector.GenerateKeyFileUnencryptedDev(c.KeyFile)
		if err != nil {
			return fail(stderr, exitError, fmt.Errorf("keygen: %w", err))
		}
		id = aid
	} else {
		aid, err := connector.GenerateKeyFile(c.KeyFile, connector.PassphraseEnv(c.PassphraseEnv), nil)
		switch {
		case errors.Is(err, connector.ErrShortPassphrase):
			return fail(stderr, exitSetup, fmt.Errorf("keygen: the passphrase in $%s is too short: a key file passphrase needs at least %d characters", c.PassphraseEnv, connector.MinPassphraseLength))
		case err != nil:
			return fail(stderr, exitSetup, fmt.Errorf("keygen: %w (set %s to the key file passphrase, at least %d characters)", err, c.PassphraseEnv, connector.MinPassphraseLength))
		}
		id = aid
	}
	if fresh {
		starter := &Config{KeyUnencryptedDev: unencrypted, Hosts: []connector.HostConfig{}}
		if err := starter.save(path); err != nil {
			return fail(stderr, exitError, fmt.Errorf("writing config: %w", err))
		}
		fmt.Fprintf(stderr, "%s: wrote %s; add the hosts you allow to its \"hosts\" list\n", prog, path)
	}
	what := "key"
	if unencrypted {
		what = "UNENCRYPTED development key"
	}
	fmt.Fprintf(stderr, "%s: %s written to %s\n", prog, what, c.KeyFile)
	fmt.Fprintln(stdout, id.String())
	return exitOK
}

func whoami(path string, stdout, stderr io.Writer) int {
	c, err := loadConfig(path, false)
	if err != nil {
		return fail(stderr, exitSetup, err)
	}
	c.sayNote(stderr)
	k, err := c.loadKey()
	if err != nil {
		return fail(stderr, exitSetup, err)
	}
	fmt.Fprintln(stdout, k.AgentID().String())
	fmt.Fprintf(stdout, "config: %s\nkey: %s\nstate: %s\n", path, c.KeyFile, c.StateDir)
	for _, h := range c.Hosts {
		state := "allowed"
		if h.Disabled {
			state = "disabled"
		}
		fmt.Fprintf(stdout, "host: %s (%s)\n", h.Host, state)
	}
	return exitOK
}

// openEngine loads the key and opens the state directory named by c.
func openEngine(ctx context.Context, c *Config, notify func(string), httpClient *http.Client, log *slog.Logger) (*connector.Engine, error) {
	k, err := c.loadKey()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", c.StateDir, err)
	}
	eng, err := connector.Open(ctx, &connector.Options{
		Dir:               c.StateDir,
		Key:               k,
		Hosts:             c.Hosts,
		Profiles:          c.Profiles,
		Watch:             c.Watch,
		AllowLoopbackHTTP: c.AllowLoopbackHTTP,
		WritesPerMinute:   c.WritesPerMinute,
		HTTPClient:        httpClient,
		Notify:            notify,
		Logger:            log,
	})
	if errors.Is(err, connector.ErrLocked) {
		return nil, fmt.Errorf("state directory %s is in use by another connector process (one connector per state directory)", c.StateDir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening state %s: %w", c.StateDir, err)
	}
	return eng, nil
}

func serve(ctx context.Context, path, httpAddr string, acp bool, stdin io.Reader, stdout, stderr io.Writer) int {
	if httpAddr != "" {
		if err := mcphttp.CheckLoopbackAddr(httpAddr); err != nil {
			return fail(stderr, exitSetup, err)
		}
	}
	c, err := loadConfig(path, false)
	if err != nil {
		return fail(stderr, exitSetup, err)
	}
	c.sayNote(stderr)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n := mcptools.NewNotifier()
	eng, err := openEngine(ctx, c, n.Notify, nil, log)
	if err != nil {
		return fail(stderr, exitSetup, err)
	}
	defer eng.Close()
	srv := mcptools.NewServer(eng, &mcptools.Options{Logger: log})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go n.Run(ctx, srv.MCP())

	if acp {
		return serveACP(ctx, srv, stdin, stdout, stderr, log)
	}
	if httpAddr == "" {
		// One frame is bounded like an HTTP request body (4 MiB); a bad
		// frame is answered and skipped (jsonl.Transport).
		t := &jsonl.Transport{R: stdin, W: stdout}
		if err := srv.MCP().Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
			return fail(stderr, exitError, err)
		}
		return exitOK
	}

	token, err := mcphttp.LoadOrCreateToken(c.TokenFile)
	if err != nil {
		return fail(stderr, exitSetup, err)
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fail(stderr, exitSetup, err)
	}
	hs := &http.Server{
		Handler:           mcphttp.Handler(srv, token, &mcphttp.Options{Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		hs.Shutdown(sctx)
	}()
	fmt.Fprintf(stderr, "%s: serving MCP on http://%s/ (Authorization: Bearer <token in %s>)\n", prog, ln.Addr(), c.TokenFile)
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail(stderr, exitError, err)
	}
	return exitOK
}

// marshalIndent renders a config for humans (trusted, local data).
func marshalIndent(c *Config) ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return []byte(strings.TrimSpace(string(b))), nil
}

// sayNote tells the operator what loading the config noticed.
func (c *Config) sayNote(stderr io.Writer) {
	if c.note != "" {
		fmt.Fprintf(stderr, "%s: note: %s\n", prog, c.note)
	}
}

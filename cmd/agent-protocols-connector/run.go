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
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

const usage = `usage:
  connector keygen [--config FILE] [--unencrypted-dev]
  connector whoami [--config FILE]
  connector serve  [--config FILE] [--http 127.0.0.1:PORT]
  connector acp    [--config FILE]
`

// exit codes
const (
	exitOK    = 0
	exitError = 1
	exitSetup = 2
)

// run is main without the process: args exclude the program name.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitSetup
	}
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet("connector "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "config file (default: connector.json under the user config directory)")
	var httpAddr *string
	var unencrypted *bool
	switch cmd {
	case "serve":
		httpAddr = fs.String("http", "", "serve Streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio")
	case "keygen":
		unencrypted = fs.Bool("unencrypted-dev", false, "write an UNENCRYPTED development key (never for real identities)")
	case "whoami", "acp":
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "connector: unknown command %q\n%s", cmd, usage)
		return exitSetup
	}
	if err := fs.Parse(rest); err != nil {
		return exitSetup
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "connector %s: unexpected arguments %q\n", cmd, fs.Args())
		return exitSetup
	}
	path := *configPath
	if path == "" {
		p, err := defaultConfigPath()
		if err != nil {
			fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
			return exitSetup
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
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
	}
	if fresh {
		c.KeyUnencryptedDev = unencrypted
	} else if c.KeyUnencryptedDev != unencrypted {
		fmt.Fprintf(stderr, "connector: config %s says key_unencrypted_dev=%v; edit it or pass the matching flag\n", path, c.KeyUnencryptedDev)
		return exitSetup
	}
	if _, err := os.Stat(c.KeyFile); err == nil {
		fmt.Fprintf(stderr, "connector: a key already exists at %s; refusing to overwrite it\n", c.KeyFile)
		return exitSetup
	}
	if err := os.MkdirAll(filepath.Dir(c.KeyFile), 0o700); err != nil {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
	}
	var id fmt.Stringer
	if unencrypted {
		aid, err := connector.GenerateKeyFileUnencryptedDev(c.KeyFile)
		if err != nil {
			fmt.Fprintln(stderr, "connector: keygen:", err)
			return exitError
		}
		id = aid
	} else {
		aid, err := connector.GenerateKeyFile(c.KeyFile, connector.PassphraseEnv(c.PassphraseEnv), nil)
		if err != nil {
			fmt.Fprintf(stderr, "connector: keygen: %v (set %s to the key file passphrase)\n", err, c.PassphraseEnv)
			return exitError
		}
		id = aid
	}
	if fresh {
		starter := &Config{KeyUnencryptedDev: unencrypted, Hosts: []connector.HostConfig{}}
		if err := starter.save(path); err != nil {
			fmt.Fprintln(stderr, "connector: writing config:", err)
			return exitError
		}
		fmt.Fprintf(stderr, "connector: wrote %s; add the hosts you allow to its \"hosts\" list\n", path)
	}
	fmt.Fprintf(stderr, "connector: key written to %s\n", c.KeyFile)
	fmt.Fprintln(stdout, id.String())
	return exitOK
}

func whoami(path string, stdout, stderr io.Writer) int {
	c, err := loadConfig(path, false)
	if err != nil {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
	}
	k, err := c.loadKey()
	if err != nil {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
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
func openEngine(ctx context.Context, c *Config, notify func(string), httpClient *http.Client) (*connector.Engine, error) {
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
			fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
			return exitSetup
		}
	}
	c, err := loadConfig(path, false)
	if err != nil {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n := mcptools.NewNotifier()
	eng, err := openEngine(ctx, c, n.Notify, nil)
	if err != nil {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
	}
	defer eng.Close()
	srv := mcptools.NewServer(eng, &mcptools.Options{Logger: log})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go n.Run(ctx, srv.MCP())

	if acp {
		return serveACP(ctx, srv, stdin, stdout, stderr)
	}
	if httpAddr == "" {
		// One frame is bounded like an HTTP request body (4 MiB); a bad
		// frame is answered and skipped (jsonl.Transport).
		t := &jsonl.Transport{R: stdin, W: stdout}
		if err := srv.MCP().Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
			fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
			return exitError
		}
		return exitOK
	}

	token, err := mcphttp.LoadOrCreateToken(c.TokenFile)
	if err != nil {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitSetup
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
	fmt.Fprintf(stderr, "connector: serving MCP on http://%s/ (Authorization: Bearer <token in %s>)\n", ln.Addr(), c.TokenFile)
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "connector:", untrusted.Terminal(err.Error()))
		return exitError
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

// Command connector is the smallest MCP connector for Agent Protocols: it
// opens the connector engine (package connector), registers its tools and
// resources with the MCP SDK (package connector/mcptools) and serves them
// over stdio. It shows how the pieces compose; the connector to install
// is cmd/agent-protocols-connector, which adds a config file, key
// generation, a stdio framing that survives bad lines, loopback HTTP and
// ACP.
//
//	go run ./examples/connector --key FILE --state DIR --host ORIGIN [--dev]
//
// FILE is a key file agent-protocols-connector keygen wrote: an age
// (scrypt) encrypted seed whose passphrase is in
// $AGENT_PROTOCOLS_PASSPHRASE, or with --dev an unencrypted development
// key. ORIGIN is the one host the agent may use; http://127.0.0.1 origins
// are allowed, for a host on this machine (go run ./cmd/adphost).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

func main() {
	keyFile := flag.String("key", "", "the agent's key file (required)")
	dev := flag.Bool("dev", false, "the key file is an unencrypted development key")
	state := flag.String("state", "", "directory of the connector's state (required)")
	host := flag.String("host", "", "origin of the one host the agent may use (required)")
	flag.Parse()
	if *keyFile == "" || *state == "" || *host == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Standard output carries MCP: everything else goes to standard error.
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, &mcp.StdioTransport{}, *keyFile, *dev, *state, *host, log); err != nil {
		fmt.Fprintln(os.Stderr, "connector:", err)
		os.Exit(1)
	}
}

// run serves one agent's connector on t until the client disconnects or
// ctx ends.
func run(ctx context.Context, t mcp.Transport, keyFile string, dev bool, state, host string, log *slog.Logger) error {
	// 1. The key: the agent's Agent ID, which signs every write.
	var key *connector.Key
	var err error
	if dev {
		key, err = connector.LoadKeyFileUnencryptedDev(keyFile)
	} else {
		key, err = connector.LoadKeyFile(keyFile, connector.PassphraseEnv("AGENT_PROTOCOLS_PASSPHRASE"))
	}
	if err != nil {
		return err
	}

	// 2. The engine: verified rooms, inbox, drafts and outbox in state,
	// for the hosts the operator allows. The Notifier carries its change
	// reports to the MCP clients that subscribed to a resource.
	notifier := mcptools.NewNotifier()
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	eng, err := connector.Open(ctx, &connector.Options{
		Dir:               state,
		Key:               key,
		Hosts:             []connector.HostConfig{{Host: host}},
		AllowLoopbackHTTP: true,
		Notify:            notifier.Notify,
		Logger:            log,
	})
	if err != nil {
		return err
	}
	defer eng.Close()

	// 3. The MCP server: the 27 tools of connector.Tools() and the §4.4
	// resources of connector.Resources(), registered by mcptools.
	srv := mcptools.NewServer(eng, &mcptools.Options{Logger: log})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go notifier.Run(ctx, srv.MCP())

	// 4. A transport: stdio, one client for the life of the process.
	log.Info("serving MCP", "agent", key.AgentID().String(), "host", host)
	err = srv.MCP().Run(ctx, t)
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

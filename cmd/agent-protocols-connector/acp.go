package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/acp"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

// serveACP runs `connector acp`: the connector as a proxy component in an
// ACP chain, offering srv — the same MCP server `serve` runs over stdio
// and HTTP — to the agent over MCP-over-ACP (package acp).
func serveACP(ctx context.Context, srv *mcptools.Server, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger) int {
	err := acp.Serve(ctx, stdin, stdout, &acp.Options{Server: srv.MCP(), ServerName: "agent-protocols", Logger: log})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fail(stderr, exitError, err)
	}
	return exitOK
}

package acp_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/acp"
)

// The conductor's _proxy/initialize becomes the inner initialize, sent
// on to the successor inside _proxy/successor under the proxy's own id.
func ExampleServe() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	in := strings.NewReader(`{"jsonrpc":"2.0","id":"c-1","method":"_proxy/initialize","params":{"protocolVersion":1}}` + "\n")
	if err := acp.Serve(context.Background(), in, os.Stdout, &acp.Options{Server: srv}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"_proxy/successor","params":{"method":"initialize","params":{"protocolVersion":1}}}
}

// A conductor that begins with proxy/initialize (the revision of
// @agentclientprotocol/sdk 2.4) gets the proxy/* revision: the inner
// initialize goes out in proxy/successor, and a _proxy/* method is
// refused rather than forwarded.
func ExampleServe_stateless() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	in := strings.NewReader(`{"jsonrpc":"2.0","id":"c-1","method":"proxy/initialize","params":{"protocolVersion":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":"c-2","method":"_proxy/successor","params":{"method":"session/list"}}` + "\n")
	if err := acp.Serve(context.Background(), in, os.Stdout, &acp.Options{Server: srv}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"proxy/successor","params":{"method":"initialize","params":{"protocolVersion":1}}}
	// {"jsonrpc":"2.0","id":"c-2","error":{"code":-32601,"message":"_proxy/successor: this connection speaks the proxy/* revision (it began with proxy/initialize)"}}
}

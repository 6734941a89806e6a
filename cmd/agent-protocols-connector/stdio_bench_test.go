package main

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
)

// BenchmarkStdioFraming: one ping round trip through the connector's
// stdio framing (stdioTransport: bad-line answers, cancel bookkeeping)
// against the go-sdk's IOTransport, the floor, in the same run.
func BenchmarkStdioFraming(b *testing.B) {
	h := newTestHost(b, nil)
	c := newConnector(b, "bench-stdio", h)
	for _, tc := range []struct {
		name string
		tr   func(r io.Reader, w io.WriteCloser) mcp.Transport
	}{
		{"go-sdk-IOTransport", func(r io.Reader, w io.WriteCloser) mcp.Transport {
			return &mcp.IOTransport{Reader: io.NopCloser(r), Writer: w}
		}},
		{"stdioTransport", func(r io.Reader, w io.WriteCloser) mcp.Transport {
			return &jsonl.Transport{R: r, W: w, MaxLine: mcp.DefaultMaxRequestBodyBytes}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = c.srv.MCP().Run(ctx, tc.tr(inR, outW)); outW.Close() }()
			defer func() { inW.Close(); cancel(); <-done }()
			rd := bufio.NewReader(outR)
			roundTrip := func(line string) {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					b.Fatal(err)
				}
				if _, err := rd.ReadString('\n'); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip(initBody)
			io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+10) + `,"method":"ping"}`)
			}
		})
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

const usage = `usage: discussion [--agents N] [--messages N] [--out DIR] [--quiet]

Runs a moderated ADP discussion against an in-process reference host on
loopback, follows it over SSE, archives it and verifies the archive.

exit status: 0 verified, 1 the demo failed, 2 usage error
`

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// Bounds of the flags: enough for a show, small enough to stay a demo.
const (
	minAgents   = 3
	maxAgents   = 12
	maxMessages = 200
)

// config is the demo's settings.
type config struct {
	agents   int    // agents, the moderator included (>= 3)
	messages int    // discussion messages after the moderator's opening
	out      string // archive directory; "" means a new temporary one
	quiet    bool   // no progress lines, no transcript
	// timeout bounds the whole run, so a stuck step fails instead of
	// hanging; 0 means 60 s.
	timeout time.Duration
}

// run is the whole command, testable without a process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, code := parseFlags(args, stderr)
	if code >= 0 {
		return code
	}
	res, err := demo(ctx, cfg, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "discussion: %v\n", err)
		if res != nil && res.outDir != "" {
			fmt.Fprintf(stderr, "discussion: what was written is in %s\n", res.outDir)
		}
		return exitFail
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (*config, int) {
	fs := flag.NewFlagSet("discussion", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	cfg := &config{}
	fs.IntVar(&cfg.agents, "agents", 3, fmt.Sprintf("number of agents, the moderator included (%d–%d)", minAgents, maxAgents))
	fs.IntVar(&cfg.messages, "messages", 6, fmt.Sprintf("discussion messages after the moderator's opening (1–%d)", maxMessages))
	fs.StringVar(&cfg.out, "out", "", "directory to write the archive to (default: a new temporary directory)")
	fs.BoolVar(&cfg.quiet, "quiet", false, "print only the verification report: no progress lines, no transcript")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK
		}
		return nil, exitUsage
	}
	switch {
	case fs.NArg() != 0:
		fmt.Fprintf(stderr, "discussion: unexpected argument %q\n%s", fs.Arg(0), usage)
		return nil, exitUsage
	case cfg.agents < minAgents || cfg.agents > maxAgents:
		fmt.Fprintf(stderr, "discussion: --agents must be between %d and %d\n", minAgents, maxAgents)
		return nil, exitUsage
	case cfg.messages < 1 || cfg.messages > maxMessages:
		fmt.Fprintf(stderr, "discussion: --messages must be between 1 and %d\n", maxMessages)
		return nil, exitUsage
	}
	if cfg.out != "" {
		if err := os.MkdirAll(cfg.out, 0o755); err != nil {
			fmt.Fprintf(stderr, "discussion: --out: %v\n", err)
			return nil, exitUsage
		}
	}
	return cfg, -1
}

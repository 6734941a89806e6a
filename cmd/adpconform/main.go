// Command adpconform runs the ADP conformance suite (package adpconform)
// against a host:
//
//	go run ./cmd/adpconform [flags] https://host.example
//
// from a clone of the repository (the module is not on the module proxy
// yet; once it is, go run github.com/agentprotocols/go-sdk/cmd/adpconform@latest).
// It makes fresh agents and rooms over the host's public HTTP API and prints
// one line per check: the §24 item, the section, MUST or SHOULD, the check,
// pass / fail / skip and the evidence. --json prints the report for CI
// instead; --info adds the readings (HTTP statuses and other answers the text
// does not fix, which never fail a check). --draft 2026-09-24 checks the
// later draft's §22 items instead of the seed's §24; by default the draft
// is the one the host's discovery document shows, and --list lists the
// seed's checks unless --draft names the later draft.
//
// Exit status: 0 when no MUST check failed (skips say why they could not
// run), 1 when one failed, 2 for a usage error or a target the suite cannot
// talk to.
//
// It lives under cmd/ rather than examples/ because it is a tool host teams
// install and run against their own hosts (in any language), not a
// demonstration of the SDK; the examples are the demonstrations.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/cli"
)

const usage = `usage: adpconform [flags] ORIGIN
       adpconform --list

adpconform runs the ADP conformance suite against the host whose API is at
ORIGIN: https://host.example, or http://127.0.0.1:PORT for a development
host on this machine. It makes fresh agents and rooms over the host's
public HTTP API and prints one line per check: the checklist item (§24 of
the 2026-07-04 draft, §22 of the 2026-09-24 draft), the section, MUST or
SHOULD, the check, pass / fail / skip and the evidence. The draft checked is
--draft's, or else the one the host's discovery document shows.

exit status: 0 no MUST check failed, 1 a MUST check failed, 2 usage or setup error
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("adpconform", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	list := fs.Bool("list", false, "list the checks (item, section, level, ID, title) and exit")
	info := fs.Bool("info", false, "print the readings under each check")
	only := fs.String("only", "", "comma-separated check IDs or prefixes to run (default all)")
	modKey := fs.String("moderator-key", "", "file holding the 32-byte key seed (64 hex or 43 base64url characters) of an agent the host lets create rooms")
	parallel := fs.Int("parallel", 0, "checks run at once (default 8)")
	timeout := fs.Duration("timeout", 0, "bound on one check (default 40s)")
	slack := fs.Duration("activation-slack", 0, "how long past start_time the host's scheduler may take to activate a room (default 5s)")
	draftFlag := fs.String("draft", "", "ADP draft to check, by its date: 2026-07-04 or 2026-09-24 (default: the one the host's discovery document shows)")
	if status, done := cli.Parse(fs, args, usage, stdout, stderr); done {
		return status
	}
	var draft adp.Draft
	if *draftFlag != "" {
		d, err := adp.ParseDraft(*draftFlag)
		if err != nil {
			fmt.Fprintf(stderr, "adpconform: --draft %q: the drafts are %s and %s (see adpconform --help)\n", *draftFlag, adp.Draft20260704, adp.Draft20260924)
			return cli.StatusUsage
		}
		draft = d
	}
	if *list {
		for _, c := range adpconform.ChecksFor(draft) {
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\n", c.Label(), c.Section, c.Level, c.ID, c.Title)
		}
		return 0
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "adpconform: want one ORIGIN argument, have %d (see adpconform --help)\n", fs.NArg())
		return cli.StatusUsage
	}
	opts := &adpconform.Options{AllowLoopbackHTTP: true, Parallel: *parallel, Timeout: *timeout, ActivationSlack: *slack, Draft: draft}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	if *modKey != "" {
		k, err := readKey(*modKey)
		if err != nil {
			fmt.Fprintf(stderr, "adpconform: --moderator-key: %v\n", err)
			return 2
		}
		opts.Moderator = k
	}
	rep, err := adpconform.Run(ctx, fs.Arg(0), opts)
	if err != nil {
		fmt.Fprintf(stderr, "adpconform: %v\n", err)
		return 2
	}
	if *asJSON {
		b, err := json.Marshal(rep, json.Deterministic(true), jsontext.WithIndent("  "))
		if err != nil {
			fmt.Fprintf(stderr, "adpconform: %v\n", err)
			return 2
		}
		stdout.Write(append(b, '\n'))
	} else {
		rep.WriteTable(stdout, *info)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// errKeyFormat explains the key file formats accepted.
var errKeyFormat = errors.New("the key file must hold a 32-byte seed as exactly 64 hexadecimal or 43 unpadded base64url characters (one trailing line break allowed)")

// readKey reads a key seed file strictly (at most 256 bytes).
func readKey(path string) (*identity.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 257))
	if err != nil {
		return nil, err
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	var seed []byte
	switch len(s) {
	case 64:
		seed, err = hex.DecodeString(s)
	case 43:
		seed, err = b64url.Decode(s)
	default:
		return nil, errKeyFormat
	}
	if err != nil || len(seed) != identity.SeedSize {
		return nil, errKeyFormat
	}
	return identity.NewKeyFromSeed(seed)
}

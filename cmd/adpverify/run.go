package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/cli"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

const usage = `usage:
  adpverify archive [-workers N] [-json] [-draft DATE] [-allow-loopback-http] <manifest.json> <records.jsonl>
  adpverify envelope <file>     ("-" reads standard input)

adpverify checks ADP archives and signed envelopes offline. The ADP draft
of an archive (2026-07-04 or 2026-09-24) is recognized from its manifest;
-draft refuses a manifest of the other one.

exit status: 0 valid, 1 invalid (manifest errors included), 2 usage or I/O error,
3 this verifier cannot evaluate the archive
`

// archiveUsage and envelopeUsage are the subcommands' synopses.
const (
	archiveUsage = `usage: adpverify archive [flags] <manifest.json> <records.jsonl>

Verifies a room archive: the manifest (one JSON object) first, then the
records log (JSON Lines, one record a line). Pack documents are read from
the packs directory next to the manifest.

exit status: 0 valid, 1 invalid (manifest errors included), 2 usage or I/O error,
3 this verifier cannot evaluate the archive
`
	envelopeUsage = `usage: adpverify envelope <file>

Verifies one signed envelope: its event hash and strict Ed25519 signature.
"-" reads standard input.

exit status: 0 valid, 1 invalid, 2 usage or I/O error
`
)

// Exit statuses.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUsage   = 2
	// exitCannotEvaluate: the archive needs a feature this verifier lacks
	// (a schema pattern RE2 cannot run); nothing is said about the host.
	exitCannotEvaluate = 3
)

// run is the whole command, testable without a process.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "archive":
		return runArchive(args[1:], stdout, stderr)
	case "envelope":
		return runEnvelope(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitValid
	}
	fmt.Fprintf(stderr, "adpverify: unknown command %q: want archive or envelope (see adpverify --help)\n", t(args[0]))
	return exitUsage
}

func runArchive(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("adpverify archive", flag.ContinueOnError)
	workers := fs.Int("workers", 0, "signature-checking goroutines (0: GOMAXPROCS)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var draft adp.Draft
	fs.TextVar(&draft, "draft", adp.Draft(0), "the ADP draft the archive must follow, 2026-07-04 or 2026-09-24 (default: the manifest's)")
	loopback := fs.Bool("allow-loopback-http", false, "accept http://127.0.0.1 URLs and room hosts (a local development host's archive)")
	if status, done := cli.Parse(fs, args, archiveUsage, stdout, stderr); done {
		return status
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "adpverify archive: want two files, the manifest and then the records: <manifest.json> <records.jsonl>; have %d (see adpverify archive --help)\n", fs.NArg())
		return exitUsage
	}
	if swapped(fs.Arg(0), fs.Arg(1)) {
		fmt.Fprintf(stderr, "adpverify archive: %s is a records log and %s a manifest: the manifest comes first, <manifest.json> <records.jsonl>\n", t(fs.Arg(0)), t(fs.Arg(1)))
		return exitUsage
	}
	rep, err := archive.VerifyFiles(context.Background(), fs.Arg(0), fs.Arg(1),
		&archive.VerifyOptions{Workers: *workers, Draft: draft, AllowLoopbackHTTP: *loopback})
	var ie *identity.Error
	if err != nil && !errors.As(err, &ie) {
		fmt.Fprintf(stderr, "adpverify: %s\n", t(err.Error()))
		return exitUsage
	}
	if *asJSON {
		b, _ := json.Marshal(rep, json.Deterministic(true))
		v := jsontext.Value(b)
		v.Indent()
		fmt.Fprintf(stdout, "%s\n", v)
	} else {
		printReport(stdout, rep)
	}
	switch {
	case err != nil && rep.Failure != nil && rep.Failure.CannotEvaluate:
		return exitCannotEvaluate
	case err != nil:
		return exitInvalid
	}
	return exitValid
}

// t escapes text from the archive or its host for the terminal.
func t(s string) string { return untrusted.Terminal(s) }

// swapped reports whether the files given as <manifest.json>
// <records.jsonl> are the other way round: the first is no manifest and
// the second is one. Only a manifest's worth of each (1 MiB) is read.
func swapped(manifest, records string) bool {
	head := func(path string) []byte {
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		b, _ := io.ReadAll(io.LimitReader(f, archive.MaxManifestBytes+1))
		return b
	}
	if _, err := archive.DetectDraft(head(manifest)); err == nil {
		return false
	}
	_, err := archive.DetectDraft(head(records))
	return err == nil
}

// location is where a failure is, as printed before its message: " at seq
// N (line L)".
func location(f *archive.Failure) string {
	where := ""
	if f.Seq > 0 {
		where = fmt.Sprintf(" at seq %d", f.Seq)
	}
	if f.Line > 0 {
		where += fmt.Sprintf(" (line %d)", f.Line)
	}
	return where
}

// failureMessage is a failure's message without the location the archive
// package puts first ("record seq N (line L): "), which location prints
// already.
func failureMessage(f *archive.Failure) string {
	msg := f.Message
	for _, prefix := range []string{
		fmt.Sprintf("record seq %d (line %d): ", f.Seq, f.Line),
		fmt.Sprintf("record seq %d: ", f.Seq),
		fmt.Sprintf("records line %d: ", f.Line),
	} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return msg
}

// printReport prints the report; every string from the archive is escaped.
func printReport(w io.Writer, r *archive.Report) {
	switch {
	case r.Valid:
		fmt.Fprintln(w, "archive: valid")
	case r.Failure != nil && r.Failure.CannotEvaluate:
		fmt.Fprintln(w, "archive: CANNOT EVALUATE (this verifier lacks a feature the archive needs; no verdict on the host)")
	default:
		fmt.Fprintln(w, "archive: INVALID")
	}
	if f := r.Failure; f != nil {
		fmt.Fprintf(w, "error:    %s%s: %s\n", t(string(f.Code)), location(f), t(failureMessage(f)))
	}
	if r.Draft != 0 {
		fmt.Fprintf(w, "draft:    %s\n", r.Draft)
	}
	if r.RoomID == "" {
		return
	}
	seed := r.Draft.OrDefault() == adp.Draft20260704
	fmt.Fprintf(w, "room:     %s\n", t(r.RoomID))
	switch {
	case seed && (r.Host != "" || r.URL != ""):
		fmt.Fprintf(w, "host:     %s %s (the host's assertion)\n", t(r.Host), t(r.URL))
	case !seed:
		fmt.Fprintf(w, "host:     %s (named by room.create)\n", t(r.Host))
		fmt.Fprintf(w, "url:      %s (the host's assertion)\n", t(r.URL))
	}
	fmt.Fprintf(w, "records:  %d verified, seq 1–%d\n", r.Records, r.LastSeq)
	if r.Records > 0 {
		fmt.Fprintf(w, "last:     %s\n", r.LastHash)
	}
	for _, x := range r.Redacted {
		fmt.Fprintf(w, "redacted: seq %d %s (event %s): signature, payload and permissions not checked\n", x.Seq, t(x.Type), x.EventHash)
	}
	if r.Valid && !seed {
		fmt.Fprintf(w, "last_hash: %s (commits to every record through the pre_hash chain)\n", r.LastHash)
	}
	if r.Valid && seed {
		fmt.Fprintf(w, "events_sha3_256: %s\n", r.EventsSHA3256)
		kind := "= events_sha3_256"
		if r.MerkleRoot {
			kind = "Merkle root of the record hashes"
		}
		fmt.Fprintf(w, "archive_root:    %s (%s)\n", r.ArchiveRoot, kind)
	}
	if r.Status != "" {
		fmt.Fprintf(w, "status:   %s\n", t(string(r.Status)))
		fmt.Fprintf(w, "head:     seq %d %s\n", r.Head.Seq, r.Head.Hash)
	}
	fmt.Fprintf(w, "members:  %d\n", len(r.Members))
	for _, m := range r.Members {
		fmt.Fprintf(w, "  %s %s %s\n", m.ID, t(string(m.Role)), t(string(m.Status)))
	}
	fmt.Fprintf(w, "types:    %d in force in the room; records by type:\n", r.Definitions)
	for _, name := range r.TypeNames() {
		fmt.Fprintf(w, "  %-28s %d\n", t(name), r.Types[name])
	}
	for _, p := range r.Packs {
		fmt.Fprintf(w, "pack:     %s %s\n", t(p.Pack), t(p.Digest))
	}
}

func runEnvelope(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("adpverify envelope", flag.ContinueOnError)
	if status, done := cli.Parse(fs, args, envelopeUsage, stdout, stderr); done {
		return status
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "adpverify envelope: want one file, the envelope (- for standard input); have %d (see adpverify envelope --help)\n", fs.NArg())
		return exitUsage
	}
	name := fs.Arg(0)
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, envelope.MaxSize+1))
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "adpverify: %s\n", t(err.Error()))
		return exitUsage
	}
	if isRecord(b) {
		fmt.Fprintf(stderr, "adpverify envelope: %s is a record (it has seq and envelope members), not an envelope; its envelope is its member .envelope (jq -c .envelope)\n", t(name))
		return exitUsage
	}
	env, err := envelope.Verify(b)
	if err != nil {
		fmt.Fprintln(stdout, "envelope: INVALID")
		var ie *identity.Error
		if errors.As(err, &ie) {
			fmt.Fprintf(stdout, "error:    %s: %s\n", t(string(ie.Code)), t(ie.Message))
		} else {
			fmt.Fprintf(stdout, "error:    %s\n", t(err.Error()))
		}
		return exitInvalid
	}
	ev := env.Event()
	fmt.Fprintln(stdout, "envelope: valid")
	fmt.Fprintf(stdout, "hash:     %s\n", env.Hash())
	fmt.Fprintf(stdout, "protocol: %s\n", t(ev.Protocol))
	fmt.Fprintf(stdout, "type:     %s\n", t(ev.Type))
	fmt.Fprintf(stdout, "actor:    %s\n", ev.Actor)
	fmt.Fprintf(stdout, "created:  %s (%d ms)\n", time.UnixMilli(ev.CreatedAt).UTC().Format(time.RFC3339Nano), ev.CreatedAt)
	return exitValid
}

// isRecord reports whether b is a JSON object with the members seq and
// envelope: a server record, which holds the envelope, not an envelope.
func isRecord(b []byte) bool {
	members, err := strictjson.SplitObject(b)
	if err != nil {
		return false
	}
	var seq, env bool
	for _, m := range members {
		seq = seq || m.Name == "seq"
		env = env || m.Name == "envelope"
	}
	return seq && env
}

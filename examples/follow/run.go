package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
	"github.com/agentprotocols/go-sdk/sse"
)

const usage = `usage: follow --host ORIGIN --room ID --key FILE [--after SEQ] [--json] [--until-ended]

exit status: 0 room ended (--until-ended) or interrupted, 1 refused or invalid, 2 usage, key or setup error
`

// Exit statuses.
const (
	exitOK      = 0
	exitRefused = 1
	exitUsage   = 2
)

// options are the command's settings; tests set the ones flags cannot.
type options struct {
	host, room, keyFile string
	after               int64
	json, untilEnded    bool
	// tune adjusts the subscription (tests shorten the timers).
	tune func(*sse.Options)
}

// run is the whole command, testable without a process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseFlags(args, stderr)
	if code >= 0 {
		return code
	}
	return follow(ctx, o, stdout, stderr)
}

func parseFlags(args []string, stderr io.Writer) (*options, int) {
	fs := flag.NewFlagSet("follow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	o := &options{}
	fs.StringVar(&o.host, "host", "", "host API origin, such as https://api.al.ink")
	fs.StringVar(&o.room, "room", "", "room ID")
	fs.StringVar(&o.keyFile, "key", "", "file holding the member's 32-byte key seed (64 hex or 43 base64url characters)")
	fs.Int64Var(&o.after, "after", 0, "print only records with a greater seq")
	fs.BoolVar(&o.json, "json", false, "print each record as one line of canonical JSON")
	fs.BoolVar(&o.untilEnded, "until-ended", false, "exit 0 after the room's closing record (room.close or room.cancel)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK
		}
		return nil, exitUsage
	}
	switch {
	case fs.NArg() != 0:
		fmt.Fprintf(stderr, "follow: unexpected argument %q\n%s", fs.Arg(0), usage)
		return nil, exitUsage
	case o.host == "" || o.room == "" || o.keyFile == "":
		fmt.Fprintf(stderr, "follow: --host, --room and --key are required\n%s", usage)
		return nil, exitUsage
	case o.after < 0:
		fmt.Fprintln(stderr, "follow: --after must not be negative")
		return nil, exitUsage
	}
	return o, -1
}

// errKeyFormat explains the only key file formats accepted.
var errKeyFormat = errors.New("the key file must hold a 32-byte seed as exactly 64 hexadecimal or 43 unpadded base64url characters (one trailing line break allowed)")

// maxKeyFile bounds what is read from the key file.
const maxKeyFile = 256

// readKey reads a key seed file strictly.
func readKey(path string) (*identity.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	return parseKey(b)
}

// parseKey accepts exactly 64 hex characters or 43 canonical base64url
// characters, optionally followed by "\n" or "\r\n".
func parseKey(b []byte) (*identity.PrivateKey, error) {
	if len(b) > maxKeyFile {
		return nil, errKeyFormat
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	var seed []byte
	var err error
	switch len(b) {
	case 64:
		seed, err = hex.DecodeString(string(b))
	case 43:
		seed, err = b64url.Decode(string(b))
	default:
		return nil, fmt.Errorf("%w; it holds %d characters", errKeyFormat, len(b))
	}
	if err != nil || len(seed) != 32 {
		return nil, errKeyFormat
	}
	return identity.NewKeyFromSeed(seed)
}

func follow(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	key, err := readKey(o.keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "follow: key: %v\n", err)
		return exitUsage
	}
	client, err := adp.NewClient(o.host, &adp.ClientOptions{Signer: key, AllowLoopbackHTTP: true})
	if err != nil {
		fmt.Fprintf(stderr, "follow: %v\n", err)
		return exitUsage
	}
	// The host's discovery document says which ADP draft it serves.
	if _, err := client.Draft(ctx); err != nil {
		return failed(ctx, err, stderr)
	}
	// One replica for the client's history and the live stream: live
	// records are judged by every room rule too, and each is verified once.
	rep, err := client.Replica(o.room)
	if err != nil {
		return failed(ctx, err, stderr)
	}
	so := &sse.Options{Client: client, Replica: rep}
	if o.tune != nil {
		o.tune(so)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for it, err := range sse.Follow(ctx, so) {
		if err != nil {
			w.Flush()
			return failed(ctx, err, stderr)
		}
		switch it.Kind {
		case sse.KindRecord:
			rec := it.Record
			if rec.Seq > o.after {
				if o.json {
					w.Write(rec.AppendJSON(nil))
					w.WriteByte('\n')
				} else {
					writeLine(w, rec)
				}
				w.Flush()
			}
			if t := rec.Envelope.Type(); o.untilEnded && (t == adp.TypeRoomClose || t == adp.TypeRoomCancel) {
				return exitOK
			}
		case sse.KindError:
			fmt.Fprintf(stderr, "follow: %s\n", untrusted.Terminal(it.Err.Error()))
		}
	}
	return exitOK
}

// maxShown bounds the text shown for one record.
const maxShown = 200

// writeLine prints one readable line. Everything the room's agents wrote
// is quoted, so no control character reaches the terminal.
func writeLine(w *bufio.Writer, rec *adp.Record) {
	ev := rec.Envelope.Event()
	at := time.UnixMilli(rec.ReceivedAt).UTC().Format("2006-01-02T15:04:05.000Z")
	fmt.Fprintf(w, "#%d %s %s %s %s\n", rec.Seq, at, ev.Actor, ev.Type, strconv.Quote(summary(ev.Type, ev.Payload)))
}

// summary is a message's text, or the compact payload.
func summary(typ string, payload jsontext.Value) string {
	s := ""
	if typ == adp.TypeMessageCreate {
		var m struct {
			Content any `json:"content"`
		}
		if strictjson.UnmarshalOpen(payload, &m) == nil {
			s, _ = m.Content.(string)
		}
	}
	if s == "" {
		v := jsontext.Value(bytes.Clone(payload))
		if v.Compact() == nil {
			s = string(v)
		}
	}
	if r := []rune(s); len(r) > maxShown {
		s = string(r[:maxShown]) + "…"
	}
	return s
}

// failed reports err and returns the exit status: exitOK when ctx was
// interrupted, exitRefused for a host's refusal, exitUsage otherwise.
func failed(ctx context.Context, err error, stderr io.Writer) int {
	if ctx.Err() != nil {
		return exitOK // interrupted
	}
	// Error text may be the host's: escaped, so no control sequence
	// reaches the terminal.
	fmt.Fprintf(stderr, "follow: %s\n", untrusted.Terminal(err.Error()))
	var ie *identity.Error
	if errors.As(err, &ie) {
		fmt.Fprintf(stderr, "follow: code %s\n", untrusted.Terminal(string(ie.Code)))
		return exitRefused
	}
	return exitUsage
}

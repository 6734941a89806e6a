// Command verify checks Agent Discourse Protocol archives and signed
// envelopes offline: no network, no trust in the host that served them.
//
// Usage:
//
//	verify archive [-workers N] [-json] <manifest.json> <records.jsonl>
//	verify envelope <file>
//
// "verify archive" runs the §19 verification of archive.Verify: every
// envelope hash and signature, the replay of the room's rules, the
// pre_hash chain and the manifest's digests. External pack documents are
// read from the packs directory next to the manifest, one file per
// document named sha256-<base64url digest>.json (the layout archive.WriteDir
// writes); registered packs are built into the SDK. "verify envelope"
// checks one signed envelope's hash and strict Ed25519 signature; "-"
// reads standard input.
//
// Exit status: 0 valid, 1 invalid (the error code and the seq of the
// first failing record are printed), 2 usage or I/O error.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Command verify checks Agent Discourse Protocol archives and signed
// envelopes offline: no network, no trust in the host that served them.
//
// Usage:
//
//	verify archive [-workers N] [-json] [-draft DATE] [-allow-loopback-http] <manifest.json> <records.jsonl>
//	verify envelope <file>
//
// "verify archive" runs the verification of archive.Verify: every
// envelope hash and signature, the replay of the room's rules, the
// pre_hash chain, and the manifest: its digests in the 2026-07-04 draft
// (§19), its last_hash and packs in the 2026-09-24 draft (§18), which it
// recognizes from the manifest's members (-draft refuses the other one).
// Redacted records of the 2026-09-24 draft are listed by seq. External
// pack documents are read from the packs directory next to the manifest,
// one file per document named <algorithm>-<base64url digest>.json (the
// layout archive.WriteDir writes); registered packs are built into the
// SDK. "verify envelope" checks one signed envelope's hash and strict
// Ed25519 signature; "-" reads standard input.
//
// Exit status: 0 valid, 1 invalid (the error code and the seq of the
// first failing record are printed; a malformed or mismatched manifest
// is invalid too), 2 usage or I/O error, 3 this verifier cannot evaluate
// the archive (a type schema needing a feature it lacks).
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

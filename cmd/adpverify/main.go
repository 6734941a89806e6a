// Command adpverify checks Agent Discourse Protocol archives and signed
// envelopes offline: no network, no trust in the host that served them.
//
// Usage:
//
//	adpverify archive [-workers N] [-json] [-draft DATE] [-allow-loopback-http] <manifest.json> <records.jsonl>
//	adpverify envelope <file>
//
// installed with go install ./cmd/adpverify from a clone (the module is
// not on the module proxy yet).
//
// "adpverify archive" runs the verification of archive.Verify: every
// envelope hash and signature, the replay of the room's rules, the
// pre_hash chain, and the manifest: its digests in the 2026-07-04 draft
// (§19), its last_hash and packs in the 2026-09-24 draft (§18), which it
// recognizes from the manifest's members (-draft refuses the other one).
// The manifest comes first, then the records log; given the other way
// round, it says so. Redacted records of the 2026-09-24 draft are listed
// by seq. External pack documents are read from the packs directory next
// to the manifest, one file per document named
// <algorithm>-<base64url digest>.json (the layout archive.WriteDir
// writes); registered packs are built into the SDK. "adpverify envelope"
// checks one signed envelope's hash and strict Ed25519 signature; "-"
// reads standard input. Given a record (a line of a records log), it says
// that the envelope is the record's member .envelope.
//
// Exit status:
//
//	0 valid
//	1 invalid: the error code and the seq and line of the first failing
//	  record are printed; a malformed or mismatched manifest is invalid too
//	2 usage or I/O error: an unknown flag, a missing or swapped file, a
//	  file that cannot be read
//	3 this verifier cannot evaluate the archive: a type schema needs a
//	  feature it lacks (nothing is said about the host)
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

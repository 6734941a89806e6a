package archive_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
)

// The hand-written generator (an independent encoder) produces archives
// the SDK verifies.
func TestGeneratedArchiveVerifies(t *testing.T) {
	var log bytes.Buffer
	m := generate(300, 2, func(l []byte) { log.Write(l); log.WriteByte('\n') })
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 300 || len(rep.Types) != 7 {
		t.Fatalf("%+v", rep)
	}
}

// The generator's 2026-09-24 archives verify too: written by hand from
// that draft's text (accepted_at first in the record and its hash, the
// host named, open speaking, bases on the latest record).
func TestGeneratedLaterArchiveVerifies(t *testing.T) {
	var log bytes.Buffer
	m := generateIn(adp.Draft20260924, 300, 2, func(l []byte) { log.Write(l); log.WriteByte('\n') })
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 300 || len(rep.Types) != 7 || rep.Head.Seq != 1 || rep.Draft != adp.Draft20260924 {
		t.Fatalf("%+v", rep)
	}
	// Every line is already canonical: the SDK reads it back as written.
	for _, l := range lines(log.Bytes()) {
		rec, err := adp.ParseRecordIn(adp.Draft20260924, l)
		if err != nil || !bytes.Equal(rec.CanonicalInput(), l) {
			t.Fatalf("line not canonical: %v\n%s", err, l)
		}
	}
}

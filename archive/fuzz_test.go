package archive_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/identity"
)

// FuzzVerify feeds arbitrary manifest and JSONL bytes to ParseManifest
// and Verify: they never panic, every verdict on a parsed manifest is an
// *identity.Error or success, and success means the report is complete.
func FuzzVerify(f *testing.F) {
	recs := vectorRecords(f, "cancelled")
	m, log, _ := build(f, recs, nil)
	mb, _ := m.MarshalJSON()
	f.Add(mb, log)
	f.Add(mb, log[:len(log)/2])
	f.Add(mb, bytes.ReplaceAll(log, []byte(`"seq":2`), []byte(`"seq":3`)))
	f.Add([]byte(`{}`), []byte("{}\n\n[]"))
	f.Fuzz(func(t *testing.T, manifest, records []byte) {
		m, err := archive.ParseManifest(manifest)
		if err != nil {
			if !errors.Is(err, archive.ErrInvalidManifest) {
				t.Fatalf("ParseManifest: %v", err)
			}
			return
		}
		rep, err := archive.Verify(context.Background(), m, bytes.NewReader(records), &archive.VerifyOptions{Workers: 2})
		var ie *identity.Error
		switch {
		case err == nil:
			if !rep.Valid || rep.Records != m.EventCount || rep.EventsSHA3256 != m.EventsSHA3256 {
				t.Fatalf("valid but %+v", rep)
			}
		case !errors.As(err, &ie):
			t.Fatalf("not a verification error: %v", err)
		case rep.Valid || rep.Failure == nil || rep.Failure.Code != ie.Code:
			t.Fatalf("report %+v for %v", rep, err)
		}
	})
}

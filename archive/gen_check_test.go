package archive_test

import (
	"bytes"
	"context"
	"testing"

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

package connector

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/internal/opcount"
	"github.com/agentprotocols/go-sdk/sse"
)

// startHostProcess builds cmd/adphost and runs it as another process,
// state in memory and no quotas, on a loopback port; it returns the
// host's origin. The host's own verifications then happen outside this
// process, so what this process counts is the connector's.
func startHostProcess(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "adphost")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentprotocols/go-sdk/cmd/adphost").CombinedOutput(); err != nil {
		t.Fatalf("go build adphost: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--no-quotas")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("adphost printed no origin: %v", err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

// TestSendMessageCosts counts the work of one room_send_message through
// the engine against a host in another process: one Ed25519 verification
// (the check of the connector's own signature right after signing), one
// record-hash computation, and one write of the state log flushed to the
// disk (the outbox entry, before the envelope is sent); the accepted record
// and the removal of the entry are logged with their flush deferred (the
// entry, flushed, is replayed if a power loss drops them), and no commit
// of state.db is made. The host's answer carries the envelope just
// signed, matched by its bytes, and the live stream's copy of the record
// is matched to the verified record: neither is verified again.
func TestSendMessageCosts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/adphost")
	}
	origin := startHostProcess(t)
	items := make(chan sse.Item, 64)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), origin)
	defer alice.Close()
	seen := func(_ roomKey, it sse.Item) {
		select {
		case items <- it:
		default:
		}
	}
	alice.liveSeen.Store(&seen)
	room := createRoom(t, alice, origin)
	// waitFor waits until the live subscription handled an item of kind
	// (a record: at least seq), in stream order.
	waitFor := func(kind sse.Kind, seq int64) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case it := <-items:
				if it.Kind == kind && (kind != sse.KindRecord || it.Record.Seq >= seq) {
					return
				}
			case <-timeout:
				t.Fatalf("the live subscription did not deliver a %v (seq %d)", kind, seq)
			}
		}
	}
	// Warm up: the subscription is live and has delivered the room so far.
	for range 3 {
		say(t, alice, room, "warm-up")
	}
	waitFor(sse.KindRecord, 4)

	opcount.Start()
	defer opcount.Stop()
	res := say(t, alice, room, "counted")
	flushed := opcount.Read()
	waitFor(sse.KindRecord, res.Sync.HeadSeq)
	// The host sends the status notice after the record's live copy: once
	// the engine handled it, the copy was handled too.
	if _, err := alice.AgentStatusSet(ctxT(t), "a", AgentStatusSetInput{RoomID: room, State: "idle"}); err != nil {
		t.Fatal(err)
	}
	waitFor(sse.KindAgentStatus, 0)
	got := opcount.Stop()
	if got.Verifies != 1 || got.RecordHashes != 1 {
		t.Fatalf("one room_send_message: %d Ed25519 verifications and %d record hashes in the connector, want 1 and 1", got.Verifies, got.RecordHashes)
	}
	if flushed.SyncedCommits != 0 || flushed.LogFlushes != 1 {
		t.Fatalf("one room_send_message: %d state.db commits and %d state-log writes flushed to the disk, want 0 and 1",
			flushed.SyncedCommits, flushed.LogFlushes)
	}
	var left int
	var stored bool
	alice.store.View(func(tx stateTx) error {
		h, err := alice.host(origin)
		if err != nil {
			return err
		}
		stored = tx.Has(bRecords, reckey(h.name, room, res.Sync.HeadSeq))
		return tx.Scan(bOutbox, "", func(string, []byte) error { left++; return nil })
	})
	if left != 0 || !stored {
		t.Fatalf("after room_send_message the outbox holds %d entries; the record stored: %v", left, stored)
	}
}

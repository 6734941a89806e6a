package connector

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestHostRateLimitIsFinal (ADP §20, §21: rate_limited is the host's
// answer, not a transient failure): the host's rate_limited answer comes
// back at once as a *HostError with the host's code and Retry-After;
// nothing stays in the outbox and nothing is replayed later.
func TestHostRateLimitIsFinal(t *testing.T) {
	_, srv := adphosttest.NewServer(t, &adphost.Options{})
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	for i := range 5 {
		if r := say(t, alice, room, "message"); r.Status != StatusSent {
			t.Fatalf("message %d: %s", i+1, r.Status)
		}
	}
	start := time.Now()
	_, err := alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "sixth"})
	var he *HostError
	if !errors.As(err, &he) || he.Code != identity.CodeRateLimited || !errors.Is(err, identity.ErrRateLimited) {
		t.Fatalf("sixth: %v", err)
	}
	if errors.Is(err, ErrPendingOutbox) || time.Since(start) > 5*time.Second {
		t.Fatalf("sixth was queued or waited: %v after %v", err, time.Since(start))
	}
	if he.Host != srv.URL || he.Status != 429 || he.RetryAfter != time.Minute {
		t.Fatalf("host error: %+v", he)
	}
	n := 0
	_ = alice.store.View(func(tx stateTx) error {
		return tx.Scan(bOutbox, "", func(string, []byte) error { n++; return nil })
	})
	if n != 0 {
		t.Fatalf("%d outbox entries after a host refusal", n)
	}
	if err := alice.ReplayOutbox(ctx); err != nil {
		t.Fatal(err)
	}
	tl := must[*TimelineResult](t)(alice.Timeline(ctx, "a", TimelineInput{RoomID: room, Refresh: true, Types: []string{adp.TypeMessageCreate}}))
	d := must[*DraftsListResult](t)(alice.DraftsList(ctx, DraftsListInput{}))
	if len(tl.Items) != 5 || len(d.Drafts) != 0 {
		t.Fatalf("after replay: %d messages, %d drafts", len(tl.Items), len(d.Drafts))
	}
	// A local refusal is never a HostError.
	if _, err := alice.SendMessage(ctx, "a", SendMessageInput{Host: "https://elsewhere.example", RoomID: room, Content: "x"}); errors.As(err, &he) {
		t.Fatalf("local refusal labelled as the host's: %v", err)
	}
}

// TestHostErrBounds: host text reaching a caller is bounded (message
// 1 KiB, data dropped over 4 KiB) and only answers a host sent are
// labelled as the host's.
func TestHostErrBounds(t *testing.T) {
	big := &identity.Error{Code: "host_not_allowed", Message: strings.Repeat("m", 5000), Status: 403,
		Data: jsontext.Value(`{"x":"` + strings.Repeat("d", 5000) + `"}`)}
	var he *HostError
	if err := hostErr("https://h.example", big); !errors.As(err, &he) || len(he.Message) > maxHostMessage+len("…") || he.Data != nil || he.Host != "https://h.example" {
		t.Fatalf("bounded: message %d bytes, data %d bytes, host %q", len(he.Message), len(he.Data), he.Host)
	}
	if !errors.Is(hostErr("https://h.example", big), identity.NewError("host_not_allowed", "")) {
		t.Fatal("errors.Is lost the code")
	}
	local := identity.NewError(identity.CodeInvalidRequest, "local check")
	if err := hostErr("https://h.example", local); errors.As(err, &he) {
		t.Fatal("a local error labelled as the host's")
	}
}

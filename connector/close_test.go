package connector

import (
	"testing"

	"github.com/agentprotocols/go-sdk/internal/logtest"
)

// TestCloseLogsNoSubscriptionEnd: a subscription that ends because the
// engine closes is not logged as if it had failed.
func TestCloseLogsNoSubscriptionEnd(t *testing.T) {
	_, srv := testHost(t)
	log, logged := logtest.New()
	alice, bob, room := speakerPair(t, srv.URL, func(o *Options) { o.Logger = log })
	must[*WriteResult](t)(alice.SendMessage(ctxT(t), "s", SendMessageInput{RoomID: room, Content: "hello"}))
	waitSynced(t, bob, room, 3) // the live subscription delivered alice's message
	if err := bob.Close(); err != nil {
		t.Fatal(err)
	}
	if l, ok := logged.Find("subscription ended"); ok {
		t.Errorf("a clean Close logged %v", l)
	}
}

// TestBackgroundErrorsAreLogged: the start-up discovery of a host that
// does not answer is reported through Options.Logger.
func TestBackgroundErrorsAreLogged(t *testing.T) {
	_, srv := testHost(t)
	origin := srv.URL
	srv.Close()
	log, logged := logtest.New()
	e := openTest(t, t.TempDir(), testKey(t, "alice"), origin, func(o *Options) { o.Logger = log })
	defer e.Close()
	rec, ok := logged.Await(ctxT(t), "host discovery failed")
	if !ok {
		t.Fatalf("no record; logged %v", logged.Records())
	}
	if rec.Level() != "WARN" || rec.String("err") == "" {
		t.Fatalf("record %v", rec)
	}
}

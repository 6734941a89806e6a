package connector

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCloseLogsNoSubscriptionEnd: a subscription that ends because the
// engine closes is not logged as if it had failed.
func TestCloseLogsNoSubscriptionEnd(t *testing.T) {
	_, srv := testHost(t)
	var mu sync.Mutex
	var logged []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	alice, bob, room := speakerPair(t, srv.URL, func(o *Options) { o.Logf = logf })
	must[*WriteResult](t)(alice.SendMessage(ctxT(t), "s", SendMessageInput{RoomID: room, Content: "hello"}))
	waitSynced(t, bob, room, 3) // the live subscription delivered alice's message
	if err := bob.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		if strings.Contains(l, "subscription ended") {
			t.Errorf("a clean Close logged %q", l)
		}
	}
}

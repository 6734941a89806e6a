package profiletest

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
)

// barrier holds every history lookup until n lookups are waiting, so all
// copies of an envelope miss each other's acceptance.
type barrier struct {
	inner envelope.History
	n     int
	mu    sync.Mutex
	count int
	open  chan struct{}
}

func (b *barrier) Accepted(ctx context.Context, h envelope.Hash) (bool, error) {
	b.mu.Lock()
	b.count++
	if b.count == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-time.After(5 * time.Second):
	}
	return b.inner.Accepted(ctx, h)
}

// Identity §6.3: an exact resubmission is an idempotent lookup, even when
// it races its own first acceptance past the Verifier's history check.
func TestResubmissionRacingAcceptance(t *testing.T) {
	const n = 4
	now := time.UnixMilli(1779753600000)
	b := &barrier{n: n, open: make(chan struct{})}
	srv := newServer(&Options{Now: func() time.Time { return now }}, func(h envelope.History) envelope.History {
		b.inner = h
		return b
	})
	defer srv.Close()
	key, _ := identity.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	a := &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return now }}
	env, err := a.Sign(context.Background(), profile.Protocol, profile.TypeUpdate,
		jsontext.Value(`{"id":"`+key.AgentID().String()+`","name":"Once"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	wire := env.AppendJSON(nil)
	var wg sync.WaitGroup
	errs := make([]error, n)
	bodies := make([][]byte, n)
	for i := range n {
		wg.Go(func() {
			resp, err := srv.Client().Post(srv.URL+"/v1/profiles", "application/json", bytes.NewReader(wire))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			if errs[i] = identity.ReadError(resp); errs[i] == nil {
				bodies[i], errs[i] = io.ReadAll(resp.Body)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("copy %d: %v", i, errs[i])
		}
		d, err := profile.ParseDocument(bodies[i])
		if err != nil || d.EventID != env.Hash() {
			t.Fatalf("copy %d answered %s: %v", i, bodies[i], err)
		}
	}
}

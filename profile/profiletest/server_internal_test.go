package profiletest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
)

// lookups wraps the service's history, records each lookup's answer and
// can hold the first lookup (made by the original submission, under the
// Verifier's lock of the actor) until the test releases it.
type lookups struct {
	inner   envelope.History
	onFirst func()
	mu      sync.Mutex
	answers []bool
}

func (l *lookups) Accepted(ctx context.Context, h envelope.Hash) (bool, error) {
	l.mu.Lock()
	first := len(l.answers) == 0 && l.onFirst != nil
	l.answers = append(l.answers, false) // placeholder, so a second lookup is never "first"
	i := len(l.answers) - 1
	l.mu.Unlock()
	if first {
		l.onFirst()
	}
	seen, err := l.inner.Accepted(ctx, h)
	l.mu.Lock()
	l.answers[i] = seen
	l.mu.Unlock()
	return seen, err
}

func (l *lookups) got() []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.answers...)
}

// heldWriter parks the handler when it starts its answer.
type heldWriter struct {
	*httptest.ResponseRecorder
	once sync.Once
	hold func()
}

func (w *heldWriter) WriteHeader(code int) {
	w.once.Do(w.hold)
	w.ResponseRecorder.WriteHeader(code)
}

// signOnce signs one profile.update on the bubble's clock.
func signOnce(t *testing.T) *envelope.Envelope {
	t.Helper()
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	a := &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: time.Now}
	env, err := a.Sign(context.Background(), profile.Protocol, profile.TypeUpdate,
		jsontext.Value(`{"id":"`+key.AgentID().String()+`","name":"Once"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func submit(h http.Handler, w http.ResponseWriter, wire []byte) {
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, profile.DefaultProfilesPath, bytes.NewReader(wire)))
}

// checkOutcome asserts the Identity §6.3 outcome: every copy was answered
// 200 with the document of env, byte for byte the same; exactly one
// lookup (the original's) missed and every other found the acceptance, so
// each copy was an idempotent lookup; the store holds one update.
func checkOutcome(t *testing.T, svc *service, l *lookups, env *envelope.Envelope, recs []*httptest.ResponseRecorder) {
	t.Helper()
	for i, rec := range recs {
		if rec.Code != http.StatusOK {
			t.Fatalf("copy %d: status %d: %s", i, rec.Code, rec.Body)
		}
		d, err := profile.ParseDocument(rec.Body.Bytes())
		if err != nil || d.EventID != env.Hash() {
			t.Fatalf("copy %d answered %s: %v", i, rec.Body, err)
		}
		if !bytes.Equal(rec.Body.Bytes(), recs[0].Body.Bytes()) {
			t.Fatalf("copy %d answered another document: %s", i, rec.Body)
		}
	}
	got := l.got()
	if len(got) != len(recs) || got[0] {
		t.Fatalf("lookups %v for %d copies", got, len(recs))
	}
	for i, seen := range got[1:] {
		if !seen {
			t.Fatalf("lookup %d missed the acceptance: %v", i+1, got)
		}
	}
	svc.mu.RLock()
	defer svc.mu.RUnlock()
	if a := svc.agents[env.Actor()]; a == nil || len(a.updates) != 1 || len(svc.accepted) != 1 {
		t.Fatalf("store holds %d accepted updates", len(svc.accepted))
	}
}

// Identity §6.3: an exact resubmission is an idempotent lookup, even when
// it races its own first acceptance. The copies arrive while the original
// holds the actor's lock in the middle of its acceptance: each has been
// parsed and its signature verified, and waits for that lock.
func TestResubmissionRacingAcceptance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 4
		env := signOnce(t)
		wire := env.AppendJSON(nil)
		entered, release := make(chan struct{}), make(chan struct{})
		reached, proceed := make(chan struct{}), make(chan struct{})
		var armMu sync.Mutex
		armed := 0
		now := func() time.Time {
			armMu.Lock()
			hold := armed > 0
			if hold {
				armed--
			}
			armMu.Unlock()
			if hold { // a copy, inside AcceptEnvelope before the actor's lock
				reached <- struct{}{}
				<-proceed
			}
			return time.Now()
		}
		l := &lookups{onFirst: func() {
			entered <- struct{}{}
			<-release
		}}
		svc := newService(&Options{Now: now}, func(h envelope.History) envelope.History {
			l.inner = h
			return l
		})
		h := svc.routes()
		recs := make([]*httptest.ResponseRecorder, n)
		for i := range recs {
			recs[i] = httptest.NewRecorder()
		}
		var wg sync.WaitGroup
		wg.Go(func() { submit(h, recs[0], wire) })
		<-entered // the original holds the actor's lock, mid-acceptance
		armMu.Lock()
		armed = n - 1
		armMu.Unlock()
		for i := 1; i < n; i++ {
			wg.Go(func() { submit(h, recs[i], wire) })
		}
		for range n - 1 {
			<-reached
		}
		close(proceed) // the copies go for the lock the original holds…
		close(release) // …while the original completes its acceptance
		wg.Wait()
		checkOutcome(t, svc, l, env, recs)
	})
}

// A copy that arrives after the original was accepted but before the
// original was answered gets the same document.
func TestResubmissionBeforeOriginalAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := signOnce(t)
		wire := env.AppendJSON(nil)
		answering, release := make(chan struct{}), make(chan struct{})
		l := &lookups{}
		svc := newService(nil, func(h envelope.History) envelope.History {
			l.inner = h
			return l
		})
		h := svc.routes()
		orig := &heldWriter{ResponseRecorder: httptest.NewRecorder(), hold: func() {
			answering <- struct{}{}
			<-release
		}}
		var wg sync.WaitGroup
		wg.Go(func() { submit(h, orig, wire) })
		<-answering // accepted, answer not yet written
		copyRec := httptest.NewRecorder()
		submit(h, copyRec, wire)
		if orig.Body.Len() != 0 {
			t.Fatal("the original was answered before the copy")
		}
		close(release)
		wg.Wait()
		checkOutcome(t, svc, l, env, []*httptest.ResponseRecorder{orig.ResponseRecorder, copyRec})
	})
}

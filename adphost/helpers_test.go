package adphost_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// t0 is the tests' start time: 2026-05-26T00:00:00Z.
var t0 = time.UnixMilli(1779753600000)

// clock is a settable test clock shared by host and clients.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(t0.UnixMilli())
	return c
}

func (c *clock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// world is a host on a loopback server with a shared clock.
type world struct {
	t     testing.TB
	host  *adphost.Host
	url   string
	clock *clock
	hc    *http.Client
}

func newWorld(t testing.TB, opts *adphost.Options) *world {
	t.Helper()
	w := &world{t: t, clock: newClock()}
	var o adphost.Options
	if opts != nil {
		o = *opts
	}
	o.Now = w.clock.Now
	if o.Heartbeat == 0 {
		o.Heartbeat = -1
	}
	h, srv := adphosttest.NewServer(t, &o)
	w.host, w.url, w.hc = h, srv.URL, srv.Client()
	return w
}

// key returns a deterministic key for a name.
func key(name string) *identity.PrivateKey {
	seed := sha256.Sum256([]byte("adptest " + name))
	k, err := identity.NewKeyFromSeed(seed[:])
	if err != nil {
		panic(err)
	}
	return k
}

// client returns a client for the named agent.
func (w *world) client(name string) *adp.Client {
	return w.clientWith(name, nil)
}

func (w *world) clientWith(name string, hc *http.Client) *adp.Client {
	w.t.Helper()
	return w.clientIn(name, hc, 0)
}

// clientIn is clientWith for a client told the host's draft (0: learned
// from the discovery document).
func (w *world) clientIn(name string, hc *http.Client, d adp.Draft) *adp.Client {
	w.t.Helper()
	if hc == nil {
		hc = w.hc
	}
	c, err := adp.NewClient(w.url, &adp.ClientOptions{
		Signer: key(name), HTTPClient: hc, Now: w.clock.Now, AllowLoopbackHTTP: true, Draft: d,
		RetryBackoff: time.Millisecond, MaxRetryWait: 50 * time.Millisecond,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// newAuthor returns an author for name with the system clock.
func newAuthor(name string) *envelope.Author { return envelope.NewAuthor(key(name)) }

func id(name string) identity.AgentID { return key(name).AgentID() }

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustv returns v or panics with err (which fails the test with a trace).
func mustv[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func decl(t testing.TB, s string) packs.Declaration {
	t.Helper()
	d, err := packs.ParseDeclaration([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// roomSpec returns a room.create payload active from t0 for an hour.
func roomSpec(t testing.TB, vis adp.Visibility, topic string) adp.RoomCreate {
	return adp.RoomCreate{
		Topic: topic, Visibility: vis, StartTime: t0.UnixMilli(), EndTime: t0.Add(time.Hour).UnixMilli(),
		Tags: []string{"test"}, Language: "en",
		Types: []packs.Declaration{
			decl(t, `{"use":"adp:reactions/1.0"}`),
			decl(t, `{"use":"adp:deliberation/1.0"}`),
			decl(t, `{"type":"review.finding","kind":"message","title":"Review finding","schema":{"type":"object","required":["severity","summary"],"properties":{"severity":{"type":"string","enum":["low","medium","high"]},"summary":{"type":"string","minLength":1}},"additionalProperties":false}}`),
		},
	}
}

func text(s string) adp.Message {
	return adp.Message{ContentType: "text/plain", Content: adp.TextContent(s)}
}

func raw(s string) jsontext.Value { return jsontext.Value(s) }

// wantCode checks err against the sentinel and the HTTP status it came with.
func wantCode(t testing.TB, err error, sentinel *identity.Error, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %s, got success", sentinel.Code)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("want %s, got %v", sentinel.Code, err)
	}
	var e *identity.Error
	if !errors.As(err, &e) || e.Status != status {
		t.Fatalf("%s: want HTTP %d, got %v (status %d)", sentinel.Code, status, err, statusOf(e))
	}
}

func statusOf(e *identity.Error) int {
	if e == nil {
		return 0
	}
	return e.Status
}

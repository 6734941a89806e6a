package adphost_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// newWrappedWorld is newWorld with wrap in front of the host: a hostile
// host whose answers the test rewrites.
func newWrappedWorld(t *testing.T, opts *adphost.Options, wrap func(http.Handler) http.Handler) *world {
	w := &world{t: t, clock: newClock()}
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	var o adphost.Options
	if opts != nil {
		o = *opts
	}
	o.Origin, o.Now, o.Heartbeat = origin, w.clock.Now, -1
	h, err := adphost.New(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = wrap(h)
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	w.host, w.url, w.hc = h, srv.URL, srv.Client()
	return w
}

// rewriter rewrites answers to matching requests while on is set.
type rewriter struct {
	on    atomic.Bool
	match func(*http.Request) bool
	edit  func(body []byte) []byte
}

func (rw *rewriter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rw.on.Load() || !rw.match(r) {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rw.edit(rec.Body.Bytes()))
	})
}

// editRecords applies f to the records of a history page.
func editRecords(f func([]*adp.Record) []*adp.Record) func([]byte) []byte {
	return func(b []byte) []byte {
		members, err := strictjson.SplitObject(b)
		if err != nil {
			return b
		}
		var recs []*adp.Record
		for _, m := range members {
			if m.Name != "result" {
				continue
			}
			d := strictjson.NewDecoder(m.Value)
			d.ReadToken()
			for d.PeekKind() != ']' {
				v, _ := d.ReadValue()
				rec, err := adp.ParseRecord(v)
				if err != nil {
					return b
				}
				recs = append(recs, rec)
			}
		}
		recs = f(recs)
		out := []byte(`{"result":[`)
		for i, r := range recs {
			if i > 0 {
				out = append(out, ',')
			}
			out = r.AppendJSON(out)
		}
		return append(out, "]}"...)
	}
}

func isEvents(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events")
}

// TestForgedHistory: a host that tampers with, reorders, drops, moves in
// from another room or forges a record is caught by the client, which
// returns an invalid_record error and never the data.
func TestForgedHistory(t *testing.T) {
	ctx := context.Background()
	mallory := key("mallory")
	cases := map[string]func([]*adp.Record) []*adp.Record{
		"tampered received_at": func(r []*adp.Record) []*adp.Record {
			c := *r[len(r)-1]
			c.ReceivedAt++
			r[len(r)-1] = &c
			return r
		},
		"reordered": func(r []*adp.Record) []*adp.Record {
			r[1], r[2] = r[2], r[1]
			return r
		},
		"dropped": func(r []*adp.Record) []*adp.Record { return append(r[:1], r[2:]...) },
		"foreign room, rehashed": func(r []*adp.Record) []*adp.Record {
			c := *r[len(r)-1]
			c.RoomID = "another0000000000000"
			c.Hash = c.ComputeHash()
			r[len(r)-1] = &c
			return r
		},
		"forged by a non-member, rehashed": func(r []*adp.Record) []*adp.Record {
			last := r[len(r)-1]
			ev := last.Envelope.Event()
			ev.Actor = mallory.AgentID()
			env, err := envelope.Sign(ctx, mallory, ev)
			if err != nil {
				panic(err)
			}
			c := *last
			c.Envelope = env
			c.Hash = c.ComputeHash()
			r[len(r)-1] = &c
			return r
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			rw := &rewriter{match: isEvents, edit: editRecords(f)}
			w := newWrappedWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()}, rw.wrap)
			alice, bob, room := setup(t, w, adp.VisibilityPublic)
			mustv(alice.SendMessage(ctx, room, text("one")))
			mustv(bob.SendMessage(ctx, room, text("two")))
			rw.on.Store(true)
			carol := w.client("carol")
			_, err := carol.Sync(ctx, room)
			if !errors.Is(err, adp.ErrInvalidRecord) {
				t.Fatalf("Sync: want invalid_record, got %v", err)
			}
			n := 0
			for rec, err := range w.client("dave").Events(ctx, room, 0) {
				if err != nil {
					if !errors.Is(err, adp.ErrInvalidRecord) {
						t.Fatalf("Events: want invalid_record, got %v", err)
					}
					return
				}
				if rec == nil {
					t.Fatal("nil record")
				}
				n++
			}
			t.Fatalf("Events yielded %d records and no error", n)
		})
	}
}

// TestForgedWriteAnswer: a write answered with a record of another
// envelope, or with a bad record hash, is an error.
func TestForgedWriteAnswer(t *testing.T) {
	ctx := context.Background()
	var prev atomic.Pointer[[]byte]
	cases := map[string]func([]byte) []byte{
		"another envelope": func(b []byte) []byte {
			if p := prev.Load(); p != nil {
				return *p
			}
			return b
		},
		"bad hash": func(b []byte) []byte {
			rec, err := adp.ParseRecord(b)
			if err != nil {
				return b
			}
			c := *rec
			c.Hash = envelope.Sum([]byte("forged"))
			return c.AppendJSON(nil)
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			rw := &rewriter{match: func(r *http.Request) bool {
				return r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/join-requests")
			}, edit: edit}
			w := newWrappedWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()}, rw.wrap)
			alice, _, room := setup(t, w, adp.VisibilityPublic)
			first := mustv(alice.SendMessage(ctx, room, text("one")))
			b := first.AppendJSON(nil)
			prev.Store(&b)
			rw.on.Store(true)
			if _, err := alice.SendMessage(ctx, room, text("two")); !errors.Is(err, adp.ErrInvalidRecord) {
				t.Fatalf("want invalid_record, got %v", err)
			}
		})
	}
}

// TestHostileMaxSeenNonce: a host answering nonce_not_greater with a
// Max-Seen-Nonce beyond the identity bounds cannot push the client's nonce
// sequence: the client refuses to re-sign and reports both errors.
func TestHostileMaxSeenNonce(t *testing.T) {
	ctx := context.Background()
	var on atomic.Bool
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if on.Load() && r.Method == http.MethodPost {
				identity.WriteError(w, &identity.Error{Code: identity.CodeNonceNotGreater, Message: "no", MaxSeenNonce: identity.MaxNonce - 1})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	w := newWrappedWorld(t, nil, wrap)
	alice, _, room := setup(t, w, adp.VisibilityPublic)
	before, err := alice.Author().Nonces.Peek(ctx)
	if err != nil {
		t.Fatal(err)
	}
	on.Store(true)
	_, err = alice.SendMessage(ctx, room, text("x"))
	if !errors.Is(err, adp.ErrNonceNotGreater) || !errors.Is(err, identity.ErrNonceJump) {
		t.Fatalf("want nonce_not_greater and ErrNonceJump, got %v", err)
	}
	after, err := alice.Author().Nonces.Peek(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after > before+1 {
		t.Fatalf("the nonce sequence moved from %d to %d", before, after)
	}
}

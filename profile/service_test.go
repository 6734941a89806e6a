package profile_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
	"github.com/agentprotocols/go-sdk/profile/profiletest"
)

// Each rejection of the service, over raw HTTP where the client would
// refuse to send the request, and through the client otherwise.
func TestServiceRejects(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, c := startServer(t, clk, &profiletest.Options{Limits: &profile.Limits{Capabilities: 2}})
	k, other := key(t, 1), key(t, 2)
	a := author(k, clk)
	id := k.AgentID().String()
	okPayload := `{"id":"` + id + `","name":"Agent"}`

	t.Run("bad signature", func(t *testing.T) {
		env := signRaw(t, a, okPayload)
		sig := env.Signature()
		good := base64.RawURLEncoding.EncodeToString(sig[:])
		sig[32] ^= 1 // S changes, stays reduced: a well-formed, wrong signature
		wire := strings.Replace(string(env.AppendJSON(nil)), good, base64.RawURLEncoding.EncodeToString(sig[:]), 1)
		wantHTTPError(t, post(t, srv, "/v1/profiles", []byte(wire)), 400, identity.CodeInvalidSignature)
	})
	t.Run("hash mismatch", func(t *testing.T) {
		wire := strings.Replace(string(signRaw(t, a, okPayload).AppendJSON(nil)), `"Agent"`, `"AgenT"`, 1)
		wantHTTPError(t, post(t, srv, "/v1/profiles", []byte(wire)), 400, identity.CodeInvalidEventHash)
	})
	t.Run("stale timestamp", func(t *testing.T) {
		old := newClock(t0.Add(-10 * time.Minute))
		_, err := c.Update(ctx, author(k, old), minimal("Stale"))
		if !errors.Is(err, identity.ErrTimestampOutOfWindow) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("future timestamp", func(t *testing.T) {
		future := newClock(t0.Add(6 * time.Minute))
		_, err := c.Update(ctx, author(k, future), minimal("Future"))
		if !errors.Is(err, identity.ErrTimestampOutOfWindow) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("reused nonce", func(t *testing.T) {
		// Two devices with separate nonce sources on one clock: both sign
		// nonce t0. The second write is refused with the header.
		e1 := signRaw(t, author(k, clk), `{"id":"`+id+`","name":"Device one"}`)
		e2 := signRaw(t, author(k, clk), `{"id":"`+id+`","name":"Device two"}`)
		if e1.Event().Nonce != e2.Event().Nonce {
			t.Fatal("test setup: nonces differ")
		}
		if resp := post(t, srv, "/v1/profiles", e1.AppendJSON(nil)); resp.StatusCode != 200 {
			t.Fatalf("first write: %d", resp.StatusCode)
		}
		resp := post(t, srv, "/v1/profiles", e2.AppendJSON(nil))
		ie := wantHTTPError(t, resp, 409, identity.CodeNonceNotGreater)
		want := strconv.FormatInt(e1.Event().Nonce, 10)
		if resp.Header.Get(identity.MaxSeenNonceHeader) != want || ie.MaxSeenNonce != e1.Event().Nonce {
			t.Fatalf("Max-Seen-Nonce %q / %d, want %s", resp.Header.Get(identity.MaxSeenNonceHeader), ie.MaxSeenNonce, want)
		}
	})
	t.Run("durable nonce after the cache expired", func(t *testing.T) {
		// Past 2 × window the Verifier's cache forgets the actor; the
		// durable latest-update nonce must still refuse a lower nonce.
		k9 := key(t, 9)
		first := signRaw(t, author(k9, clk), `{"id":"`+k9.AgentID().String()+`","name":"First"}`)
		if resp := post(t, srv, "/v1/profiles", first.AppendJSON(nil)); resp.StatusCode != 200 {
			t.Fatalf("first write: %d", resp.StatusCode)
		}
		clk.Advance(11 * time.Minute)
		defer clk.Advance(-11 * time.Minute)
		low, err := envelope.Sign(ctx, k9, envelope.Event{
			Protocol: profile.Protocol, Type: profile.TypeUpdate, Actor: k9.AgentID(),
			CreatedAt: clk.Now().UnixMilli(), Nonce: first.Event().Nonce - 1,
			Payload: jsontext.Value(`{"id":"` + k9.AgentID().String() + `","name":"Lower"}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		resp := post(t, srv, "/v1/profiles", low.AppendJSON(nil))
		wantHTTPError(t, resp, 409, identity.CodeNonceNotGreater)
		if resp.Header.Get(identity.MaxSeenNonceHeader) != strconv.FormatInt(first.Event().Nonce, 10) {
			t.Fatalf("Max-Seen-Nonce %q", resp.Header.Get(identity.MaxSeenNonceHeader))
		}
	})

	fieldCases := []struct {
		name, payload, pointer string
	}{
		{"actor is not payload id", `{"id":"` + other.AgentID().String() + `","name":"Impostor"}`, "/id"},
		{"missing payload id", `{"name":"Anonymous"}`, "/id"},
		{"unknown payload field", `{"id":"` + id + `","name":"A","username":"anda"}`, "/username"},
		{"updated_at in payload", `{"id":"` + id + `","name":"A","updated_at":1}`, "/updated_at"},
		{"null optional field", `{"id":"` + id + `","name":"A","avatar_url":null}`, "/avatar_url"},
		{"over service limit", `{"id":"` + id + `","name":"A","capabilities":["a","b","c"]}`, "/capabilities"},
		{"bad link", `{"id":"` + id + `","name":"A","links":[{"name":"x","url":"https://a.example","rel":"x"},{"name":"y","url":"ftp://a.example","rel":"x"}]}`, "/links/1/url"},
	}
	for _, fc := range fieldCases {
		t.Run(fc.name, func(t *testing.T) {
			env := signRaw(t, a, fc.payload)
			resp := post(t, srv, "/v1/profiles", env.AppendJSON(nil))
			wantHTTPError(t, resp, 400, identity.CodeInvalidEvent)
			// The client names the field from the error body.
			// (Publish checks locally with NoLimits, so the limit case is
			// the service's answer.)
			_, err := c.Publish(ctx, signRaw(t, a, fc.payload))
			assertFieldError(t, err, identity.ErrInvalidEvent, fc.pointer)
		})
	}

	t.Run("wrong protocol", func(t *testing.T) {
		env, err := a.Sign(ctx, "agent-discourse/1.0", "message.create", jsontext.Value(`{}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantHTTPError(t, post(t, srv, "/v1/profiles", env.AppendJSON(nil)), 400, identity.CodeInvalidEvent)
	})
	t.Run("extra top-level event field", func(t *testing.T) {
		wire := strings.Replace(string(signRaw(t, a, okPayload).AppendJSON(nil)), `"nonce":`, `"room_id":"r","nonce":`, 1)
		wantHTTPError(t, post(t, srv, "/v1/profiles", []byte(wire)), 400, identity.CodeInvalidEvent)
	})
	t.Run("malformed JSON", func(t *testing.T) {
		wantHTTPError(t, post(t, srv, "/v1/profiles", []byte(`{"hash":`)), 400, identity.CodeInvalidEvent)
		wantHTTPError(t, post(t, srv, "/v1/profiles/batch", []byte(`{"ids":[`)), 400, identity.CodeInvalidRequest)
	})
	t.Run("duplicate member names", func(t *testing.T) {
		wire := string(signRaw(t, a, okPayload).AppendJSON(nil))
		dup := strings.Replace(wire, `"name":"Agent"`, `"name":"Agent","name":"Other"`, 1)
		wantHTTPError(t, post(t, srv, "/v1/profiles", []byte(dup)), 400, identity.CodeInvalidEvent)
		wantHTTPError(t, post(t, srv, "/v1/profiles/batch", []byte(`{"ids":[],"ids":[]}`)), 400, identity.CodeInvalidRequest)
	})
	t.Run("unknown batch member", func(t *testing.T) {
		wantHTTPError(t, post(t, srv, "/v1/profiles/batch", []byte(`{"ids":[],"cursor":"x"}`)), 400, identity.CodeInvalidRequest)
		wantHTTPError(t, post(t, srv, "/v1/profiles/batch", []byte(`{}`)), 400, identity.CodeInvalidRequest)
		wantHTTPError(t, post(t, srv, "/v1/profiles/batch", []byte(`{"ids":["did:agent:x"]}`)), 400, identity.CodeInvalidRequest)
	})
	t.Run("batch over 1000", func(t *testing.T) {
		ids := make([]string, profile.MaxBatchIDs+1)
		for i := range ids {
			ids[i] = `"` + id + `"`
		}
		body := []byte(`{"ids":[` + strings.Join(ids, ",") + `]}`)
		wantHTTPError(t, post(t, srv, "/v1/profiles/batch", body), 400, identity.CodeInvalidRequest)
		// Exactly 1000 is fine.
		body = []byte(`{"ids":[` + strings.Join(ids[1:], ",") + `]}`)
		if resp := post(t, srv, "/v1/profiles/batch", body); resp.StatusCode != 200 {
			t.Fatalf("1000 ids: %d", resp.StatusCode)
		}
	})
	t.Run("batch never has next_cursor", func(t *testing.T) {
		body := readAll(t, post(t, srv, "/v1/profiles/batch", []byte(`{"ids":["`+id+`","`+other.AgentID().String()+`"]}`)))
		if bytes.Contains(body, []byte("next_cursor")) || !bytes.HasPrefix(body, []byte(`{"result":[{`)) {
			t.Fatalf("batch body %s", body)
		}
	})
	t.Run("not found", func(t *testing.T) {
		wantHTTPError(t, get(t, srv, "/v1/profiles/"+other.AgentID().String()), 404, identity.CodeNotFound)
		wantHTTPError(t, get(t, srv, "/v1/profiles/"+other.AgentID().String()+"/events"), 404, identity.CodeNotFound)
		wantHTTPError(t, get(t, srv, "/v2/nothing"), 404, identity.CodeNotFound)
	})
	t.Run("malformed agent id in path", func(t *testing.T) {
		wantHTTPError(t, get(t, srv, "/v1/profiles/did:agent:short"), 400, identity.CodeInvalidRequest)
	})
	t.Run("events query", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=-1", "limit=x", "limit=01", "limit=1&limit=2", "cursor=%%%", "cursor=YQ"} {
			t.Run(q, func(t *testing.T) {
				wantHTTPError(t, get(t, srv, "/v1/profiles/"+id+"/events?"+q), 400, identity.CodeInvalidRequest)
			})
		}
	})
	t.Run("method not allowed", func(t *testing.T) {
		wantHTTPError(t, get(t, srv, "/v1/profiles/batch"), 405, identity.CodeInvalidRequest)
		wantHTTPError(t, post(t, srv, "/v1/profiles/"+id, []byte(`{}`)), 405, identity.CodeInvalidRequest)
	})
	t.Run("oversized body", func(t *testing.T) {
		big := bytes.Repeat([]byte(" "), envelope.MaxSize+1)
		wantHTTPError(t, post(t, srv, "/v1/profiles", big), 413, identity.CodePayloadTooLarge)
		wantHTTPError(t, post(t, srv, "/v1/profiles/batch", big), 413, identity.CodePayloadTooLarge)
	})
}

// Invalid payloads and oversized batches fail before any request.
func TestClientValidatesLocally(t *testing.T) {
	ctx := context.Background()
	c, err := profile.NewClient("https://profiles.example", &profile.ClientOptions{HTTPClient: failingClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock(t0)
	k := key(t, 1)
	a := author(k, clk)
	before, _ := a.Nonces.Peek(ctx)

	bad := minimal("Agent")
	bad.Links = []profile.Link{{Name: "Home", URL: "https://example.com", Rel: "homepage"}, {Name: "x", URL: "javascript:alert(1)", Rel: "homepage"}}
	_, err = c.Update(ctx, a, bad)
	assertFieldError(t, err, identity.ErrInvalidEvent, "/links/1/url")

	foreign := minimal("Agent")
	foreign.ID = key(t, 2).AgentID()
	_, err = c.Update(ctx, a, foreign)
	assertFieldError(t, err, identity.ErrInvalidEvent, "/id")

	long := minimal(strings.Repeat("é", 129))
	_, err = c.Update(ctx, a, long)
	assertFieldError(t, err, identity.ErrInvalidEvent, "/name")

	if after, _ := a.Nonces.Peek(ctx); after != before {
		t.Fatalf("a rejected payload consumed a nonce: %d → %d", before, after)
	}

	ids := make([]identity.AgentID, profile.MaxBatchIDs+1)
	for i := range ids {
		ids[i] = k.AgentID()
	}
	if _, err := c.Batch(ctx, ids); !errors.Is(err, identity.ErrInvalidRequest) {
		t.Fatalf("batch of 1001: %v", err)
	}
	if _, err := c.BatchUnverifiedUnsafe(ctx, ids); !errors.Is(err, identity.ErrInvalidRequest) {
		t.Fatalf("batch of 1001: %v", err)
	}

	// The same against a live service: it sees no request at all.
	srv := profiletest.NewServer(&profiletest.Options{Now: clk.Now})
	defer srv.Close()
	if _, err := srv.NewClient(nil).Update(ctx, a, bad); !errors.Is(err, identity.ErrInvalidEvent) || srv.Requests() != 0 {
		t.Fatalf("error %v after %d requests", err, srv.Requests())
	}

	// A tampered envelope is refused by Publish before sending.
	env := signRaw(t, a, `{"id":"`+k.AgentID().String()+`","name":"A","x":1}`)
	_, err = c.Publish(ctx, env)
	assertFieldError(t, err, identity.ErrInvalidEvent, "/x")
}

// Concurrent updates of one key all end accepted: through one shared
// Author, and through two Authors with separate NonceSources, which
// exercises the Max-Seen-Nonce resync.
func TestConcurrentUpdates(t *testing.T) {
	const perWorker = 15
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "one NonceSource", false: "two NonceSources"}[shared]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := newClock(t0) // frozen: every fresh source starts at the same nonce
			srv := profiletest.NewServer(&profiletest.Options{Now: clk.Now})
			t.Cleanup(srv.Close)
			counter := &countingClient{base: srv.Client().Transport}
			c := srv.NewClient(&profile.ClientOptions{HTTPClient: &http.Client{Transport: counter}})
			k := key(t, 1)
			authors := []*envelope.Author{author(k, clk), author(k, clk)}
			if shared {
				authors[1] = authors[0]
			}
			errs := make(chan error, 2*perWorker)
			done := make(chan struct{})
			for w := range 2 {
				go func() {
					defer func() { done <- struct{}{} }()
					for i := range perWorker {
						p := minimal(fmt.Sprintf("worker %d update %d", w, i))
						_, err := c.Update(ctx, authors[w], p)
						errs <- err
					}
				}()
			}
			<-done
			<-done
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			var n int
			var lastHash envelope.Hash
			for env, err := range c.AllEvents(ctx, k.AgentID(), 100) {
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					lastHash = env.Hash()
				}
				n++
			}
			if n != 2*perWorker {
				t.Fatalf("%d accepted updates, want %d", n, 2*perWorker)
			}
			v, err := c.Get(ctx, k.AgentID())
			if err != nil || v.Update.Hash() != lastHash {
				t.Fatalf("current document is not the greatest nonce: %v", err)
			}
			conflicts := counter.count(http.StatusConflict)
			if shared && conflicts != 0 {
				t.Fatalf("%d nonce conflicts with one shared NonceSource", conflicts)
			}
			if !shared && conflicts == 0 {
				t.Fatal("separate NonceSources never hit nonce_not_greater: the resync path was not exercised")
			}
			t.Logf("%d nonce_not_greater answers resolved by resync", conflicts)
		})
	}
}

// Copies of one envelope posted at once: one acceptance, every answer the
// same document (exact resubmission is idempotent even while racing).
func TestConcurrentResubmission(t *testing.T) {
	clk := newClock(t0)
	srv, _ := startServer(t, clk, nil)
	env := signRaw(t, author(key(t, 1), clk), `{"id":"`+key(t, 1).AgentID().String()+`","name":"Once"}`)
	wire := env.AppendJSON(nil)
	const n = 16
	bodies := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
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
			t.Fatal(errs[i])
		}
		d, err := profile.ParseDocument(bodies[i])
		if err != nil || d.EventID != env.Hash() {
			t.Fatalf("answer %s: %v", bodies[i], err)
		}
	}
	if page, err := srv.NewClient(nil).Events(context.Background(), env.Actor(), 10, ""); err != nil || len(page.Updates) != 1 {
		t.Fatalf("history: %v", err)
	}
}

// A Max-Seen-Nonce beyond the Identity bound is not applied.
func TestUpdateIgnoresHostileMaxSeenNonce(t *testing.T) {
	ctx := context.Background()
	var posts int
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodGet {
			return jsonResponse(404, `{"error":{"code":"not_found","message":"none"}}`, nil), nil
		}
		posts++
		h := http.Header{identity.MaxSeenNonceHeader: {"9007199254740990"}}
		return jsonResponse(409, `{"error":{"code":"nonce_not_greater","message":"no"}}`, h), nil
	})}
	c, _ := profile.NewClient("https://profiles.example", &profile.ClientOptions{HTTPClient: hc})
	a := author(key(t, 1), newClock(t0))
	_, err := c.Update(ctx, a, minimal("A"))
	if !errors.Is(err, identity.ErrNonceNotGreater) || !errors.Is(err, identity.ErrNonceJump) {
		t.Fatalf("got %v", err)
	}
	if posts != 1 {
		t.Fatalf("%d posts; a rejected header must not trigger a retry", posts)
	}
	if next, _ := a.Nonces.Peek(ctx); next != t0.UnixMilli()+1 {
		t.Fatalf("next nonce %d: the header moved the sequence", next)
	}
}

func jsonResponse(status int, body string, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: status, Header: h, Body: ioNopCloser(body)}
}

func ioNopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

package adpconform

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/packs"
)

// wire assembles an envelope from its three members as given: the event
// bytes are sent exactly as passed, canonical or not.
func wire(hash string, event []byte, sig string) []byte {
	b := []byte(`{"hash":"` + hash + `","event":`)
	b = append(b, event...)
	return append(b, `,"signature":"`+sig+`"}`...)
}

func sigOf(env *envelope.Envelope) string {
	s := env.Signature()
	return b64url.Encode(s[:])
}

// createPayload is a valid room.create payload for a fresh room.
func (k *kit) createPayload(purpose string) adp.RoomCreate {
	return adp.RoomCreate{Topic: k.topic(purpose), Visibility: adp.VisibilityPublic, StartTime: k.now(), EndTime: k.now() + time.Hour.Milliseconds()}
}

// createPayloadIn is createPayload for the check's draft: the 2026-09-24
// draft's room.create names the target as its host (§8.1).
func (t *T) createPayloadIn(purpose string) adp.RoomCreate {
	p := t.k.createPayload(purpose)
	if t.draft == later {
		p.Host = t.k.origin.String()
	}
	return p
}

// forgedCreate signs a valid room.create of the check's draft as a fresh
// agent and returns the agent, the envelope and its parts.
func (k *kit) forgedCreate(ctx context.Context, t *T, purpose string) (*agent, *envelope.Envelope) {
	a := k.newAgent(t)
	return a, a.sign(ctx, t, adp.TypeRoomCreate, nil, t.createPayloadIn(purpose))
}

// signDigest signs raw event bytes as they are (canonical or not) and
// returns the hash over them and the signature.
func signDigest(ctx context.Context, t *T, a *agent, event []byte) (string, string) {
	h := envelope.Sum(event)
	sig, err := a.key.Sign(ctx, h[:])
	t.ok(err, "sign a digest")
	return h.String(), b64url.Encode(sig)
}

func checkDiscovery(ctx context.Context, t *T) {
	a := t.k.newAgent(t)
	d, err := a.Discover(ctx)
	t.ok(err, "GET "+adp.DiscoveryPath)
	if d.Protocol != adp.Protocol {
		t.Fatalf("protocol is %q, want %q", d.Protocol, adp.Protocol)
	}
	t.Infof("features: %v", d.Features)
	t.Infof("registered_packs: %v", d.RegisteredPacks)
	if len(d.Extra) > 0 {
		t.Infof("members beyond the draft's: %v", slices.Sorted(maps.Keys(d.Extra)))
	}
	if d.Endpoints == nil || d.Endpoints.API == "" {
		t.Fatalf("no endpoints.api")
	}
	if want := t.k.origin.String() + "/v1"; d.Endpoints.API != want {
		t.Infof("endpoints.api is %q (the suite uses %q)", d.Endpoints.API, want)
	}
}

func checkRegisteredPacks(ctx context.Context, t *T) {
	a := t.k.newAgent(t)
	d, err := a.Discover(ctx)
	if err != nil {
		t.Skipf("no discovery document: %v", err)
	}
	if !d.HasFeature("registered-packs") {
		t.Skipf("the host does not declare registered-packs")
	}
	p := t.k.createPayload("registered packs")
	var want []string
	for _, id := range d.RegisteredPacks {
		pk, ok := packs.RegisteredPack(id)
		if !ok {
			t.Infof("%s is not a pack of this draft; not checked", id)
			continue
		}
		p.Types = append(p.Types, packs.Declaration{Import: &packs.Import{Use: id}})
		for _, def := range pk.Types {
			want = append(want, def.Type)
		}
	}
	if len(p.Types) == 0 {
		t.Skipf("no registered pack of this draft is listed")
	}
	rec, err := a.CreateRoom(ctx, p)
	t.ok(err, "room.create importing every listed pack")
	res, err := a.GetRoom(ctx, rec.RoomID)
	t.ok(err, "GET the room")
	var have []string
	for _, def := range res.Types {
		have = append(have, def.Type)
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			t.Fatalf("the room's type registry lacks %s after importing its pack", w)
		}
	}
}

func checkForgedHash(ctx context.Context, t *T) {
	_, env := t.k.forgedCreate(ctx, t, "forged hash")
	body := wire(envelope.Sum([]byte("forged")).String(), env.Canonical(), sigOf(env))
	t.refused(t.k.post(ctx, t, "", body).err(), identity.CodeInvalidEventHash, "room.create with a forged hash")
}

func checkForgedSignature(ctx context.Context, t *T) {
	a, env := t.k.forgedCreate(ctx, t, "forged signature")
	other := a.sign(ctx, t, adp.TypeRoomCreate, nil, t.createPayloadIn("another event"))
	body := wire(env.Hash().String(), env.Canonical(), sigOf(other))
	t.refused(t.k.post(ctx, t, "", body).err(), identity.CodeInvalidSignature, "room.create signed over another event")
}

func checkJCS(ctx context.Context, t *T) {
	// The spelled-out create must be accepted: it is the creator's.
	a := t.k.creator(t)
	env := a.sign(ctx, t, adp.TypeRoomCreate, nil, t.createPayloadIn("JCS"))
	// The same event, spelled non-canonically: indented, the topic's
	// first letter as a \u escape, the envelope members reordered. The
	// hash over its JCS form is the one the envelope claims.
	ev := bytes.Replace(env.Canonical(), []byte(`"topic":"a`), []byte(`"topic":"\u0061`), 1)
	ind := jsontext.Value(slices.Clone(ev))
	if ind.Indent(jsontext.WithIndent("  ")) == nil {
		ev = ind
	}
	body := append([]byte(`{"signature":"`+sigOf(env)+`","event":`), ev...)
	body = append(body, `,"hash":"`+env.Hash().String()+`"}`...)
	ans := t.k.post(ctx, t, "", body)
	t.ok(ans.err(), "a valid room.create spelled non-canonically (the hash is over its JCS form)")
	rec, err := adp.ParseRecordIn(t.draft, ans.body)
	if err == nil && rec.Envelope.Hash() != env.Hash() {
		t.Fatalf("the record's envelope hash is %s, want %s", rec.Envelope.Hash(), env.Hash())
	}
	// A hash and signature over the non-canonical bytes themselves.
	env2 := a.sign(ctx, t, adp.TypeRoomCreate, nil, t.createPayloadIn("JCS 2"))
	raw := jsontext.Value(slices.Clone(env2.Canonical()))
	t.ok(raw.Indent(jsontext.WithIndent("  ")), "indent an event")
	h, sig := signDigest(ctx, t, a, raw)
	t.refused(t.k.post(ctx, t, "", wire(h, raw, sig)).err(), identity.CodeInvalidEventHash, "room.create hashed over non-canonical bytes")
}

func checkDuplicate(ctx context.Context, t *T) {
	_, env := t.k.forgedCreate(ctx, t, "duplicate member")
	ev := append([]byte(`{"type":"room.create",`), env.Canonical()[1:]...)
	t.refused(t.k.post(ctx, t, "", wire(env.Hash().String(), ev, sigOf(env))).err(), identity.CodeInvalidEvent, "room.create with a duplicate \"type\" member")
}

func checkUnsafeInteger(ctx context.Context, t *T) {
	a, env := t.k.forgedCreate(ctx, t, "unsafe integer")
	n := strconv.FormatInt(env.Event().Nonce, 10)
	ev := bytes.Replace(env.Canonical(), []byte(`"nonce":`+n), []byte(`"nonce":9007199254740993`), 1)
	h, sig := signDigest(ctx, t, a, ev)
	t.refused(t.k.post(ctx, t, "", wire(h, ev, sig)).err(), identity.CodeInvalidEvent, "room.create with nonce 2^53+1")
}

func checkClosed(ctx context.Context, t *T) {
	a, env := t.k.forgedCreate(ctx, t, "closed event")
	c := env.Canonical()
	// "zzz" sorts last, so the bytes stay canonical and the hash and
	// signature over them are right: only closedness is wrong.
	ev := append(append([]byte{}, c[:len(c)-1]...), `,"zzz":1}`...)
	h, sig := signDigest(ctx, t, a, ev)
	t.refused(t.k.post(ctx, t, "", wire(h, ev, sig)).err(), identity.CodeInvalidEvent, "room.create with an unknown event member")
}

func checkActor(ctx context.Context, t *T) {
	a, env := t.k.forgedCreate(ctx, t, "bad actor")
	id := a.AgentID().String()
	ev := bytes.Replace(env.Canonical(), []byte(`"`+id+`"`), []byte(`"`+id[:len(id)-2]+`"`), 1)
	h, sig := signDigest(ctx, t, a, ev)
	t.refused(t.k.post(ctx, t, "", wire(h, ev, sig)).err(), identity.CodeInvalidActor, "room.create whose actor is two characters short")
}

func checkRoomIDPath(ctx context.Context, t *T) {
	a, roomA := t.k.room(ctx, t, "room id A", adp.VisibilityPublic, nil)
	b, roomB := t.k.room(ctx, t, "room id B", adp.VisibilityPublic, nil)
	if b != a { // with Options.Moderator, a created both
		_, err := a.Join(ctx, roomB, adp.Join{Role: adp.RoleSpeaker})
		t.ok(err, "join room B")
	}
	base := a.base(ctx, t, roomA, adp.TypeMessageCreate)
	env := a.sign(ctx, t, adp.TypeMessageCreate, &base, text("signed for room A"))
	_, err := a.Submit(ctx, roomB, env)
	t.refusedAny(err, "a message signed for room A posted to room B")
	for _, r := range []struct {
		c    *agent
		room string
	}{{a, roomA}, {b, roomB}} {
		for rec, err := range r.c.Events(ctx, r.room, 0) {
			t.ok(err, "read the history")
			if rec.Envelope.Hash() == env.Hash() {
				t.Fatalf("room %s holds the refused envelope at seq %d", r.room, rec.Seq)
			}
		}
	}
}

func checkWindow(ctx context.Context, t *T) {
	for _, d := range []time.Duration{-time.Hour, time.Hour} {
		a := t.k.newAgent(t)
		p, _ := marshalValue(t, t.k.createPayload("window"))
		at := t.k.opts.Now().Add(d).UnixMilli()
		env := a.signEvent(ctx, t, adp.TypeRoomCreate, nil, p, at, t.k.now())
		_, err := a.SubmitCreate(ctx, env)
		t.refused(err, identity.CodeTimestampOutOfWindow, "room.create with created_at "+d.String()+" from now")
	}
}

func checkNonce(ctx context.Context, t *T) {
	a := t.k.creator(t)
	n, err := a.Author().Nonces.Next(ctx, t.k.opts.Now())
	t.ok(err, "take a nonce")
	p, _ := marshalValue(t, t.k.createPayload("nonce 1"))
	_, err = a.SubmitCreate(ctx, a.signEvent(ctx, t, adp.TypeRoomCreate, nil, p, t.k.now(), n))
	t.ok(err, "room.create with a fresh nonce")
	for _, nonce := range []int64{n, n - 1} {
		p, _ := marshalValue(t, t.k.createPayload("nonce again"))
		_, err := a.SubmitCreate(ctx, a.signEvent(ctx, t, adp.TypeRoomCreate, nil, p, t.k.now(), nonce))
		what := "another room.create with nonce " + strconv.FormatInt(nonce-n, 10) + " from the accepted one"
		t.refused(err, identity.CodeNonceNotGreater, what)
		var e *identity.Error
		errors.As(err, &e)
		if e.MaxSeenNonce == 0 {
			t.Fatalf("%s: no valid Max-Seen-Nonce header", what)
		}
		if e.MaxSeenNonce < n {
			t.Fatalf("%s: Max-Seen-Nonce %d is below the accepted nonce %d", what, e.MaxSeenNonce, n)
		}
	}
}

func checkResubmission(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "resubmission", adp.VisibilityPublic, nil)
	base := a.base(ctx, t, room, adp.TypeMessageCreate)
	env := a.sign(ctx, t, adp.TypeMessageCreate, &base, text("said once"))
	first, err := a.Submit(ctx, room, env)
	t.ok(err, "message.create")
	// The second message moves the head: a resubmission must still
	// answer the original record rather than judge the write again.
	_, err = a.SendMessage(ctx, room, text("said after"))
	t.ok(err, "a second message")
	ans := t.k.post(ctx, t, room, env.AppendJSON(nil))
	t.ok(ans.err(), "the first envelope sent again")
	again, err := adp.ParseRecord(ans.body)
	t.ok(err, "the resubmission's answer is a record")
	if again.Seq != first.Seq || again.Hash != first.Hash || again.ReceivedAt != first.ReceivedAt {
		t.Fatalf("resubmission answered seq %d hash %s received_at %d; the original is seq %d hash %s received_at %d",
			again.Seq, again.Hash, again.ReceivedAt, first.Seq, first.Hash, first.ReceivedAt)
	}
	n := 0
	for rec, err := range a.Events(ctx, room, 0) {
		t.ok(err, "read the history")
		if rec.Envelope.Hash() == env.Hash() {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the envelope is in the history %d times", n)
	}
}

// marshalValue encodes v deterministically.
func marshalValue(t *T, v any) (jsontext.Value, error) {
	raw, err := json.Marshal(v, json.Deterministic(true))
	t.ok(err, "encode a payload")
	return raw, nil
}

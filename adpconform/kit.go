package adpconform

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

// maxBody bounds every answer the kit reads itself (history pages go
// through adp.Client, which has its own bound), and the pages of every
// listing it follows together (adp.ClientOptions.MaxListBytes): the
// lists of the kit's own rooms are a few items long.
const maxBody = 8 << 20

// kit is the state one run shares between its checks: the target, the
// HTTP client, the tag that marks this run's rooms, the optional trusted
// moderator.
type kit struct {
	opts   *Options
	origin identity.Origin
	oopts  *identity.OriginOptions
	hc     *http.Client
	tag    string

	modOnce sync.Once
	mod     *agent
	modErr  error
}

func newKit(target string, o *Options) (*kit, error) {
	oopts := &identity.OriginOptions{AllowLoopbackHTTP: o.AllowLoopbackHTTP}
	origin, err := identity.ParseOrigin(strings.TrimSuffix(target, "/"), oopts)
	if err != nil {
		return nil, fmt.Errorf("adpconform: target %q is not a host API origin: %w", target, err)
	}
	// The kit's own requests (raw envelopes, live streams) follow
	// redirects only within the target's origin, like the SDK's: a target
	// must not make the kit send its signed bodies or request JWTs
	// elsewhere, nor pass another origin's answers off as its own.
	hc := httpc.NewHTTPClient(o.HTTPClient, oopts)
	var tag [5]byte
	rand.Read(tag[:])
	return &kit{opts: o, origin: origin, oopts: oopts, hc: hc, tag: fmt.Sprintf("%x", tag)}, nil
}

// agent is one fresh agent of the suite: its key, its verifying client and
// its author (which shares the client's nonce source).
type agent struct {
	*adp.Client
	key identity.Signer
}

// newAgent makes an agent with a fresh key.
func (k *kit) newAgent(t *T) *agent {
	key, err := identity.GenerateKey(rand.Reader)
	t.ok(err, "generate a key")
	return k.agentFor(t, key)
}

func (k *kit) agentFor(t *T, key identity.Signer) *agent {
	a, err := k.client(key)
	t.ok(err, "make a client")
	return a
}

func (k *kit) client(key identity.Signer) (*agent, error) { return k.clientPaging(key, 0) }

// clientPaging is client with a history page size (0: the default).
func (k *kit) clientPaging(key identity.Signer, pageSize int) (*agent, error) {
	c, err := adp.NewClient(k.origin.String(), &adp.ClientOptions{
		PageSize: pageSize,
		Signer:   key, HTTPClient: k.hc, Now: k.opts.Now,
		AllowLoopbackHTTP: k.opts.AllowLoopbackHTTP,
		// The suite judges every answer itself: no retries, so a 429
		// or 503 is seen as the host sent it.
		Retries:      -1,
		MaxListBytes: maxBody,
	})
	if err != nil {
		return nil, err
	}
	return &agent{Client: c, key: key}, nil
}

// creator returns the agent that creates a room: the trusted moderator
// when one is configured, a fresh agent otherwise.
func (k *kit) creator(t *T) *agent {
	if k.opts.Moderator == nil {
		return k.newAgent(t)
	}
	k.modOnce.Do(func() { k.mod, k.modErr = k.client(k.opts.Moderator) })
	t.ok(k.modErr, "make the moderator's client")
	return k.mod
}

// now returns the kit's clock in Unix milliseconds.
func (k *kit) now() int64 { return k.opts.Now().UnixMilli() }

// topic returns a room topic that names this run and the room's purpose,
// so that discovery queries find exactly the rooms of this run.
func (k *kit) topic(purpose string) string {
	return "adpconform " + k.tag + " " + purpose
}

// room creates an active room (start now, end in an hour) as a fresh
// creator; edit adjusts the payload first.
func (k *kit) room(ctx context.Context, t *T, purpose string, vis adp.Visibility, edit func(*adp.RoomCreate)) (*agent, string) {
	a := k.creator(t)
	p := adp.RoomCreate{Topic: k.topic(purpose), Visibility: vis, StartTime: k.now(), EndTime: k.now() + time.Hour.Milliseconds()}
	if edit != nil {
		edit(&p)
	}
	rec, err := a.CreateRoom(ctx, p)
	t.ok(err, "create a "+string(vis)+" room ("+purpose+")")
	return a, rec.RoomID
}

// member makes a fresh agent join a public room directly with role.
func (k *kit) member(ctx context.Context, t *T, room string, role adp.Role) *agent {
	a := k.newAgent(t)
	_, err := a.Join(ctx, room, adp.Join{Role: role})
	t.ok(err, "join the public room as "+string(role))
	return a
}

// base syncs a's replica of room and returns the base a write of typ
// takes: the head for non-signal writes.
func (a *agent) base(ctx context.Context, t *T, room, typ string) adp.Base {
	_, err := a.Sync(ctx, room)
	t.ok(err, "read the room history")
	rep, err := a.Replica(room)
	t.ok(err, "the replica of the room")
	b, err := rep.BaseFor(typ)
	t.ok(err, "take the base of a "+typ)
	return b
}

// fields encodes the ADP top-level event members for base and mentions
// without the SDK's own checks, so that the suite can sign what a careful
// client never would.
func fields(base *adp.Base, mentions []string) envelope.Fields {
	if base == nil {
		return nil
	}
	room, _ := jsontext.AppendQuote(nil, base.RoomID)
	fs := envelope.Fields{
		{Name: adp.FieldRoomID, Value: room},
		{Name: adp.FieldBaseSeq, Value: strconv.AppendInt(nil, base.Seq, 10)},
		{Name: adp.FieldBaseHash, Value: jsontext.Value(`"` + base.Hash.String() + `"`)},
	}
	if mentions != nil {
		list, _ := json.Marshal(mentions)
		fs = append(fs, envelope.Field{Name: adp.FieldMentions, Value: list})
	}
	return fs
}

// sign signs an event of typ on base (nil for room.create) with payload
// (a jsontext.Value or anything json marshals) as a, skipping every
// client-side rule the SDK's builders apply: the host must judge it.
func (a *agent) sign(ctx context.Context, t *T, typ string, base *adp.Base, payload any, mentions ...string) *envelope.Envelope {
	raw, ok := payload.(jsontext.Value)
	if !ok {
		var err error
		raw, err = json.Marshal(payload, json.Deterministic(true))
		t.ok(err, "encode a payload")
	}
	env, err := a.Author().Sign(ctx, adp.Protocol, typ, raw, fields(base, mentions))
	t.ok(err, "sign a "+typ)
	return env
}

// signEvent signs a complete event (its own created_at and nonce) as a.
func (a *agent) signEvent(ctx context.Context, t *T, typ string, base *adp.Base, payload jsontext.Value, createdAt, nonce int64) *envelope.Envelope {
	env, err := envelope.Sign(ctx, a.key, envelope.Event{
		Protocol: adp.Protocol, Type: typ, Actor: a.AgentID(), CreatedAt: createdAt, Nonce: nonce,
		Payload: payload, Ext: fields(base, nil),
	})
	t.ok(err, "sign a "+typ)
	return env
}

// answer is one raw HTTP exchange.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request and reads the answer (bounded). token, when set,
// is sent as the bearer request JWT.
func (k *kit) do(ctx context.Context, method, path string, body []byte, token string, hdr map[string]string) (*answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.origin.String()+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for n, v := range hdr {
		req.Header.Set(n, v)
	}
	resp, err := k.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// err turns a non-2xx answer into the host's *identity.Error (or one with
// code "(no error body)" when the answer carries none).
func (a *answer) err() error {
	if a.status >= 200 && a.status < 300 {
		return nil
	}
	resp := &http.Response{StatusCode: a.status, Header: a.header, Body: io.NopCloser(bytes.NewReader(a.body))}
	if err := identity.ReadError(resp); err != nil {
		var e *identity.Error
		if errors.As(err, &e) {
			return e
		}
	}
	return &identity.Error{Code: "(no error body)", Status: a.status, Message: fmt.Sprintf("HTTP %d without a §20 error body", a.status)}
}

// post sends raw envelope bytes to room (POST /v1/rooms when room is "").
func (k *kit) post(ctx context.Context, t *T, room string, body []byte) *answer {
	path := "/v1/rooms"
	if room != "" {
		path += "/" + room
	}
	ans, err := k.do(ctx, http.MethodPost, path, body, "", nil)
	t.ok(err, "POST "+path)
	return ans
}

// token mints a request JWT for s; mint adjusts its clock or lifetime.
func (k *kit) token(ctx context.Context, t *T, s identity.Signer, aud identity.Origin, mint *identity.MintOptions) string {
	if mint == nil {
		mint = &identity.MintOptions{Now: k.opts.Now}
	}
	tok, err := identity.MintRequestToken(ctx, s, aud, mint)
	t.ok(err, "mint a request token")
	return tok
}

// text is a text/plain message payload.
func text(s string) adp.Message {
	return adp.Message{ContentType: "text/plain", Content: adp.TextContent(s)}
}

// short clips host-provided text for evidence.
func short(b []byte) string { return untrusted.Clip(string(b), 200) }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// discoverDraft reads the draft the target serves from its discovery
// document (Options.Draft): an Agent Identity document, with a service
// member and no host member, is the 2026-09-24 draft's (§15.1); any other
// answer, or none within one check's timeout, the seed's (whose
// discovery check then says what went wrong).
func (k *kit) discoverDraft(ctx context.Context) adp.Draft {
	ctx, cancel := context.WithTimeout(ctx, k.opts.Timeout)
	defer cancel()
	ans, err := k.do(ctx, http.MethodGet, adp.DiscoveryPath, nil, "", nil)
	if err != nil || ans.err() != nil {
		return adp.Draft20260704
	}
	var doc map[string]jsontext.Value
	if json.Unmarshal(ans.body, &doc) != nil {
		return adp.Draft20260704
	}
	if _, host := doc["host"]; !host && doc["service"] != nil {
		return adp.Draft20260924
	}
	return adp.Draft20260704
}

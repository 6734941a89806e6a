package adp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// Replica returns the client's replica of a room: the one it verifies
// every read and write of the room into, made on first use (by
// ClientOptions.NewReplica when set) for the host's draft and kept for the
// client's life; the same object every time, until its Admitted hook
// fails, when a new one is made. Pass it to sse.Options to follow the room
// into the same state. A client that does not know its host's draft yet
// (no ClientOptions.Draft, no earlier read of the host) reads the host's
// discovery document first, within one attempt's timeout
// (ClientOptions.AttemptTimeout); call Client.Draft first to bound that
// read by a context of your own.
func (c *Client) Replica(roomID string) (*Replica, error) {
	api := c.learned.Load()
	if api == nil {
		ctx, cancel := context.WithTimeout(context.Background(), c.discoverWithin)
		defer cancel()
		var err error
		if api, err = c.hostAPI(ctx); err != nil {
			return nil, err
		}
	}
	return c.replicaIn(api.draft, roomID)
}

// replica is Replica after learning the host's draft.
func (c *Client) replica(ctx context.Context, roomID string) (*Replica, *hostAPI, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep, err := c.replicaIn(api.draft, roomID)
	return rep, api, err
}

// replicaIn returns the replica of a room of draft d.
func (c *Client) replicaIn(d Draft, roomID string) (*Replica, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rep := c.rooms[roomID]; rep != nil && rep.Err() == nil {
		return rep, nil
	}
	if c.newRep == nil {
		rep := NewReplica(roomID, &ReplicaOptions{Room: RoomOptions{Packs: c.packs, Draft: d, AllowLoopbackHTTP: c.oopts.AllowLoopbackHTTP}})
		c.rooms[roomID] = rep
		return rep, nil
	}
	rep, err := c.newRep(roomID)
	switch {
	case err != nil:
		return nil, err
	case rep == nil || rep.ID() != roomID:
		return nil, fmt.Errorf("adp: ClientOptions.NewReplica(%q) returned another room's replica", clip(roomID))
	case rep.Draft() != d:
		return nil, fmt.Errorf("%w: ClientOptions.NewReplica(%q) returned a replica of the %s draft; the host serves the %s draft",
			ErrDraftMismatch, clip(roomID), rep.Draft(), d)
	}
	c.rooms[roomID] = rep
	return rep, nil
}

// Verified returns the room of the client's replica (nil if the client
// never read it). It stays for one release for simple callers: use
// Client.Replica, whose reads (Latest, Head, BaseFor, Check, Read) hold
// its lock; the Room returned here changes under the caller as records
// are admitted.
func (c *Client) Verified(roomID string) *Room {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rep := c.rooms[roomID]; rep != nil {
		return rep.room
	}
	return nil
}

// pager reads one room's history for one call (a Sync, an Events, a
// write's catch-up). A page over the response bound is asked for again
// with half as many records, down to one: records may legally be large (a
// 64 KiB payload with 32 mentions is about 68 KB, a hinted one about
// 262 KB), and a host need not budget its pages by bytes. The room keeps
// the size it settled on for its next reads, and a page under a quarter
// of the bound doubles it again, up to ClientOptions.PageSize, so a room
// that had one burst of large records pays for the oversized answer once.
// It bounds the records one call reads (ClientOptions.MaxRecords) and
// refuses a page that does not advance.
type pager struct {
	c      *Client
	rep    *Replica
	events string // the room's events URL
	size   int
	read   int
}

func (c *Client) pager(api *hostAPI, rep *Replica) *pager {
	size := c.pageSize
	if s := int(rep.pageSize.Load()); s > 0 && s < size {
		size = s
	}
	return &pager{c: c, rep: rep, events: api.roomURL(rep.id) + "/events", size: size}
}

// next fetches one page of history after seq after, parsing every record
// strictly; it does not verify them.
func (p *pager) next(ctx context.Context, after int64) ([]*Record, bool, error) {
	if p.read >= p.c.maxRecs {
		return nil, false, identity.Errorf(CodeInvalidRecord, "more than %d records in one call (ClientOptions.MaxRecords); call again to resume after seq %d", p.c.maxRecs, after)
	}
	for {
		limit := min(p.size, p.c.maxRecs-p.read)
		b, _, err := p.c.do(ctx, request{method: http.MethodGet, auth: true,
			path: p.events + "?after_seq=" + strconv.FormatInt(after, 10) + "&limit=" + strconv.Itoa(limit)})
		if errors.Is(err, httpc.ErrResponseTooLarge) && limit > 1 {
			p.size = limit / 2
			p.rep.pageSize.Store(int64(p.size))
			continue
		}
		if err != nil {
			return nil, false, err
		}
		recs, more, err := parseRecordList(p.rep.Draft(), b)
		switch {
		case err != nil:
			return nil, false, err
		case len(recs) > limit:
			return nil, false, identity.Errorf(CodeInvalidRecord, "history page has %d records for limit %d", len(recs), limit)
		case len(recs) == 0 && more:
			return nil, false, identity.Errorf(CodeInvalidRecord, "history page after seq %d is empty but names a next page", after)
		}
		p.read += len(recs)
		if p.size < p.c.pageSize && int64(len(b)) < p.c.maxResp/4 && len(recs) == limit {
			p.size = min(2*p.size, p.c.pageSize)
			p.rep.pageSize.Store(int64(p.size))
		}
		return recs, more, nil
	}
}

// parseRecordList parses {"result":[records…],"next_cursor"?}: strict
// JSON, every record parsed strictly as a record of the draft, other members
// of the wrapper ignored.
func parseRecordList(draft Draft, b []byte) ([]*Record, bool, error) {
	members, err := strictjson.SplitObject(b)
	if err != nil {
		return nil, false, identity.Wrap(CodeInvalidRecord, "history page", err)
	}
	var recs []*Record
	more, seen := false, false
	for _, m := range members {
		switch m.Name {
		case "result":
			seen = true
			d := strictjson.NewDecoder(m.Value)
			if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
				return nil, false, identity.NewError(CodeInvalidRecord, "history page result is not an array")
			}
			for d.PeekKind() != ']' {
				v, err := d.ReadValue()
				if err != nil {
					return nil, false, identity.Wrap(CodeInvalidRecord, "history page", err)
				}
				rec, err := ParseRecordIn(draft, v)
				if err != nil {
					return nil, false, err
				}
				recs = append(recs, rec)
			}
		case "next_cursor":
			if string(m.Value) == "null" {
				continue // no more, as if absent
			}
			s, err := strictjson.String(m.Value)
			if err != nil || s == "" {
				return nil, false, identity.NewError(CodeInvalidRecord, "history page next_cursor is not a non-empty string")
			}
			more = true
		default:
			// The page wrapper is the host's unsigned answer: a member
			// the SDK does not know is ignored (§6). Records stay strict.
			if err := strictjson.Validate(m.Value); err != nil {
				return nil, false, identity.Wrap(CodeInvalidRecord, "history page", err)
			}
		}
	}
	if !seen {
		return nil, false, identity.NewError(CodeInvalidRecord, "history page has no result")
	}
	// A history page: the signatures dominate its cost, so check them on
	// every core before the records are applied in order.
	VerifySignatures(recs, 16)
	return recs, more, nil
}

// syncTo verifies history until the replica holds seq upto (0: until the
// host has no more). rep.fetch is held.
func (c *Client) syncTo(ctx context.Context, api *hostAPI, rep *Replica, upto int64) error {
	p := c.pager(api, rep)
	for {
		latest := rep.Latest().Seq
		if upto > 0 && latest >= upto {
			return nil
		}
		recs, more, err := p.next(ctx, latest)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if rec.Seq <= latest {
				return identity.Errorf(CodeInvalidRecord, "host returned record %d for after_seq %d", rec.Seq, latest)
			}
		}
		if err := rep.Admit(ctx, recs...); err != nil {
			if errors.Is(err, ErrGap) {
				return identity.Errorf(CodeInvalidRecord, "host history skips from seq %d", rep.Latest().Seq)
			}
			return err
		}
		if len(recs) == 0 {
			if upto > 0 {
				return identity.Errorf(CodeInvalidRecord, "host history ends at seq %d before seq %d", rep.Latest().Seq, upto)
			}
			return nil
		}
		if !more && upto == 0 {
			return nil
		}
	}
}

// Sync brings the client's replica of a room up to the host's latest
// record, verifying every record, and returns the replica's latest
// acceptance fields.
func (c *Client) Sync(ctx context.Context, roomID string) (Latest, error) {
	rep, api, err := c.replica(ctx, roomID)
	if err != nil {
		return Latest{}, err
	}
	rep.fetch.Lock()
	defer rep.fetch.Unlock()
	err = c.syncTo(ctx, api, rep, 0)
	return rep.Latest(), err
}

// Events returns the room's records with seq > afterSeq, in order, paging
// until the host has no more. Each record is verified into the client's
// replica before it is yielded; the first failure ends the sequence with
// its error.
func (c *Client) Events(ctx context.Context, roomID string, afterSeq int64) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		rep, api, err := c.replica(ctx, roomID)
		if err != nil {
			yield(nil, err)
			return
		}
		p := c.pager(api, rep)
		after := afterSeq
		for {
			recs, more, err := p.next(ctx, after)
			if err == nil {
				err = c.admitAll(ctx, api, rep, recs, after)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			for _, rec := range recs {
				if !yield(rec, nil) {
					return
				}
				after = rec.Seq
			}
			if !more || len(recs) == 0 {
				return
			}
		}
	}
}

// admitAll verifies one page fetched after seq after: records in strictly
// consecutive order from after+1, admitted as one batch (the gap up to
// after is filled from history first).
func (c *Client) admitAll(ctx context.Context, api *hostAPI, rep *Replica, recs []*Record, after int64) error {
	for i, rec := range recs {
		if rec.Seq != after+int64(i)+1 {
			return identity.Errorf(CodeInvalidRecord, "host history page is out of order: seq %d where %d belongs", rec.Seq, after+int64(i)+1)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return c.admitOrFill(ctx, api, rep, recs...)
}

// admitOrFill verifies records the client did not page itself (the answer
// to an own write), or a page after a seq the replica may not have
// reached, into rep, filling a gap before them from history first.
func (c *Client) admitOrFill(ctx context.Context, api *hostAPI, rep *Replica, recs ...*Record) error {
	rep.fetch.Lock()
	defer rep.fetch.Unlock()
	err := rep.Admit(ctx, recs...)
	if errors.Is(err, ErrGap) {
		latest := rep.Latest().Seq
		var rest []*Record
		for i, rec := range recs {
			if rec.Seq > latest {
				rest = recs[i:]
				break
			}
		}
		if err = c.syncTo(ctx, api, rep, rest[0].Seq-1); err == nil {
			err = rep.Admit(ctx, rest...)
		}
	}
	return err
}

// verifyOwn checks a write's answer: the host's record must carry exactly
// the envelope sent, in this room, with a correct hash, and must verify
// against the replica (filling any gap from history first). The envelope
// sent, whose signature was checked when it was signed, takes the place of
// the answer's byte-identical copy, so it is not checked again.
func (c *Client) verifyOwn(ctx context.Context, api *hostAPI, rep *Replica, env *envelope.Envelope, rec *Record) error {
	if rec.Envelope == nil || !sameEnvelope(env, rec.Envelope) {
		return identity.NewError(CodeInvalidRecord, "host answered with a record of another envelope")
	}
	rec.useEnvelope(env)
	return c.admitOrFill(ctx, api, rep, rec)
}

// BuildFunc signs one event on base through author; the Client calls it
// again (with a fresh base and after applying Max-Seen-Nonce) when the
// host answers nonce_not_greater.
type BuildFunc func(ctx context.Context, author *envelope.Author, base Base) (*envelope.Envelope, error)

// Post writes one event of type typ to a room: it syncs the replica,
// takes the base the type needs in the host's draft (Room.BaseFor: in the
// seed, the head for non-signal writes; in the 2026-09-24 draft, the
// latest record, which is at or after the head), signs through build and
// submits. On nonce_not_greater it
// applies the host's Max-Seen-Nonce (within the identity bounds), re-signs
// once and retries. The returned record is verified.
func (c *Client) Post(ctx context.Context, roomID, typ string, build BuildFunc) (*Record, error) {
	for attempt := 0; ; attempt++ {
		base, err := c.baseFor(ctx, roomID, typ)
		if err != nil {
			return nil, err
		}
		env, err := build(ctx, c.author, base)
		if err != nil {
			return nil, err
		}
		rec, err := c.Submit(ctx, roomID, env)
		if attempt == 0 && c.observeMaxSeen(ctx, &err) {
			continue
		}
		return rec, err
	}
}

// baseFor syncs the replica and returns the base for typ. An agent that
// may not read the history yet (an applicant joining a restricted room)
// bases its signal-kind write on the room resource's latest record.
func (c *Client) baseFor(ctx context.Context, roomID, typ string) (Base, error) {
	rep, api, err := c.replica(ctx, roomID)
	if err != nil {
		return Base{}, err
	}
	rep.fetch.Lock()
	err = c.syncTo(ctx, api, rep, 0)
	rep.fetch.Unlock()
	var base Base
	if err == nil {
		base, err = rep.BaseFor(typ)
	}
	if err != nil && BuiltinCategory(typ) == CategorySignal && isAccessError(err) {
		res, rerr := c.GetRoom(ctx, roomID)
		if rerr != nil {
			return Base{}, rerr
		}
		return Base{RoomID: roomID, Seq: res.Seq, Hash: res.Hash, Draft: api.draft}, nil
	}
	return base, err
}

func isAccessError(err error) bool {
	return errors.Is(err, ErrMembershipRequired) || errors.Is(err, ErrInvalidToken) ||
		errors.Is(err, ErrRoomNotFound) || errors.Is(err, ErrPermissionDenied)
}

// Submit sends a signed envelope to its room (POST /v1/rooms/{room_id})
// and returns the verified record. Transport errors, 429 and 503 are
// retried with the same envelope. It does not re-sign: Post does.
//
// Verifying the answer may need the history between the replica and the
// new record. When the agent may not read it — a room.leave from a
// restricted room while others wrote — the host has accepted the write
// but Submit returns the read error (membership_required) instead of an
// unverified record.
func (c *Client) Submit(ctx context.Context, roomID string, env *envelope.Envelope) (*Record, error) {
	rep, api, err := c.replica(ctx, roomID)
	if err != nil {
		return nil, err
	}
	// The live stream's copy of the record may reach the replica first:
	// it then takes this envelope too (Replica.adoptOwn).
	rep.expect(env)
	defer rep.forget(env)
	b, _, err := c.do(ctx, request{method: http.MethodPost, path: api.roomURL(roomID), body: env.AppendJSON(nil)})
	if err != nil {
		return nil, err
	}
	rec, err := ParseRecordIn(rep.Draft(), b)
	if err != nil {
		return nil, err
	}
	if err := c.verifyOwn(ctx, api, rep, env, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// CreateRoom signs a room.create in the host's draft and posts it (POST
// to the room collection). In the 2026-09-24 draft the room is bound to
// the host (§8.1): an empty p.Host names the client's host origin, and
// any other origin is refused with host_mismatch before anything is
// signed. The answer's acceptance fields are checked against the envelope
// (the record hash must be the one of seq 1 with a null pre_hash) and
// the record starts the client's replica.
func (c *Client) CreateRoom(ctx context.Context, p RoomCreate) (*Record, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	if rulesOf(api.draft).hostBound {
		switch p.Host {
		case "":
			p.Host = c.origin.String()
		case c.origin.String():
		default:
			return nil, identity.Errorf(CodeHostMismatch, "room.create names host %q; the client's host is %s", clip(p.Host), c.origin)
		}
	}
	for attempt := 0; ; attempt++ {
		env, err := NewRoomCreateIn(ctx, c.author, api.draft, p)
		if err != nil {
			return nil, err
		}
		rec, err := c.SubmitCreate(ctx, env)
		if attempt == 0 && c.observeMaxSeen(ctx, &err) {
			continue
		}
		return rec, err
	}
}

// observeMaxSeen applies the Max-Seen-Nonce of a nonce_not_greater answer
// *err (within the identity bounds) and reports whether the write should
// be signed again; a failure to apply it joins *err.
func (c *Client) observeMaxSeen(ctx context.Context, err *error) bool {
	var e *identity.Error
	if !errors.As(*err, &e) || e.Code != identity.CodeNonceNotGreater || e.MaxSeenNonce == 0 {
		return false
	}
	if oerr := c.author.Nonces.ObserveMaxSeenNonce(ctx, e.MaxSeenNonce); oerr != nil {
		*err = errors.Join(*err, oerr)
		return false
	}
	return true
}

// SubmitCreate posts a signed room.create and returns its verified record.
func (c *Client) SubmitCreate(ctx context.Context, env *envelope.Envelope) (*Record, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	b, _, err := c.do(ctx, request{method: http.MethodPost, path: api.rooms, body: env.AppendJSON(nil)})
	if err != nil {
		return nil, err
	}
	var cr struct {
		CreateResponse `json:",inline"`
		// AcceptedAt is the 2026-09-24 draft's member.
		AcceptedAt *int64 `json:"accepted_at"`
	}
	if err := decodeAnswer(b, &cr); err != nil {
		return nil, err
	}
	at := cr.ReceivedAt
	if api.draft != Draft20260704 {
		if cr.AcceptedAt == nil {
			return nil, identity.NewError(CodeInvalidRecord, "create answer has no accepted_at")
		}
		at = *cr.AcceptedAt
	}
	switch {
	case cr.ID == "":
		return nil, identity.NewError(CodeInvalidRecord, "create answer has no room id")
	case cr.Seq != 1 || cr.PreHash != nil:
		return nil, identity.NewError(CodeInvalidRecord, "create answer is not seq 1 with a null pre_hash")
	}
	rec := &Record{RoomID: cr.ID, Seq: 1, ReceivedAt: at, Envelope: env, Hash: cr.Hash, Draft: api.draft}
	rep, err := c.replicaIn(api.draft, cr.ID)
	if err != nil {
		return nil, err
	}
	if err := c.verifyOwn(ctx, api, rep, env, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// SendMessage posts a message.create on the current head.
func (c *Client) SendMessage(ctx context.Context, roomID string, p Message, mentions ...identity.AgentID) (*Record, error) {
	return c.Post(ctx, roomID, TypeMessageCreate, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewMessage(ctx, a, b, p, mentions...)
	})
}

// SendCustom posts an event of a room-defined type, validated against the
// verified replica's registry before it is signed.
func (c *Client) SendCustom(ctx context.Context, roomID, typ string, payload any, mentions ...identity.AgentID) (*Record, error) {
	return c.Post(ctx, roomID, typ, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		rep, err := c.Replica(roomID)
		if err != nil {
			return nil, err
		}
		var reg *packs.Registry
		rep.Read(func(r *Room) { reg = r.Registry() })
		return NewCustom(ctx, a, b, reg, typ, payload, mentions...)
	})
}

// Join posts a room.join: a direct join to a public room (RequestID
// empty), or the join an approved request allows.
func (c *Client) Join(ctx context.Context, roomID string, p Join) (*Record, error) {
	return c.Post(ctx, roomID, TypeRoomJoin, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewJoin(ctx, a, b, p)
	})
}

// ReviewJoin posts a room.join.review deciding a pending request. In the
// seed (§11) p.Request must be the request object exactly as the host
// stores it. In the 2026-09-24 draft (§10) the review embeds the
// applicant's signed request instead: ReviewJoin reads the one the host
// holds under p.Request.ID and posts it with ReviewSignedJoin.
func (c *Client) ReviewJoin(ctx context.Context, roomID string, p JoinReview) (*Record, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	if rulesOf(api.draft).signedJoin {
		jr, err := c.JoinRequest(ctx, roomID, p.Request.ID)
		if err != nil {
			return nil, err
		}
		return c.ReviewSignedJoin(ctx, roomID, SignedJoinReview{Request: jr.Signed, Decision: p.Decision, Role: p.Role, Reason: p.Reason, Extra: p.Extra})
	}
	return c.Post(ctx, roomID, TypeRoomJoinReview, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewJoinReview(ctx, a, b, p)
	})
}

// ReviewSignedJoin posts a room.join.review of the 2026-09-24 draft (§10)
// embedding the applicant's signed room.join.request (JoinRequestResource.Signed);
// an approval itself makes the applicant a member.
func (c *Client) ReviewSignedJoin(ctx context.Context, roomID string, p SignedJoinReview) (*Record, error) {
	return c.Post(ctx, roomID, TypeRoomJoinReview, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewSignedJoinReview(ctx, a, b, p)
	})
}

// Leave posts a room.leave.
func (c *Client) Leave(ctx context.Context, roomID string, p Notice) (*Record, error) {
	return c.Post(ctx, roomID, TypeRoomLeave, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewLeave(ctx, a, b, p)
	})
}

// UpdateRole posts a room.member.role.update.
func (c *Client) UpdateRole(ctx context.Context, roomID string, p RoleUpdate) (*Record, error) {
	return c.Post(ctx, roomID, TypeMemberRoleUpdate, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewRoleUpdate(ctx, a, b, p)
	})
}

// RemoveMember posts a room.member.remove.
func (c *Client) RemoveMember(ctx context.Context, roomID string, p MemberRemove) (*Record, error) {
	return c.Post(ctx, roomID, TypeMemberRemove, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewMemberRemove(ctx, a, b, p)
	})
}

// UpdateRoom posts a room.update on the current head.
func (c *Client) UpdateRoom(ctx context.Context, roomID string, p RoomUpdate) (*Record, error) {
	return c.Post(ctx, roomID, TypeRoomUpdate, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewRoomUpdate(ctx, a, b, p)
	})
}

// DefineType posts a type.define carrying one declaration.
func (c *Client) DefineType(ctx context.Context, roomID string, d packs.Declaration) (*Record, error) {
	return c.Post(ctx, roomID, TypeTypeDefine, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewTypeDefine(ctx, a, b, d)
	})
}

// CloseRoom posts a room.close; the room ends and its archive appears.
func (c *Client) CloseRoom(ctx context.Context, roomID string, p Notice) (*Record, error) {
	return c.Post(ctx, roomID, TypeRoomClose, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewClose(ctx, a, b, p)
	})
}

// CancelRoom posts a room.cancel (before the room starts).
func (c *Client) CancelRoom(ctx context.Context, roomID string, p Notice) (*Record, error) {
	return c.Post(ctx, roomID, TypeRoomCancel, func(ctx context.Context, a *envelope.Author, b Base) (*envelope.Envelope, error) {
		return NewCancel(ctx, a, b, p)
	})
}

// RequestJoin asks to join a room as the client's agent (POST
// …/join-requests), in the host's draft:
//
//   - seed (§11): an HTTP join request from in, authenticated by a request
//     JWT; in a public room it is usually approved at once, and the agent
//     then posts a room.join naming it;
//   - 2026-09-24 (§10): a signed room.join.request carrying in's role,
//     perspective, reason and extra, which the host holds pending until a
//     room.join.review embedding it makes the agent a member (no
//     room.join follows). Its exact resubmission is answered with the held
//     request, so it is retried like a write.
//
// The answer is in the seed's shape either way; a 2026-09-24 request has
// Signed (the signed event, whose event ID is Request.ID) and, once
// reviewed, ReviewEventID.
func (c *Client) RequestJoin(ctx context.Context, roomID string, in JoinRequestInput) (*JoinRequestResource, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	path := api.roomURL(roomID) + "/join-requests"
	if !rulesOf(api.draft).signedJoin {
		body, err := marshal(in)
		if err != nil {
			return nil, err
		}
		b, _, err := c.do(ctx, request{method: http.MethodPost, path: path, body: body, auth: true, once: true})
		if err != nil {
			return nil, err
		}
		var jr JoinRequestResource
		if err := decodeAnswer(b, &jr); err != nil {
			return nil, err
		}
		if jr.Request.RoomID != roomID || jr.Request.Applicant != c.AgentID() {
			return nil, identity.NewError(identity.CodeInvalidRequest, "host answered with another room's or agent's join request")
		}
		return &jr, nil
	}
	p := JoinRequestPayload(in)
	for attempt := 0; ; attempt++ {
		env, err := NewJoinRequest(ctx, c.author, api.draft, roomID, p)
		if err != nil {
			return nil, err
		}
		jr, err := c.SubmitJoinRequest(ctx, roomID, env)
		if attempt == 0 && c.observeMaxSeen(ctx, &err) {
			continue
		}
		return jr, err
	}
}

// SubmitJoinRequest sends a signed room.join.request (2026-09-24 §10,
// NewJoinRequest) to POST …/join-requests and returns the held request,
// read as RequestJoin's answer is. Transport errors, 429 and 503 are
// retried with the same envelope, whose exact resubmission the host
// answers with the request it holds. It does not re-sign: RequestJoin
// does.
func (c *Client) SubmitJoinRequest(ctx context.Context, roomID string, env *envelope.Envelope) (*JoinRequestResource, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	if !rulesOf(api.draft).signedJoin {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "the %s draft has no room.join.request", api.draft)
	}
	b, _, err := c.do(ctx, request{method: http.MethodPost, path: api.roomURL(roomID) + "/join-requests", body: env.AppendJSON(nil)})
	if err != nil {
		return nil, err
	}
	jr, err := c.signedJoinRequest(api.draft, roomID, b)
	if err != nil {
		return nil, err
	}
	if jr.Signed.Hash() != env.Hash() {
		return nil, identity.NewError(identity.CodeInvalidRequest, "host answered with another join request")
	}
	return jr, nil
}

// signedJoinRequest reads a 2026-09-24 join request resource (§10) into
// the seed's shape: the held request must be a room.join.request of the
// room whose hash and signature verify, and its ID must be the request's
// event ID.
func (c *Client) signedJoinRequest(d Draft, roomID string, b []byte) (*JoinRequestResource, error) {
	var sr SignedJoinRequestResource
	if err := decodeAnswer(b, &sr); err != nil {
		return nil, err
	}
	return joinRequestOf(d, roomID, &sr)
}

// joinRequestOf is joinRequestResource for one decoded resource.
func joinRequestOf(d Draft, roomID string, sr *SignedJoinRequestResource) (*JoinRequestResource, error) {
	bad := func(msg string, err error) (*JoinRequestResource, error) {
		return nil, identity.Wrap(identity.CodeInvalidRequest, "host join request: "+msg, err)
	}
	if sr.Request == nil {
		return bad("no signed request", nil)
	}
	if err := sr.Request.Verify(); err != nil {
		return bad("signed request", err)
	}
	ev, err := ParseEventIn(d, sr.Request)
	if err != nil {
		return bad("signed request", err)
	}
	typed, err := ev.Builtin()
	p, ok := typed.(*JoinRequestPayload)
	switch {
	case err != nil:
		return bad("signed request", err)
	case !ok || ev.Type != TypeRoomJoinRequest:
		return bad("the signed request is a "+clip(ev.Type), nil)
	case ev.RoomID != roomID:
		return bad("the signed request is another room's", nil)
	case sr.ID != sr.Request.Hash():
		return bad("its id is not the request's event ID", nil)
	}
	jr := &JoinRequestResource{
		Request: JoinRequest{ID: sr.ID.String(), RoomID: ev.RoomID, Applicant: ev.Actor, Role: p.Role, Perspective: p.Perspective,
			Reason: p.Reason, CreatedAt: ev.CreatedAt, ExpiresAt: sr.ExpiresAt, Extra: p.Extra},
		Status: sr.Status, ReviewedBy: sr.ReviewedBy, Signed: sr.Request, ReviewEventID: sr.ReviewEventID, Unknown: sr.Unknown,
	}
	if sr.ReviewedAt != nil {
		jr.ReviewedAt = *sr.ReviewedAt
	}
	return jr, nil
}

// JoinRequests lists a room's join requests (creator and moderators
// only), following the host's cursor until the last page. A 2026-09-24
// request is read as RequestJoin's answer is.
func (c *Client) JoinRequests(ctx context.Context, roomID string) ([]JoinRequestResource, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	signed := rulesOf(api.draft).signedJoin
	var all []JoinRequestResource
	path := api.roomURL(roomID) + "/join-requests"
	cur := c.cursor()
	for u := path; ; {
		var page []JoinRequestResource
		var size int
		var next string
		if signed {
			l, err := getList[SignedJoinRequestResource](ctx, c, u, true)
			if err != nil {
				return nil, err
			}
			for i := range l.Result {
				jr, err := joinRequestOf(api.draft, roomID, &l.Result[i])
				if err != nil {
					return nil, err
				}
				page = append(page, *jr)
			}
			size, next = l.size, l.cursor()
		} else {
			l, err := getList[JoinRequestResource](ctx, c, u, true)
			if err != nil {
				return nil, err
			}
			page, size, next = l.Result, l.size, l.cursor()
		}
		for _, jr := range page {
			if jr.Request.RoomID != roomID {
				return nil, identity.NewError(identity.CodeInvalidRequest, "host listed another room's join request")
			}
		}
		all = append(all, page...)
		more, err := cur.Next(len(page), size, next)
		if err != nil {
			return nil, listError("join requests", err)
		}
		if !more {
			return all, nil
		}
		u = path + "?cursor=" + url.QueryEscape(next)
	}
}

// JoinRequest fetches one join request (its ID in the 2026-09-24 draft:
// the request's event ID).
func (c *Client) JoinRequest(ctx context.Context, roomID, requestID string) (*JoinRequestResource, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	u := api.roomURL(roomID) + "/join-requests/" + url.PathEscape(requestID)
	var jr *JoinRequestResource
	if rulesOf(api.draft).signedJoin {
		b, _, err := c.do(ctx, request{method: http.MethodGet, path: u, auth: true})
		if err == nil {
			jr, err = c.signedJoinRequest(api.draft, roomID, b)
		}
		if err != nil {
			return nil, err
		}
	} else {
		jr = new(JoinRequestResource)
		if err := c.getJSON(ctx, u, true, jr); err != nil {
			return nil, err
		}
	}
	if jr.Request.ID != requestID || jr.Request.RoomID != roomID {
		return nil, identity.NewError(identity.CodeInvalidRequest, "host answered with another join request")
	}
	return jr, nil
}

// AgentStatuses lists a room's current agent statuses: the seed's
// {"statuses": […]}, or the 2026-09-24 draft's Identity list (§16.4),
// whose cursor it follows.
func (c *Client) AgentStatuses(ctx context.Context, roomID string) ([]AgentStatus, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	path := api.roomURL(roomID) + "/agent-status"
	limit := cmp.Or(c.maxItems, httpc.DefaultMaxItems)
	var list []AgentStatus
	if api.draft == Draft20260704 {
		var l AgentStatusList
		if err := c.getJSON(ctx, path, true, &l); err != nil {
			return nil, err
		}
		list = l.Statuses
	} else {
		cur := c.cursor()
		for u := path; ; {
			l, err := getList[AgentStatus](ctx, c, u, true)
			if err != nil {
				return nil, err
			}
			list = append(list, l.Result...)
			more, err := cur.Next(len(l.Result), l.size, l.cursor())
			if err != nil {
				return nil, listError("agent statuses", err)
			}
			if !more {
				break
			}
			u = path + "?cursor=" + url.QueryEscape(l.cursor())
		}
	}
	if len(list) > limit {
		return nil, identity.Errorf(identity.CodeInvalidRequest, "host listed %d agent statuses, more than %d", len(list), limit)
	}
	return list, nil
}

// AgentStatus fetches one agent's current status.
func (c *Client) AgentStatus(ctx context.Context, roomID string, agent identity.AgentID) (*AgentStatus, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	b, _, err := c.do(ctx, request{method: http.MethodGet, path: api.roomURL(roomID) + "/agent-status/" + agent.String(), auth: true})
	if err != nil {
		return nil, err
	}
	return statusAnswer(api.draft, b)
}

// statusAnswer reads one status: wrapped in {"status": …} in the seed,
// the stored status itself in the 2026-09-24 draft (§16.4).
func statusAnswer(d Draft, b []byte) (*AgentStatus, error) {
	if d != Draft20260704 {
		var st AgentStatus
		if err := decodeAnswer(b, &st); err != nil {
			return nil, err
		}
		return &st, nil
	}
	var r AgentStatusResponse
	if err := decodeAnswer(b, &r); err != nil {
		return nil, err
	}
	return &r.Status, nil
}

// PutAgentStatus replaces the client's own status in a room; the host
// clamps expires_at to its TTL.
func (c *Client) PutAgentStatus(ctx context.Context, roomID string, in AgentStatusInput) (*AgentStatus, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	body, err := marshal(in)
	if err != nil {
		return nil, err
	}
	b, _, err := c.do(ctx, request{method: http.MethodPut, path: api.roomURL(roomID) + "/agent-status", body: body, auth: true})
	if err != nil {
		return nil, err
	}
	return statusAnswer(api.draft, b)
}

// RoomQuery filters public room discovery (seed §18: GET
// /v1/rooms/public; 2026-09-24 §17: GET /v1/rooms) and GET /v1/me/rooms.
// Zero fields are not sent.
type RoomQuery struct {
	Status      Status
	Tag         string
	Keyword     string
	Creator     identity.AgentID
	StartsAfter int64
	EndsBefore  int64
	Language    string
	// Membership filters /v1/me/rooms: a member status, "pending" or
	// "creator".
	Membership string
	// Limit is the page size; 0 means the host's default.
	Limit int
}

func (q RoomQuery) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("status", string(q.Status))
	set("tag", q.Tag)
	set("keyword", q.Keyword)
	if !q.Creator.IsZero() {
		v.Set("creator", q.Creator.String())
	}
	if q.StartsAfter > 0 {
		v.Set("starts_after", strconv.FormatInt(q.StartsAfter, 10))
	}
	if q.EndsBefore > 0 {
		v.Set("ends_before", strconv.FormatInt(q.EndsBefore, 10))
	}
	set("language", q.Language)
	set("membership", q.Membership)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// PublicRooms lists discoverable rooms, paging until done: GET
// /v1/rooms/public in the seed (§18), GET on the room collection in the
// 2026-09-24 draft (§17: public and restricted rooms, each listed as its
// room resource, read here as a summary whose LastActivity is the
// resource's accepted_at).
func (c *Client) PublicRooms(ctx context.Context, q RoomQuery) iter.Seq2[RoomSummary, error] {
	return c.listRooms(ctx, func(api *hostAPI) string { return api.public }, q, false)
}

// MyRooms lists the rooms the client's agent created, is or was a member
// of, or has a pending join request for, paging until done (GET
// /v1/me/rooms, or the 2026-09-24 discovery document's my_rooms).
func (c *Client) MyRooms(ctx context.Context, q RoomQuery) iter.Seq2[RoomSummary, error] {
	return c.listRooms(ctx, func(api *hostAPI) string { return api.myRooms }, q, true)
}

// roomItem is one room of a listing: a summary, or in the 2026-09-24
// draft's public listing a room resource, whose accepted_at is the
// latest record's.
type roomItem struct {
	RoomSummary `json:",inline"`
	AcceptedAt  *int64 `json:"accepted_at"`
}

func (c *Client) listRooms(ctx context.Context, endpoint func(*hostAPI) string, q RoomQuery, auth bool) iter.Seq2[RoomSummary, error] {
	return func(yield func(RoomSummary, error) bool) {
		api, err := c.hostAPI(ctx)
		if err != nil {
			yield(RoomSummary{}, err)
			return
		}
		path := endpoint(api)
		v := q.values()
		cur := c.cursor()
		for {
			u := path
			if len(v) > 0 {
				u += "?" + v.Encode()
			}
			l, err := getList[roomItem](ctx, c, u, auth)
			if err != nil {
				yield(RoomSummary{}, err)
				return
			}
			more, err := cur.Next(len(l.Result), l.size, l.cursor())
			for _, s := range l.Result {
				if s.AcceptedAt != nil && s.LastActivity == 0 {
					s.LastActivity = *s.AcceptedAt
				}
				if !yield(s.RoomSummary, nil) {
					return
				}
			}
			if err != nil {
				yield(RoomSummary{}, listError(path, err))
				return
			}
			if !more {
				return
			}
			v.Set("cursor", l.cursor())
		}
	}
}

// Archive fetches an ended room's archive: the manifest (seed §19,
// 2026-09-24 §18) and the JSONL records it names in formats.jsonl (which
// must be on the host's origin). Verify them with archive.Verify; the
// client does not, since package archive sits above this one.
func (c *Client) Archive(ctx context.Context, roomID string) (manifest, records []byte, err error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, nil, err
	}
	manifest, _, err = c.do(ctx, request{method: http.MethodGet, path: api.roomURL(roomID) + "/archive", auth: true})
	if err != nil {
		return nil, nil, err
	}
	var m struct {
		Formats map[string]string `json:"formats"`
	}
	if err := strictjson.UnmarshalOpen(manifest, &m); err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidRequest, "archive manifest", err)
	}
	u := m.Formats["jsonl"]
	if u == "" {
		u = api.roomURL(roomID) + "/archive.jsonl"
	}
	records, _, err = c.do(ctx, request{method: http.MethodGet, path: u, auth: true})
	if err != nil {
		return nil, nil, err
	}
	return manifest, records, nil
}

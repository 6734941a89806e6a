package adp

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"

	sse "github.com/tmaxmax/go-sse"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// LiveItem is one item of a room's live stream (§17): exactly one field is
// set. Record is verified like every record the client returns; Status and
// JoinRequest are unsigned hints, never evidence.
type LiveItem struct {
	Record      *Record
	Status      *AgentStatus
	JoinRequest *LiveJoinRequest
}

// Live subscribes to a room's live stream (GET …/events/live) with one
// connection and returns its items. It fails at once when the host
// refuses the subscription (invalid_token, membership_required,
// room_not_found). Records are verified against the replica: a record past
// the next one makes the client fetch the gap from history first, and a
// record it already holds must be identical. The stream does not replay
// history (§17.3); the seamless order is Live, then Events or Sync, with
// overlaps deduplicated by seq — which this verification does.
//
// The sequence ends when ctx is cancelled, the host closes the stream or a
// record fails verification (yielded as an error). Reconnecting is the
// caller's choice.
func (c *Client) Live(ctx context.Context, roomID string) (iter.Seq2[LiveItem, error], error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.origin.String()+roomPath(roomID)+"/events/live", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if err := c.hc.Authorize(req, c.origin); err != nil {
		return nil, err
	}
	resp, err := c.hc.HTTPClient().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		if err := identity.ReadError(resp); err != nil {
			return nil, err
		}
		return nil, identity.Errorf(identity.CodeInvalidRequest, "live stream answered HTTP %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, identity.Errorf(identity.CodeInvalidRequest, "live stream Content-Type is %q", clip(ct))
	}
	return func(yield func(LiveItem, error) bool) {
		defer resp.Body.Close()
		rep := c.replicaOf(roomID)
		for ev, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: envelope.MaxSize + 64<<10}) {
			if err != nil {
				if ctx.Err() == nil {
					yield(LiveItem{}, err)
				}
				return
			}
			var item LiveItem
			switch ev.Type {
			case SSERoomEvent:
				rec, err := ParseRecord([]byte(ev.Data))
				if err == nil {
					err = c.admitLive(ctx, rep, rec)
				}
				if err != nil {
					yield(LiveItem{}, err)
					return
				}
				item.Record = rec
			case SSEAgentStatus:
				var st AgentStatus
				if strictjson.UnmarshalOpen([]byte(ev.Data), &st) != nil || st.RoomID != roomID {
					continue // a malformed hint is dropped, never trusted
				}
				item.Status = &st
			case SSEJoinRequest:
				var jr LiveJoinRequest
				if strictjson.UnmarshalOpen([]byte(ev.Data), &jr) != nil || jr.RoomID != roomID {
					continue
				}
				item.JoinRequest = &jr
			default:
				continue
			}
			if !yield(item, nil) {
				return
			}
		}
	}, nil
}

// admitLive verifies a live record or the answer to an own write against
// rep, filling a gap from history first.
func (c *Client) admitLive(ctx context.Context, rep *replica, rec *Record) error {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	err := admit(ctx, rep, rec)
	if errors.Is(err, errGap) {
		if err = c.syncTo(ctx, rep, rec.Seq-1); err == nil {
			err = admit(ctx, rep, rec)
		}
	}
	return err
}

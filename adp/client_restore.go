package adp

import (
	"context"
	"errors"

	"github.com/agentprotocols/go-sdk/identity"
)

// Restore gives the client a replica of a room restored from a
// Room.Snapshot the caller stored after the client verified it, so a
// long-lived agent resumes after a restart from its stored verified record
// instead of downloading and verifying the history again. The snapshot is
// checked like any stored input (RestoreRoom); it must not be older than a
// replica the client already holds, which is kept then.
func (c *Client) Restore(roomID string, snapshot []byte) error {
	room, err := RestoreRoom(snapshot, &RoomOptions{Packs: c.packs})
	if err != nil {
		return err
	}
	if room.ID() != roomID {
		return identity.Errorf(identity.CodeInvalidRequest, "snapshot is of room %q, not %q", clip(room.ID()), clip(roomID))
	}
	idx, ok := room.index.(*MemoryIndex)
	if !ok {
		return errors.New("adp: restored room has no memory index")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.rooms[roomID]; old != nil && old.room.Latest().Seq >= room.Latest().Seq {
		return nil
	}
	c.rooms[roomID] = &replica{id: roomID, index: idx, room: room}
	return nil
}

// Admit verifies a record the caller obtained itself (a live stream it
// follows with the sse package) against the client's replica of its room,
// exactly as the client's own reads are verified: a record the replica
// holds must be identical, the next one must pass every room rule, and a
// gap is filled from the history first.
func (c *Client) Admit(ctx context.Context, roomID string, rec *Record) error {
	return c.admitOrFill(ctx, c.replicaOf(roomID), rec)
}

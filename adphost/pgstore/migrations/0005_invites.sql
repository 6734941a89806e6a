-- adphost/pgstore schema, version 5: the agents a room's policy.invites
-- names (2026-09-24 draft, §8.3), so that /v1/me/rooms finds the rooms
-- that invite an agent (§15) without loading any. Replaced with the
-- room's members. Rooms last indexed before this version have no rows
-- until their next membership or contract write.
CREATE TABLE adp_invites (
    room_id  text NOT NULL REFERENCES adp_rooms (room_id),
    agent    text NOT NULL,
    role     text NOT NULL,
    PRIMARY KEY (room_id, agent)
);
CREATE INDEX adp_invites_agent ON adp_invites (agent);

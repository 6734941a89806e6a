-- adphost/pgstore schema, version 1.

-- One row per room: the head the append transaction locks and checks, and
-- the index entry the discovery lists read.
CREATE TABLE adp_rooms (
    room_id     text PRIMARY KEY,
    last_seq    bigint NOT NULL,
    last_hash   bytea NOT NULL,
    last_activity bigint NOT NULL,
    visibility  text NOT NULL,
    creator     text NOT NULL,
    summary     bytea NOT NULL
);
CREATE INDEX adp_rooms_creator ON adp_rooms (creator);

-- The logs. The primary key makes every seq of a room unique; event_hash
-- is the exact-resubmission index.
CREATE TABLE adp_records (
    room_id     text NOT NULL REFERENCES adp_rooms (room_id),
    seq         bigint NOT NULL,
    event_hash  bytea NOT NULL,
    body        bytea NOT NULL,
    PRIMARY KEY (room_id, seq)
);
CREATE UNIQUE INDEX adp_records_event ON adp_records (event_hash);

CREATE TABLE adp_members (
    room_id  text NOT NULL REFERENCES adp_rooms (room_id),
    agent    text NOT NULL,
    role     text NOT NULL,
    status   text NOT NULL,
    PRIMARY KEY (room_id, agent)
);
CREATE INDEX adp_members_agent ON adp_members (agent);

CREATE TABLE adp_snapshots (
    room_id  text PRIMARY KEY REFERENCES adp_rooms (room_id),
    seq      bigint NOT NULL,
    body     bytea NOT NULL
);

CREATE TABLE adp_nonces (
    actor       text PRIMARY KEY,
    nonce       bigint NOT NULL,
    expires_at  bigint NOT NULL
);

-- Sliding quota windows: the accepted uses (Unix ms) of one key within
-- the last window.
CREATE TABLE adp_quotas (
    key   text PRIMARY KEY,
    uses  bigint[] NOT NULL
);

-- created orders a room's requests by creation.
CREATE TABLE adp_join_requests (
    room_id    text NOT NULL,
    id         text NOT NULL,
    applicant  text NOT NULL,
    created    bigserial,
    body       bytea NOT NULL,
    PRIMARY KEY (room_id, id)
);
CREATE INDEX adp_join_requests_applicant ON adp_join_requests (applicant);
CREATE INDEX adp_join_requests_order ON adp_join_requests (room_id, created);

CREATE TABLE adp_statuses (
    room_id  text NOT NULL,
    agent    text NOT NULL,
    body     bytea NOT NULL,
    PRIMARY KEY (room_id, agent)
);

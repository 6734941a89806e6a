-- adphost/pgstore schema, version 3: join requests are found by applicant
-- and by creation time (adphost.JoinRequestIndex) without reading a room's
-- whole list. created_at is the request's own created_at (Unix ms), copied
-- out of the stored body for the rows written before this version.
--
-- The bodies are read as jsonb, which refuses the escape \u0000 that a
-- request's text may hold: it becomes \uFFFD first (after an escaped
-- backslash, \\u0000 becomes \\uFFFD, text all the same), which changes
-- no member this reads.
ALTER TABLE adp_join_requests ADD COLUMN created_at bigint;
UPDATE adp_join_requests
   SET created_at = (replace(convert_from(body, 'UTF8'), E'\\u0000', E'\\uFFFD')::jsonb #>> '{request,created_at}')::bigint;
ALTER TABLE adp_join_requests ALTER COLUMN created_at SET NOT NULL;
CREATE INDEX adp_join_requests_by_applicant ON adp_join_requests (room_id, applicant, created);
CREATE INDEX adp_join_requests_by_time ON adp_join_requests (room_id, created_at);

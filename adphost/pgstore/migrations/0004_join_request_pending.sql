-- adphost/pgstore schema, version 4: a room's pending join requests are
-- counted and read through a partial index on their expiry, and its list
-- is paged by key (created_at, id), so that neither the bound a new
-- request checks nor a page of the list reads the room's history of
-- applicants. pending_until is the request's expires_at while it is stored
-- as pending, NULL otherwise.
--
-- The rows written before this version are read as jsonb, which refuses
-- the escape \u0000 that a request's text may hold: it becomes \uFFFD
-- first (after an escaped backslash, \\u0000 becomes \\uFFFD, text all the
-- same), which changes no member this reads.
ALTER TABLE adp_join_requests ADD COLUMN pending_until bigint;
WITH parsed AS (
    SELECT room_id, id, replace(convert_from(body, 'UTF8'), E'\\u0000', E'\\uFFFD')::jsonb AS j
      FROM adp_join_requests)
UPDATE adp_join_requests r SET pending_until = (p.j #>> '{request,expires_at}')::bigint
  FROM parsed p
 WHERE r.room_id = p.room_id AND r.id = p.id AND p.j ->> 'status' = 'pending';
CREATE INDEX adp_join_requests_pending ON adp_join_requests (room_id, pending_until)
 WHERE pending_until IS NOT NULL;
DROP INDEX adp_join_requests_by_time;
CREATE INDEX adp_join_requests_by_key ON adp_join_requests (room_id, created_at, id);

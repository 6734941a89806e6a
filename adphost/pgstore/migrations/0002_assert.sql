-- adphost/pgstore schema, version 2: adp_assert lets one pipelined
-- append run in the implicit transaction of a single Sync, failing it
-- (and so rolling it back) when one of its checks finds nothing to change.
CREATE FUNCTION adp_assert(ok boolean, what text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT ok THEN
        RAISE EXCEPTION 'adp_assert:%', what USING ERRCODE = 'P0001';
    END IF;
END
$$;

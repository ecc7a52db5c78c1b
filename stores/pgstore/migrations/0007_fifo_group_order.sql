-- sluice pgstore schema, version 7: FIFO groups are claimed in the order
-- their heads became receivable.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- SQS serves a FIFO queue's groups in the order their heads became
-- receivable: a head never received from its send (or its delay's end), a
-- head received before from the end of its last visibility (lapsed, or
-- changed). So a group whose message comes back goes after the groups that
-- were waiting. A group row's avail_at is its head's visible_at (early only
-- briefly, see sluice_fix_group), so sluice_fifo_claim takes candidates by
-- (avail_at, head_seq) instead of by head_seq.
--
-- fifo_groups_avail serves that walk: in order, from the queue's
-- earliest-available group, stopping when the claim has enough, however
-- many groups wait. avail_at is now indexed, so a claim's update of a
-- group's row is no longer HOT (the vacuumer cleans the dead versions).
-- Its predicate holds for every row (avail_at is finite or -infinity) and
-- is implied only by a statement that states it, as the claim's walk does:
-- the other walks of a queue's groups stay on fifo_groups_head (see
-- version 3). CREATE INDEX holds a lock that blocks writes to fifo_groups
-- while it builds; the table has one row per non-empty group.
CREATE INDEX fifo_groups_avail ON fifo_groups (queue_id, avail_at, head_seq) WHERE avail_at < 'infinity';

CREATE OR REPLACE FUNCTION sluice_fifo_claim(p_queue text, p_now timestamptz, p_after timestamptz, p_want integer,
                                  p_until timestamptz, p_token text, p_maxrc integer, p_taken text[],
                                  p_sweep boolean)
RETURNS TABLE (r_redrive boolean, r_message_id text, r_seq bigint, r_group_id text, r_dedup_id text, r_body text,
               r_attributes bytea, r_system_attributes bytea, r_md5_body text, r_md5_attributes text,
               r_md5_system text, r_sender_id text, r_sent_at timestamptz, r_receive_count integer,
               r_first_received_at timestamptz, r_dead_letter_source text, r_ord1 float8, r_ord2 bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    g   record;
    got integer := 0;
    n   integer;
    ord integer := 0;
    v_head bigint;
BEGIN
    IF p_sweep AND isfinite(p_after) THEN
        PERFORM sluice_fifo_sweep(p_queue, p_after, 100);
    END IF;
    FOR g IN
        SELECT f.group_id FROM fifo_groups f
        WHERE f.queue_id = p_queue AND f.avail_at < 'infinity' AND f.avail_at <= p_now AND f.group_id <> ALL(p_taken)
        ORDER BY f.avail_at, f.head_seq
    LOOP
        SELECT f.head_seq INTO v_head FROM fifo_groups f
        WHERE f.queue_id = p_queue AND f.group_id = g.group_id AND f.avail_at <= p_now
        FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        ord := ord + 1;
        RETURN QUERY
        WITH run AS (
            SELECT m.ctid, m.message_id, m.seq, m.receive_count, m.visible_at FROM messages m
            WHERE m.queue_id = p_queue AND m.group_id = g.group_id AND m.group_id >= '' AND m.seq >= v_head
              AND m.sent_at > p_after
            ORDER BY m.seq LIMIT p_want - got
        ), cand AS (
            SELECT r.ctid, r.message_id, r.seq, r.receive_count FROM (
                SELECT run.*, bool_and(run.visible_at <= p_now) OVER (ORDER BY run.seq) AS ok FROM run
            ) r WHERE r.ok
        ), upd AS (
            UPDATE messages m SET receive_count = m.receive_count + 1,
                first_received_at = coalesce(m.first_received_at, p_now),
                visible_at = p_until, token = p_token
            FROM cand
            WHERE m.ctid = cand.ctid AND cand.receive_count < p_maxrc
            RETURNING m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
                m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
                m.first_received_at, m.dead_letter_source
        ), head AS (
            -- The group's row, when the claim took its head and nothing is
            -- to be redriven: the head is in flight until p_until. head_seq
            -- stays: the run began at it, and messages it skipped as past
            -- retention still come first for the sweeps.
            UPDATE fifo_groups f SET avail_at = p_until
            WHERE f.queue_id = p_queue AND f.group_id = g.group_id
              AND EXISTS (SELECT 1 FROM upd) AND NOT EXISTS (SELECT 1 FROM cand WHERE cand.receive_count >= p_maxrc)
        )
        SELECT false, u.*, ord::float8, u.seq FROM upd u
        UNION ALL
        SELECT true, m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
            m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
            m.first_received_at, m.dead_letter_source, ord::float8, m.seq
        FROM cand JOIN messages m ON m.ctid = cand.ctid
        WHERE cand.receive_count >= p_maxrc;
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n = 0 THEN
            -- The row's avail_at was early (it may be): put it right.
            PERFORM sluice_fix_group(p_queue, g.group_id);
        END IF;
        got := got + n;
        EXIT WHEN got >= p_want;
    END LOOP;
END
$fn$;

-- CREATE OR REPLACE FUNCTION resets the function's settings: as version 3.
ALTER FUNCTION sluice_fifo_claim(text, timestamptz, timestamptz, integer, timestamptz, text, integer, text[], boolean)
    SET plan_cache_mode = force_generic_plan;

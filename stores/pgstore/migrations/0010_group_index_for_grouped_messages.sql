-- sluice pgstore schema, version 10: only messages with a group are in
-- the group index.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- messages_group (queue_id, group_id, seq) serves the walks of one FIFO
-- group (claims, group upkeep, sweeps). Its predicate, group_id >= '',
-- held for every row, so every Standard message paid an index entry that
-- no statement reads. messages_fifo_group takes only rows with a group
-- (every FIFO message; on a Standard queue, a fair-queue message), and the
-- walks state its predicate, group_id > '', as they stated the old one
-- (see version 3: a statement that does not state it cannot use the
-- index). CREATE INDEX holds a lock that blocks writes to messages while
-- it builds, as in version 7.
CREATE INDEX messages_fifo_group ON messages (queue_id, group_id, seq) WHERE group_id > '';
DROP INDEX messages_group;

CREATE OR REPLACE FUNCTION sluice_fix_group(p_queue text, p_group text)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    h      record;
    v_from bigint;
BEGIN
    -- From the recorded head on (see the note above sluice_fix_group).
    SELECT head_seq INTO v_from FROM fifo_groups WHERE queue_id = p_queue AND group_id = p_group;
    v_from := coalesce(v_from, 1);
    SELECT seq, visible_at INTO h FROM messages
    WHERE queue_id = p_queue AND group_id = p_group AND group_id > '' AND seq >= v_from ORDER BY seq LIMIT 1;
    IF NOT FOUND THEN
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_queue || chr(30) || 's' || chr(31) || p_group, 0)) THEN
            UPDATE fifo_groups SET avail_at = '-infinity'
            WHERE queue_id = p_queue AND group_id = p_group AND avail_at <> '-infinity';
            RETURN;
        END IF;
        -- No send of the group is under way and every earlier one committed:
        -- look again.
        SELECT seq, visible_at INTO h FROM messages
        WHERE queue_id = p_queue AND group_id = p_group AND group_id > '' AND seq >= v_from ORDER BY seq LIMIT 1;
        IF NOT FOUND THEN
            DELETE FROM fifo_groups WHERE queue_id = p_queue AND group_id = p_group;
            RETURN;
        END IF;
    END IF;
    INSERT INTO fifo_groups AS f (queue_id, group_id, head_seq, avail_at)
    VALUES (p_queue, p_group, h.seq, h.visible_at)
    ON CONFLICT (queue_id, group_id) DO UPDATE SET head_seq = excluded.head_seq, avail_at = excluded.avail_at
    WHERE f.head_seq <> excluded.head_seq OR f.avail_at <> excluded.avail_at;
END
$fn$;

CREATE OR REPLACE FUNCTION sluice_fifo_sweep(p_queue text, p_cut timestamptz, p_limit integer)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    g      record;
    v_low  bigint;
    v_head bigint;
BEGIN
    -- No message of the queue is older than its groups' oldest head.
    -- (As ORDER BY ... LIMIT 1: as min(), the planner read every group.)
    SELECT head_seq INTO v_low FROM fifo_groups WHERE queue_id = p_queue AND head_seq > 0
    ORDER BY head_seq LIMIT 1;
    IF v_low IS NULL THEN
        RETURN; -- no group, no message
    END IF;
    IF p_limit IS NOT NULL THEN
        PERFORM 1 FROM (SELECT sent_at FROM messages WHERE queue_id = p_queue AND seq > 0 AND seq >= v_low
                        ORDER BY seq LIMIT 1) h
        WHERE h.sent_at <= p_cut;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    FOR g IN
        SELECT DISTINCT d.group_id FROM (
            SELECT group_id, sent_at FROM messages WHERE queue_id = p_queue AND seq > 0 AND seq >= v_low
            ORDER BY seq LIMIT p_limit) d
        WHERE d.sent_at <= p_cut
        ORDER BY 1
    LOOP
        SELECT head_seq INTO v_head FROM fifo_groups WHERE queue_id = p_queue AND group_id = g.group_id
        FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM messages WHERE queue_id = p_queue AND group_id = g.group_id AND group_id > ''
          AND seq >= v_head AND sent_at <= p_cut;
        PERFORM sluice_fix_group(p_queue, g.group_id);
    END LOOP;
END
$fn$;

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
            WHERE m.queue_id = p_queue AND m.group_id = g.group_id AND m.group_id > '' AND m.seq >= v_head
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

-- CREATE OR REPLACE FUNCTION resets the functions' settings: as version 3.
ALTER FUNCTION sluice_fix_group(text, text) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION sluice_fifo_claim(text, timestamptz, timestamptz, integer, timestamptz, text, integer, text[], boolean)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION sluice_fifo_sweep(text, timestamptz, integer) SET plan_cache_mode = force_generic_plan;

-- sluice pgstore schema, version 21: the retention sweeps of version 20,
-- with their reads bounded.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- Two costs of version 20's sweeps grew with more than what they delete:
--
-- - A sweep in passing (a limit of 100 from claims, 1,000 from counts and
--   moves) looked for the queue's first retained message before applying
--   its limit, walking the whole due front however long. It now looks for
--   it among the first limit + 1 messages only (sluice_sweep_stop), and
--   bounds the sweep by the last of them when they are all due. Maintain
--   (no limit) still walks the due front, which it deletes.
-- - Maintain's FIFO sweep collected the due moved messages of the queue and
--   deleted, in each group, those of the whole list that were in the group:
--   one lookup per listed message per group, so the pass grew with groups ×
--   due moved messages (230 s for 16,000 due moved messages, each in a
--   group of its own, as in a dead-letter queue). Each group now gets the
--   list of its own.

-- sluice_sweep_stop is a sweep's bound: it deletes due messages with a
-- smaller seq. That is the seq of the queue's first retained message,
-- looked for among the first p_limit + 1 messages (all of them when
-- p_limit is NULL); when those are all due, the seq of the last of them,
-- so that the messages before it are at most p_limit (a FIFO sweep deletes
-- every due message before the bound in each group it visits); the
-- largest seq when the queue holds no more than them.
CREATE FUNCTION sluice_sweep_stop(p_queue text, p_cut timestamptz, p_limit integer)
RETURNS bigint LANGUAGE sql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET enable_sort = off
AS $fn$
    SELECT coalesce((
        SELECT f.seq FROM (
            SELECT seq, sent_at, row_number() OVER (ORDER BY seq) AS n FROM messages
            WHERE queue_id = p_queue AND seq > 0
            ORDER BY seq LIMIT p_limit + 1) f
        WHERE f.sent_at > p_cut OR f.n > p_limit
        ORDER BY f.seq LIMIT 1), 9223372036854775807)
$fn$;

CREATE OR REPLACE FUNCTION sluice_standard_sweep(p_queue text, p_cut timestamptz, p_limit integer)
RETURNS integer LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET enable_sort = off
AS $fn$
DECLARE
    v_stop bigint;
    v_n    integer := 0;
    v_m    integer;
BEGIN
    PERFORM 1 FROM (SELECT sent_at FROM messages WHERE queue_id = p_queue AND seq > 0
                    ORDER BY seq LIMIT 1) h
    WHERE h.sent_at <= p_cut;
    IF FOUND THEN
        v_stop := sluice_sweep_stop(p_queue, p_cut, p_limit);
        DELETE FROM messages WHERE queue_id = p_queue AND message_id = ANY(ARRAY(
            SELECT message_id FROM messages WHERE queue_id = p_queue AND seq > 0
              AND seq < v_stop AND sent_at <= p_cut
            ORDER BY seq LIMIT p_limit FOR UPDATE SKIP LOCKED));
        GET DIAGNOSTICS v_n = ROW_COUNT;
    END IF;
    IF p_limit IS NULL THEN
        DELETE FROM messages WHERE queue_id = p_queue AND message_id = ANY(ARRAY(
            SELECT message_id FROM messages WHERE queue_id = p_queue AND moved AND sent_at <= p_cut
            FOR UPDATE SKIP LOCKED));
        GET DIAGNOSTICS v_m = ROW_COUNT;
        v_n := v_n + v_m;
    END IF;
    RETURN v_n;
END
$fn$;

CREATE OR REPLACE FUNCTION sluice_fifo_sweep(p_queue text, p_cut timestamptz, p_limit integer)
RETURNS void LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
AS $fn$
DECLARE
    g      record;
    v_head bigint;
    v_stop bigint := 0; -- no due front
BEGIN
    PERFORM 1 FROM (SELECT sent_at FROM messages WHERE queue_id = p_queue AND seq > 0
                    ORDER BY seq LIMIT 1) h
    WHERE h.sent_at <= p_cut;
    IF FOUND THEN
        v_stop := sluice_sweep_stop(p_queue, p_cut, p_limit);
    ELSIF p_limit IS NOT NULL THEN
        RETURN;
    END IF;
    FOR g IN
        SELECT d.group_id, array_remove(array_agg(d.moved_id), NULL) AS moved FROM (
            (SELECT group_id, NULL::text AS moved_id FROM messages WHERE queue_id = p_queue AND seq > 0
               AND seq < v_stop AND sent_at <= p_cut ORDER BY seq LIMIT p_limit)
            UNION ALL
            (SELECT group_id, message_id FROM messages WHERE queue_id = p_queue AND moved AND sent_at <= p_cut
               AND p_limit IS NULL)) d
        GROUP BY d.group_id
        ORDER BY 1
    LOOP
        SELECT head_seq INTO v_head FROM fifo_groups WHERE queue_id = p_queue AND group_id = g.group_id
        FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM messages WHERE queue_id = p_queue AND group_id = g.group_id AND group_id > ''
          AND seq >= v_head AND seq < v_stop AND sent_at <= p_cut;
        IF cardinality(g.moved) > 0 THEN
            DELETE FROM messages WHERE queue_id = p_queue AND message_id = ANY(g.moved)
              AND group_id = g.group_id AND seq >= v_head AND sent_at <= p_cut;
        END IF;
        PERFORM sluice_fix_group(p_queue, g.group_id);
    END LOOP;
END
$fn$;

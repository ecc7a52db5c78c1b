-- sluice pgstore schema, version 14: a FIFO group's row has two indexes,
-- not three.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- A group's row changes about twice per message (a claim puts the group in
-- flight, a delete moves it to its next head), and each change is a new
-- row version with an entry in every index of fifo_groups: at FIFO batch 1,
-- 2.0 entries per message in each index, 180 bytes of WAL per message in
-- fifo_groups_head alone (pg_walinspect). That index served two walks: the
-- retention sweep's lower bound (the queue's oldest head, once a second
-- per queue and instance) and sluice_fifo_next's earliest next head. The
-- sweep now starts at the queue's first entry in messages_seq, as a
-- Standard queue's retention probe does; it steps over the dead entries
-- there, each of which costs one heap visit once (the scan marks it dead).
-- sluice_fifo_next takes the earliest later head from fifo_groups_avail in
-- order (LIMIT 1) instead of reading every group of the queue. Walks of a
-- queue's groups state fifo_groups_avail's predicate (it holds for every
-- row: avail_at is finite or -infinity) so that they use it.
--
-- Instances of older versions keep working beside this one: their
-- functions are these, and their own statements that walk a queue's groups
-- (purge, the clean-up of a deleted queue) read fifo_groups whole instead,
-- which has one row per non-empty group.
DROP INDEX fifo_groups_head;

CREATE OR REPLACE FUNCTION sluice_fifo_sweep(p_queue text, p_cut timestamptz, p_limit integer)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    g      record;
    v_head bigint;
BEGIN
    IF p_limit IS NOT NULL THEN
        PERFORM 1 FROM (SELECT sent_at FROM messages WHERE queue_id = p_queue AND seq > 0
                        ORDER BY seq LIMIT 1) h
        WHERE h.sent_at <= p_cut;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    FOR g IN
        SELECT DISTINCT d.group_id FROM (
            SELECT group_id, sent_at FROM messages WHERE queue_id = p_queue AND seq > 0
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

CREATE OR REPLACE FUNCTION sluice_fifo_next(p_queue text, p_now timestamptz, p_after timestamptz,
                                            OUT r_next timestamptz, OUT r_receivable boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    SELECT (SELECT f.avail_at FROM fifo_groups f
            WHERE f.queue_id = p_queue AND f.avail_at < 'infinity' AND f.avail_at > p_now
            ORDER BY f.avail_at LIMIT 1),
        EXISTS (SELECT 1 FROM fifo_groups f
            JOIN messages m ON m.queue_id = f.queue_id AND m.group_id = f.group_id AND m.group_id > ''
              AND m.seq = f.head_seq
            WHERE f.queue_id = p_queue AND f.avail_at < 'infinity' AND f.avail_at <= p_now
              AND m.visible_at <= p_now AND m.sent_at > p_after)
    INTO r_next, r_receivable;
END
$fn$;

-- CREATE OR REPLACE FUNCTION resets the functions' settings: as version 3.
ALTER FUNCTION sluice_fifo_sweep(text, timestamptz, integer) SET plan_cache_mode = force_generic_plan;

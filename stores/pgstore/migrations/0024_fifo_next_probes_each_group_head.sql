-- sluice pgstore schema, version 24: a FIFO claim that got nothing looks
-- for a receivable head one group at a time.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- sluice_fifo_next's receivable check joined fifo_groups to messages, and
-- on a queue of few live rows the planner often put messages outside: a
-- walk of messages_fifo_group over the whole queue, dead entries included,
-- for every empty claim. Under a steady FIFO long poll (a few messages
-- live, thousands of deleted ones between two vacuums) that read about
-- 3,000 buffers in one call and took a third of the empty claims' time.
-- The head's lookup is now a LATERAL subquery with a LIMIT, which the
-- planner cannot pull up: from each group row at or past its avail_at,
-- one equality probe of (queue_id, group_id, seq). The outcomes are those
-- of version 19.

CREATE OR REPLACE FUNCTION sluice_fifo_next(p_queue text, p_now timestamptz, p_after timestamptz,
                                            OUT r_next timestamptz, OUT r_receivable boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    PERFORM sluice_fifo_groups_whole();
    SELECT (SELECT f.avail_at FROM fifo_groups f
            WHERE f.queue_id = p_queue AND f.avail_at < 'infinity' AND f.avail_at > p_now
            ORDER BY f.avail_at LIMIT 1),
        EXISTS (SELECT 1 FROM fifo_groups f
            CROSS JOIN LATERAL (
                SELECT 1 FROM messages m
                WHERE m.queue_id = f.queue_id AND m.group_id = f.group_id AND m.group_id > ''
                  AND m.seq = f.head_seq AND m.visible_at <= p_now AND m.sent_at > p_after
                LIMIT 1) h
            WHERE f.queue_id = p_queue AND f.avail_at < 'infinity' AND f.avail_at <= p_now)
    INTO r_next, r_receivable;
END
$fn$;

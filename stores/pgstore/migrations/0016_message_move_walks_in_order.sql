-- sluice pgstore schema, version 16: a message move's candidates come from
-- a walk of messages_seq on any statistics.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- A move (StartMessageMoveTask, a redrive back to the source) takes the
-- oldest receivable messages of its source, a step at a time, in sequence
-- order. Planned while a queue's table was tiny, that statement became a
-- bitmap scan of the queue's range of messages_seq and a sort of all of
-- it, which, once a backlog came back, read and sorted the whole backlog
-- for every step (20,000 rows for a step of ten in the plan audit). The
-- statement now runs inside a function whose settings rule out the
-- bitmap scan and the sort, so that the only plan left is the walk of
-- messages_seq from the queue's front, whatever the statistics say. The
-- settings apply to this statement alone.
CREATE FUNCTION sluice_move_candidates(p_queue text, p_now timestamptz, p_after timestamptz,
                                       p_from bigint, p_limit integer)
RETURNS TABLE (r_message_id text, r_seq bigint, r_dead_letter_source text)
LANGUAGE sql VOLATILE
SET enable_bitmapscan = off
SET enable_sort = off
AS $fn$
    SELECT message_id, seq, dead_letter_source FROM messages
    WHERE queue_id = p_queue AND seq > 0 AND visible_at <= p_now AND sent_at > p_after AND seq > p_from
    ORDER BY seq LIMIT p_limit FOR UPDATE SKIP LOCKED
$fn$;

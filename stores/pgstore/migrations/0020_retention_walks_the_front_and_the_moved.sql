-- sluice pgstore schema, version 20: a retention sweep reads what is due,
-- not the whole queue.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- A message is sent with a seq from message_seq and sent_at from the
-- sender's clock, so within a queue sent_at grows with seq, up to clock
-- skew between instances. The messages past retention are then the front
-- of the queue by seq, up to the first one that is not. A moved message
-- (a dead-letter redrive, a message move task) breaks that order: it gets a
-- new seq at the back of its new queue and keeps its sent_at, as SQS keeps
-- a message's original enqueue timestamp, so it may expire behind younger
-- messages. Maintain's sweeps read every message of every queue to find
-- those: two seconds a minute beside a million resident messages.
--
-- moved marks such rows (NULL for a message sent to its queue, so that
-- the column costs a sent message nothing: the row's null bitmap has room
-- for it), and messages_moved indexes only them. A sweep deletes the due
-- front (one walk of messages_seq that stops at the first message still
-- retained) and, in Maintain, the due moved messages (one range of
-- messages_moved). Claims never write moved or sent_at, so they stay HOT
-- updates.
--
-- Rows already stored are marked where their sent_at is older than that of
-- a message before them in their queue: every unmarked row is then at least
-- as young as every row before it, so the walk that stops at the first
-- retained message leaves nothing due behind it unmarked. The marking
-- reads and sorts the table once; CREATE INDEX holds a lock that blocks
-- writes to messages while it builds, as in version 7.
ALTER TABLE messages ADD COLUMN moved boolean;

UPDATE messages m SET moved = true
FROM (
    SELECT queue_id, message_id FROM (
        SELECT queue_id, message_id, sent_at,
               max(sent_at) OVER (PARTITION BY queue_id ORDER BY seq
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
        FROM messages WHERE seq > 0) w
    WHERE w.sent_at < w.before
) o
WHERE m.queue_id = o.queue_id AND m.message_id = o.message_id;

CREATE INDEX messages_moved ON messages (queue_id, sent_at) WHERE moved;

-- sluice_standard_sweep deletes the due messages of a Standard queue
-- (p_cut: what was sent at or before it is past retention) and returns how
-- many. p_limit bounds the front's share (the sweeps claims run in
-- passing): then it looks only when the queue's oldest message is due
-- (one index step when nothing is), and leaves moved messages to Maintain
-- (claims skip expired ones). NULL (Maintain): every due message. Rows
-- others hold are passed over, for the next sweep.
CREATE FUNCTION sluice_standard_sweep(p_queue text, p_cut timestamptz, p_limit integer)
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
        SELECT seq INTO v_stop FROM messages WHERE queue_id = p_queue AND seq > 0 AND sent_at > p_cut
        ORDER BY seq LIMIT 1;
        DELETE FROM messages WHERE queue_id = p_queue AND message_id = ANY(ARRAY(
            SELECT message_id FROM messages WHERE queue_id = p_queue AND seq > 0
              AND seq < coalesce(v_stop, 9223372036854775807) AND sent_at <= p_cut
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

-- sluice_fifo_sweep, as in version 14, but over the due front and (in
-- Maintain) the due moved messages rather than the whole queue: the groups
-- of those messages, and in each group the due messages from its head up
-- to the queue's first retained message, and its due moved ones (by key,
-- so that no plan walks a long group for them).
CREATE OR REPLACE FUNCTION sluice_fifo_sweep(p_queue text, p_cut timestamptz, p_limit integer)
RETURNS void LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
AS $fn$
DECLARE
    g       record;
    v_head  bigint;
    v_stop  bigint := 0; -- no due front
    v_moved text[] := '{}';
BEGIN
    PERFORM 1 FROM (SELECT sent_at FROM messages WHERE queue_id = p_queue AND seq > 0
                    ORDER BY seq LIMIT 1) h
    WHERE h.sent_at <= p_cut;
    IF FOUND THEN
        SELECT coalesce(min(f.seq), 9223372036854775807) INTO v_stop FROM (
            SELECT seq FROM messages WHERE queue_id = p_queue AND seq > 0 AND sent_at > p_cut
            ORDER BY seq LIMIT 1) f;
    ELSIF p_limit IS NOT NULL THEN
        RETURN;
    END IF;
    IF p_limit IS NULL THEN
        v_moved := ARRAY(SELECT message_id FROM messages WHERE queue_id = p_queue AND moved AND sent_at <= p_cut);
    END IF;
    FOR g IN
        SELECT DISTINCT d.group_id FROM (
            (SELECT group_id FROM messages WHERE queue_id = p_queue AND seq > 0 AND seq < v_stop
               AND sent_at <= p_cut ORDER BY seq LIMIT p_limit)
            UNION ALL
            (SELECT group_id FROM messages WHERE queue_id = p_queue AND message_id = ANY(v_moved))) d
        ORDER BY 1
    LOOP
        SELECT head_seq INTO v_head FROM fifo_groups WHERE queue_id = p_queue AND group_id = g.group_id
        FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM messages WHERE queue_id = p_queue AND group_id = g.group_id AND group_id > ''
          AND seq >= v_head AND seq < v_stop AND sent_at <= p_cut;
        DELETE FROM messages WHERE queue_id = p_queue AND message_id = ANY(v_moved)
          AND group_id = g.group_id AND seq >= v_head AND sent_at <= p_cut;
        PERFORM sluice_fix_group(p_queue, g.group_id);
    END LOOP;
END
$fn$;

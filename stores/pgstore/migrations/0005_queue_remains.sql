-- sluice pgstore schema, version 5: a deleted queue's rows go in bounded
-- pages, after the deletion.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- DeleteQueue removes the queue's row (and with it every way to reach its
-- messages: they are keyed by the incarnation's id, which nothing can name
-- any more) and records the incarnation here. Maintain then deletes the
-- incarnation's messages, groups, dedup markers and receive attempts a page
-- at a time, each page a short transaction of its own, and drops the entry
-- once nothing is left and the deletion is an hour old (a send that raced
-- the deletion may add a row just after it).
CREATE TABLE queue_remains (
    queue_id   text PRIMARY KEY,
    deleted_at timestamptz NOT NULL
);

-- Rows that incarnations deleted before this version left behind (a send
-- racing a deletion) were found by scanning every table in Maintain; list
-- them here once instead.
INSERT INTO queue_remains (queue_id, deleted_at)
SELECT r.queue_id, now() FROM (
    SELECT queue_id FROM messages
    UNION SELECT queue_id FROM fifo_groups
    UNION SELECT queue_id FROM dedup
    UNION SELECT queue_id FROM receive_attempts
) r
WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = r.queue_id);

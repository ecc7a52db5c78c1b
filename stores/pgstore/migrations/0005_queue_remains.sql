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
-- them here once instead. Each table's distinct queue ids are read by
-- skipping through an index from one id to the next (a recursive CTE; the
-- walks state the partial indexes' predicates), not by reading the tables:
-- this runs while every starting instance waits for the migration lock.
INSERT INTO queue_remains (queue_id, deleted_at)
SELECT r.id, now() FROM (
    WITH RECURSIVE m(id) AS (
        (SELECT queue_id FROM messages WHERE seq > 0 ORDER BY queue_id LIMIT 1)
        UNION ALL
        SELECT (SELECT x.queue_id FROM messages x WHERE x.seq > 0 AND x.queue_id > m.id ORDER BY x.queue_id LIMIT 1)
        FROM m WHERE m.id IS NOT NULL
    ), g(id) AS (
        (SELECT queue_id FROM fifo_groups WHERE head_seq > 0 ORDER BY queue_id LIMIT 1)
        UNION ALL
        SELECT (SELECT x.queue_id FROM fifo_groups x WHERE x.head_seq > 0 AND x.queue_id > g.id ORDER BY x.queue_id LIMIT 1)
        FROM g WHERE g.id IS NOT NULL
    ), d(id) AS (
        (SELECT queue_id FROM dedup ORDER BY queue_id LIMIT 1)
        UNION ALL
        SELECT (SELECT x.queue_id FROM dedup x WHERE x.queue_id > d.id ORDER BY x.queue_id LIMIT 1)
        FROM d WHERE d.id IS NOT NULL
    ), a(id) AS (
        (SELECT queue_id FROM receive_attempts ORDER BY queue_id LIMIT 1)
        UNION ALL
        SELECT (SELECT x.queue_id FROM receive_attempts x WHERE x.queue_id > a.id ORDER BY x.queue_id LIMIT 1)
        FROM a WHERE a.id IS NOT NULL
    )
    SELECT id FROM m UNION SELECT id FROM g UNION SELECT id FROM d UNION SELECT id FROM a
) r
WHERE r.id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = r.id);

-- sluice pgstore schema, version 19: fifo_groups is unlogged, and rebuilt
-- from messages when PostgreSQL has emptied it.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- A group's row is derived from its messages: head_seq is the seq of the
-- group's first message and avail_at that message's visible_at (or
-- earlier). It changes about twice per FIFO message (a claim puts the group
-- in flight, a delete moves it to its next head), and each change wrote a
-- row lock, a new row version and an entry in both indexes to the WAL:
-- about 650 bytes per message at batch 1, more than a fifth of the FIFO
-- store's WAL (pg_waldump by relation). An unlogged table writes none.
--
-- PostgreSQL empties every unlogged table in crash recovery, and a promoted
-- standby or a restored base backup has them empty. fifo_groups_built,
-- unlogged too and emptied with it, holds one row while fifo_groups is
-- whole. Without that row, inserting a group's row fails (the trigger
-- below: a send into a new group, a delete's or move's upkeep), and so does
-- sluice_fifo_next, which every FIFO receive that got nothing calls, with
-- SQLSTATE SLG01. The store then calls sluice_fifo_groups_rebuild and runs
-- the operation again. While the row is there, every group that has
-- messages has its row: rows are inserted only while it is, and the two
-- tables are emptied together.
--
-- The rebuild takes fifo_groups in EXCLUSIVE mode. Every transaction that
-- changes a FIFO group's messages touches fifo_groups before it does (a
-- send in the statement that inserts the message, the others by taking
-- the group's row lock first), so the rebuild waits for those under way
-- and those that start wait for it: the messages it reads are settled.
--
-- Read fifo_groups_built through its key: the store's sessions run with
-- enable_seqscan off, and a sequential scan's cost would then have
-- PostgreSQL compile the check (JIT) on every call.
CREATE UNLOGGED TABLE fifo_groups_built (built boolean PRIMARY KEY);
INSERT INTO fifo_groups_built VALUES (true);

-- A publication that names fifo_groups keeps it logged (PostgreSQL
-- cannot publish an unlogged table, and refuses with 55000); the marker
-- is then logged too, and nothing else differs.
DO $do$
BEGIN
    ALTER TABLE fifo_groups SET UNLOGGED;
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'sluice: fifo_groups stays logged: %', SQLERRM;
    ALTER TABLE fifo_groups_built SET LOGGED;
END
$do$;

CREATE FUNCTION sluice_fifo_groups_whole() RETURNS void LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM fifo_groups_built WHERE built) THEN
        RAISE EXCEPTION 'sluice: fifo_groups was emptied (PostgreSQL crash recovery or promotion) and must be rebuilt'
            USING ERRCODE = 'SLG01', HINT = 'SELECT sluice_fifo_groups_rebuild()';
    END IF;
END
$fn$;

CREATE FUNCTION sluice_fifo_groups_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM sluice_fifo_groups_whole();
    RETURN NEW;
END
$fn$;

CREATE TRIGGER fifo_groups_insert BEFORE INSERT ON fifo_groups
    FOR EACH ROW EXECUTE FUNCTION sluice_fifo_groups_insert();

-- sluice_fifo_groups_rebuild makes every group's row from its messages
-- (messages of deleted queues have none), unless another transaction did
-- while this one waited for the lock. It returns the rows it made, or -1.
CREATE FUNCTION sluice_fifo_groups_rebuild() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    n bigint;
BEGIN
    LOCK TABLE fifo_groups IN EXCLUSIVE MODE;
    IF EXISTS (SELECT 1 FROM fifo_groups_built WHERE built) THEN
        RETURN -1;
    END IF;
    DELETE FROM fifo_groups;
    INSERT INTO fifo_groups_built VALUES (true);
    INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
    SELECT DISTINCT ON (m.queue_id, m.group_id) m.queue_id, m.group_id, m.seq, m.visible_at
    FROM messages m
    WHERE m.group_id > '' AND EXISTS (SELECT 1 FROM queues q WHERE q.id = m.queue_id AND q.fifo)
    ORDER BY m.queue_id, m.group_id, m.seq;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$fn$;

-- As version 14, checking first that fifo_groups is whole.
CREATE OR REPLACE FUNCTION sluice_fifo_next(p_queue text, p_now timestamptz, p_after timestamptz,
                                            OUT r_next timestamptz, OUT r_receivable boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    PERFORM sluice_fifo_groups_whole();
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

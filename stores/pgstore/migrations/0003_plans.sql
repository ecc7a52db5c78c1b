-- sluice pgstore schema, version 3: plans that stay right when the
-- statistics say a table is empty.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- Autoanalyze often finds a queue's tables drained, and a backlog may come
-- before it looks again. Every index on messages and fifo_groups began with
-- queue_id, so on "empty" statistics every candidate plan was estimated at
-- one row, the estimates tied, and the planner could pick the index that
-- walks a whole queue: a delete by receipt through (queue_id, seq),
-- filtering on message_id; a group head through (queue_id, seq), filtering
-- on group_id; a claim's update joined through (queue_id, message_id) on
-- queue_id alone (TestHotStatementsStaySmallOnDrainedStatistics saw all of
-- them, at 20,000 rows read per call). Now no two indexes can serve the
-- same statement:
-- - a message is found by its id alone (message ids are unique: the
--   service makes them, and a move keeps one row);
-- - the walks in queue order are partial indexes whose predicates hold for
--   every row but are implied only by a statement that states them: a walk
--   by seq says "seq > 0", a walk of one group says "group_id >= ''", a
--   walk of a queue's groups by head says "head_seq > 0". A statement that
--   does not say so cannot use them, whatever the statistics;
-- - a group's row is found by (group_id, queue_id), which no walk of a
--   queue's groups can use as a range;
-- - a claim's update joins its candidates by ctid (a TID scan, which no
--   other plan undercuts): joined by id, the planner walked the whole
--   primary key for them (a "one-row" index scan on such statistics costs
--   the same as a lookup), and as an id array (= ANY) it chose a
--   sequential scan when the table was small and kept that plan as it
--   grew. FIFO claims hold the group's lock, so nothing else changes the
--   rows meanwhile. A Standard candidate that another transaction updated
--   after the statement's snapshot and left visible (a zero visibility
--   timeout) is locked in its new version, which the update cannot see:
--   that claim skips it, and the next one takes it;
-- - sluice_delete finds the receipts' groups one equality lookup at a time,
--   for the same reason.
-- The CHECKs make sure that no row is ever left out of a partial index.

ALTER TABLE messages ADD CONSTRAINT messages_seq_positive CHECK (seq > 0);
ALTER TABLE messages DROP CONSTRAINT messages_pkey;
ALTER TABLE messages ADD CONSTRAINT messages_pkey PRIMARY KEY (message_id);
DROP INDEX messages_group;
CREATE INDEX messages_group ON messages (queue_id, group_id, seq) WHERE group_id >= '';
DROP INDEX messages_seq;
CREATE INDEX messages_seq ON messages (queue_id, seq) WHERE seq > 0;

ALTER TABLE fifo_groups ADD CONSTRAINT fifo_groups_head_positive CHECK (head_seq > 0);
ALTER TABLE fifo_groups DROP CONSTRAINT fifo_groups_pkey;
ALTER TABLE fifo_groups ADD CONSTRAINT fifo_groups_pkey PRIMARY KEY (group_id, queue_id);
DROP INDEX fifo_groups_head;
CREATE INDEX fifo_groups_head ON fifo_groups (queue_id, head_seq) WHERE head_seq > 0;

-- Version 2's claims set a group's head_seq past messages it skipped as
-- past retention; the walks below start at head_seq, so put every row at
-- its group's first message once (see the note above sluice_fix_group).
UPDATE fifo_groups f SET head_seq = m.first
FROM (SELECT queue_id, group_id, min(seq) AS first FROM messages GROUP BY 1, 2) m
WHERE f.queue_id = m.queue_id AND f.group_id = m.group_id AND f.head_seq > m.first;

-- The walks, as in versions 1 and 2, each stating its index's predicate.

-- A group's messages are taken, deleted and swept from its head, so the
-- index entries before the head are mostly those of deleted messages,
-- dead but not yet vacuumed. A walk of the group from its start steps
-- through all of them: 390 buffers per FIFO delete at a steady 290
-- messages/s. The walks start at the recorded head instead (head_seq of the
-- group's row, which the caller holds locked): no message of the group has
-- a smaller seq, since a group's messages are numbered in send order under
-- its send lock, and head_seq is only ever set from the group's first
-- message (a claim, which walks from the head, leaves it; messages it
-- skipped as past retention stay ahead of it for the sweeps). The same bound lets the
-- retention sweep start at the queue's oldest head rather than at its
-- first (dead) index entry.
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
    WHERE queue_id = p_queue AND group_id = p_group AND group_id >= '' AND seq >= v_from ORDER BY seq LIMIT 1;
    IF NOT FOUND THEN
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_queue || chr(30) || 's' || chr(31) || p_group, 0)) THEN
            UPDATE fifo_groups SET avail_at = '-infinity'
            WHERE queue_id = p_queue AND group_id = p_group AND avail_at <> '-infinity';
            RETURN;
        END IF;
        -- No send of the group is under way and every earlier one committed:
        -- look again.
        SELECT seq, visible_at INTO h FROM messages
        WHERE queue_id = p_queue AND group_id = p_group AND group_id >= '' AND seq >= v_from ORDER BY seq LIMIT 1;
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
        DELETE FROM messages WHERE queue_id = p_queue AND group_id = g.group_id AND group_id >= ''
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
        WHERE f.queue_id = p_queue AND f.head_seq > 0 AND f.avail_at <= p_now AND f.group_id <> ALL(p_taken)
        ORDER BY f.head_seq
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

CREATE OR REPLACE FUNCTION sluice_standard_receive(p_name text, p_id text, p_now timestamptz, p_want integer,
                                        p_vt_us bigint, p_token text)
RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q       record;
    v_now   timestamptz := coalesce(p_now, now());
    v_after timestamptz;
    v_until timestamptz;
BEGIN
    SELECT id, retention_us INTO q FROM queues WHERE name = p_name AND id = p_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue not found' USING ERRCODE = 'P0002';
    END IF;
    v_after := CASE WHEN q.retention_us > 0 THEN v_now - q.retention_us * interval '1 microsecond' ELSE '-infinity' END;
    v_until := v_now + p_vt_us * interval '1 microsecond';
    RETURN QUERY
    WITH cand AS (
        SELECT c.ctid, c.seq FROM messages c
        WHERE c.queue_id = q.id AND c.seq > 0 AND c.visible_at <= v_now AND c.sent_at > v_after
        ORDER BY c.seq LIMIT p_want
        FOR UPDATE SKIP LOCKED
    )
    UPDATE messages m SET receive_count = m.receive_count + 1,
        first_received_at = coalesce(m.first_received_at, v_now),
        visible_at = v_until, token = p_token
    FROM cand
    WHERE m.ctid = cand.ctid
    RETURNING false, m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
        m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
        m.first_received_at, m.dead_letter_source, 0::float8, m.seq;
END
$fn$;

CREATE OR REPLACE FUNCTION sluice_delete(p_name text, p_id text, p_msgs text[], p_tokens text[], p_keep_expired boolean,
                              p_now timestamptz, OUT r_outcomes integer[], OUT r_fifo boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q      record;
    m      record;
    v_now  timestamptz := coalesce(p_now, now());
    v_cut  timestamptz;
    groups text[];
    grp    text;
    fixes  text[] := '{}';
    i      integer;
    o      integer;
BEGIN
    SELECT id, fifo, retention_us INTO q FROM queues WHERE name = p_name AND (p_id = '' OR id = p_id);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    r_fifo := q.fifo;
    r_outcomes := '{}';
    v_cut := CASE WHEN q.retention_us > 0 THEN v_now - q.retention_us * interval '1 microsecond' ELSE '-infinity' END;
    IF q.fifo THEN
        groups := '{}';
        FOR i IN 1 .. coalesce(array_length(p_msgs, 1), 0) LOOP
            SELECT group_id INTO grp FROM messages WHERE queue_id = q.id AND message_id = p_msgs[i];
            IF FOUND AND NOT grp = ANY(groups) THEN
                groups := groups || grp;
            END IF;
        END LOOP;
        -- In group order (bytewise, as everyone takes group locks).
        SELECT coalesce(array_agg(g ORDER BY g COLLATE "C"), '{}') INTO groups FROM unnest(groups) g;
        -- One by one: an equality lookup is ten times cheaper than = ANY.
        FOREACH grp IN ARRAY coalesce(groups, '{}') LOOP
            PERFORM 1 FROM fifo_groups WHERE queue_id = q.id AND group_id = grp FOR NO KEY UPDATE;
        END LOOP;
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_msgs, 1), 0) LOOP
        SELECT token, visible_at, sent_at, group_id INTO m FROM messages
        WHERE queue_id = q.id AND message_id = p_msgs[i] FOR UPDATE;
        IF NOT FOUND OR m.sent_at <= v_cut THEN
            o := 3;
        ELSIF m.token = '' OR m.token <> p_tokens[i] THEN
            o := 2;
        ELSIF m.visible_at <= v_now THEN
            o := 1;
        ELSE
            o := 0;
        END IF;
        r_outcomes := r_outcomes || o;
        IF o = 0 OR (o = 1 AND NOT p_keep_expired) THEN
            DELETE FROM messages WHERE queue_id = q.id AND message_id = p_msgs[i];
            IF q.fifo AND NOT m.group_id = ANY(fixes) THEN
                fixes := fixes || m.group_id;
            END IF;
        END IF;
    END LOOP;
    FOREACH grp IN ARRAY fixes LOOP
        PERFORM sluice_fix_group(q.id, grp);
    END LOOP;
END
$fn$;

-- The group walks above bound seq by a variable (the head). In a custom
-- plan the variable is a constant, and "seq >= 42" implies "seq > 0", which
-- makes the (queue_id, seq) index usable for them again, filtering on the
-- group: a walk of the whole queue per group. Generic plans see only
-- parameters, so there each partial index stays with the statements that
-- state its predicate.
ALTER FUNCTION sluice_fix_group(text, text) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION sluice_fifo_claim(text, timestamptz, timestamptz, integer, timestamptz, text, integer, text[], boolean)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION sluice_fifo_sweep(text, timestamptz, integer) SET plan_cache_mode = force_generic_plan;

-- sluice pgstore schema, version 1.
-- Names and ids sort bytewise (COLLATE "C"), as Go compares strings.

CREATE TABLE queues (
    name         text COLLATE "C" PRIMARY KEY,
    id           text COLLATE "C" NOT NULL UNIQUE,  -- the incarnation
    fifo         boolean NOT NULL,
    attributes   jsonb NOT NULL DEFAULT '{}',
    tags         jsonb NOT NULL DEFAULT '{}',
    retention_us bigint NOT NULL DEFAULT 0,          -- 0: no retention limit
    created_at   timestamptz NOT NULL,
    modified_at  timestamptz NOT NULL,
    version      bigint NOT NULL,
    purged_at    timestamptz
);

CREATE TABLE queue_tombstones (
    name       text COLLATE "C" PRIMARY KEY,
    deleted_at timestamptz NOT NULL
);

-- Every message takes its number from one sequence: no hot row per queue.
-- A FIFO SequenceNumber is 10^19 + seq. FIFO sends hold their group's send
-- lock (an advisory lock) from before they take a number until commit, so
-- within a group sequence order is commit order.
CREATE SEQUENCE message_seq;

CREATE TABLE messages (
    queue_id           text COLLATE "C" NOT NULL,   -- queues.id (the incarnation)
    message_id         text COLLATE "C" NOT NULL,
    seq                bigint NOT NULL,
    group_id           text COLLATE "C" NOT NULL DEFAULT '',
    dedup_id           text NOT NULL DEFAULT '',
    body               text NOT NULL,
    attributes         bytea,                       -- JSON
    system_attributes  bytea,                       -- JSON
    md5_body           text NOT NULL DEFAULT '',
    md5_attributes     text NOT NULL DEFAULT '',
    md5_system         text NOT NULL DEFAULT '',
    sender_id          text NOT NULL DEFAULT '',
    sent_at            timestamptz NOT NULL,
    visible_at         timestamptz NOT NULL,
    receive_count      integer NOT NULL DEFAULT 0,
    first_received_at  timestamptz,
    token              text NOT NULL DEFAULT '',     -- latest delivery's claim token
    dead_letter_source text NOT NULL DEFAULT '',
    PRIMARY KEY (queue_id, message_id)
) WITH (fillfactor = 70);
-- Neither visible_at nor sent_at is indexed, so a claim (which changes only
-- visible_at, receive_count, first_received_at and token) is a HOT update:
-- no new index entries; fillfactor leaves room on the page for it. Standard
-- claims, NextChange, moves and the in-passing retention sweeps walk
-- (queue_id, seq) from the oldest message; the messages in flight or delayed
-- at the front are few. Maintain's full retention pass reads every message.
-- FIFO: group heads and runs.
CREATE INDEX messages_group ON messages (queue_id, group_id, seq);
-- Standard claims, moves, sweeps (oldest first by sequence).
CREATE INDEX messages_seq ON messages (queue_id, seq);

CREATE TABLE dedup (
    queue_id   text COLLATE "C" NOT NULL,
    scope      text COLLATE "C" NOT NULL,
    dedup_id   text COLLATE "C" NOT NULL,
    message_id text NOT NULL,
    seq        text NOT NULL,          -- the SequenceNumber to echo
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (queue_id, scope, dedup_id)
);
CREATE INDEX dedup_expires ON dedup (expires_at);

CREATE TABLE receive_attempts (
    queue_id    text COLLATE "C" NOT NULL,
    attempt_id  text COLLATE "C" NOT NULL,
    token       text NOT NULL,
    message_ids text[] NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (queue_id, attempt_id)
);
CREATE INDEX receive_attempts_expires ON receive_attempts (expires_at);

CREATE TABLE move_tasks (
    handle          text COLLATE "C" PRIMARY KEY,
    source_name     text NOT NULL,
    source_arn      text COLLATE "C" NOT NULL,
    destination_arn text NOT NULL DEFAULT '',
    max_per_second  integer NOT NULL DEFAULT 0,
    status          text NOT NULL,
    moved           bigint NOT NULL DEFAULT 0,
    to_move         bigint NOT NULL DEFAULT 0,
    failure_reason  text NOT NULL DEFAULT '',
    started_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
-- At most one active task per source, even under concurrent creates.
CREATE UNIQUE INDEX move_tasks_active ON move_tasks (source_arn) WHERE status IN ('RUNNING', 'CANCELLING');
CREATE INDEX move_tasks_started ON move_tasks (started_at DESC, handle);

-- FIFO groups: one row per message group that has messages (and, briefly,
-- some that no longer do). head_seq is the seq of the group's first message
-- (its head); avail_at is when the head is visible (its visible_at), or
-- earlier, never later: a claim locks a group whose avail_at has come,
-- re-reads it and puts head_seq and avail_at right. The row lock (FOR NO KEY
-- UPDATE) is the group's claim lock: claims, deletes, visibility changes,
-- sweeps and moves out of a group take it before they touch the group's
-- messages. avail_at is not indexed, so a claim's update of it is HOT.
-- A row is deleted only by a transaction that holds the group's send lock
-- and saw the group empty with a snapshot taken after it got that lock (see
-- sluice_fix_group); a send inserts the row when it is missing.
CREATE TABLE fifo_groups (
    queue_id text COLLATE "C" NOT NULL,
    group_id text COLLATE "C" NOT NULL,
    head_seq bigint NOT NULL,
    avail_at timestamptz NOT NULL,
    PRIMARY KEY (queue_id, group_id)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
CREATE INDEX fifo_groups_head ON fifo_groups (queue_id, head_seq);

-- sluice_fix_group puts a FIFO group's row right after its messages changed:
-- head_seq and avail_at from its first message, or, when it has none, the
-- row deleted. Callers hold the group's row lock (so no claim or receipt
-- operation of the group runs meanwhile); each statement here takes a fresh
-- snapshot. A send of the group may be under way (it holds the group's send
-- lock): then an empty-looking group keeps its row, available at once, and
-- the next claim of it looks again.
CREATE FUNCTION sluice_fix_group(p_queue text, p_group text)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    h record;
BEGIN
    SELECT seq, visible_at INTO h FROM messages
    WHERE queue_id = p_queue AND group_id = p_group ORDER BY seq LIMIT 1;
    IF NOT FOUND THEN
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_queue || chr(30) || 's' || chr(31) || p_group, 0)) THEN
            UPDATE fifo_groups SET avail_at = '-infinity'
            WHERE queue_id = p_queue AND group_id = p_group AND avail_at <> '-infinity';
            RETURN;
        END IF;
        -- No send of the group is under way and every earlier one committed:
        -- look again.
        SELECT seq, visible_at INTO h FROM messages
        WHERE queue_id = p_queue AND group_id = p_group ORDER BY seq LIMIT 1;
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

-- sluice_fifo_claim claims from a FIFO queue's groups in the order of their
-- heads: it locks the next group whose avail_at has come (skipping groups
-- others hold), takes from it the messages from its head up to the first
-- one that is not visible (messages sent at or before p_after are gone and
-- skipped), at most p_want in all, and puts the group's row right. Locking
-- one group at a time means a claim holds only groups it takes from, and a
-- volatile function's statements each take a fresh snapshot, so every run
-- is read after its group's lock was granted. Messages received p_maxrc
-- times or more are returned with redrive = true and not claimed. Groups in
-- p_taken were taken by this claim already. With p_sweep, messages past
-- retention are swept first (sluice_fifo_sweep), so that an expired head
-- does not hold up its group.
CREATE FUNCTION sluice_fifo_claim(p_queue text, p_now timestamptz, p_after timestamptz, p_want integer,
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
BEGIN
    IF p_sweep AND isfinite(p_after) THEN
        PERFORM sluice_fifo_sweep(p_queue, p_after, 100);
    END IF;
    FOR g IN
        SELECT f.group_id FROM fifo_groups f
        WHERE f.queue_id = p_queue AND f.avail_at <= p_now AND f.group_id <> ALL(p_taken)
        ORDER BY f.head_seq
    LOOP
        PERFORM 1 FROM fifo_groups f
        WHERE f.queue_id = p_queue AND f.group_id = g.group_id AND f.avail_at <= p_now
        FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        ord := ord + 1;
        RETURN QUERY
        WITH run AS (
            SELECT m.message_id, m.seq, m.receive_count, m.visible_at FROM messages m
            WHERE m.queue_id = p_queue AND m.group_id = g.group_id AND m.sent_at > p_after
            ORDER BY m.seq LIMIT p_want - got
        ), cand AS (
            SELECT r.message_id, r.seq, r.receive_count FROM (
                SELECT run.*, bool_and(run.visible_at <= p_now) OVER (ORDER BY run.seq) AS ok FROM run
            ) r WHERE r.ok
        ), upd AS (
            UPDATE messages m SET receive_count = m.receive_count + 1,
                first_received_at = coalesce(m.first_received_at, p_now),
                visible_at = p_until, token = p_token
            FROM cand
            WHERE m.queue_id = p_queue AND m.message_id = cand.message_id AND cand.receive_count < p_maxrc
            RETURNING m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
                m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
                m.first_received_at, m.dead_letter_source
        )
        SELECT false, u.*, ord::float8, u.seq FROM upd u
        UNION ALL
        SELECT true, m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
            m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
            m.first_received_at, m.dead_letter_source, ord::float8, m.seq
        FROM cand JOIN messages m ON m.queue_id = p_queue AND m.message_id = cand.message_id
        WHERE cand.receive_count >= p_maxrc;
        GET DIAGNOSTICS n = ROW_COUNT;
        PERFORM sluice_fix_group(p_queue, g.group_id);
        got := got + n;
        EXIT WHEN got >= p_want;
    END LOOP;
END
$fn$;

-- sluice_fifo_sweep deletes messages of a FIFO queue sent at or before
-- p_cut, a few groups at a time, locking each group first and skipping
-- groups others hold, and puts the groups' rows right. With p_limit, the
-- groups are those of the due messages among the first p_limit by seq, and
-- nothing is done unless the first message is due: when nothing is due it
-- is one index probe. (A moved message keeps its SentAt under a new seq, so
-- it may expire behind younger ones: claims skip it, Maintain sweeps it.)
-- With p_limit NULL (Maintain): every due message, a full pass.
CREATE FUNCTION sluice_fifo_sweep(p_queue text, p_cut timestamptz, p_limit integer)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    g record;
BEGIN
    IF p_limit IS NOT NULL THEN
        PERFORM 1 FROM (SELECT sent_at FROM messages WHERE queue_id = p_queue ORDER BY seq LIMIT 1) h
        WHERE h.sent_at <= p_cut;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    FOR g IN
        SELECT DISTINCT d.group_id FROM (
            SELECT group_id, sent_at FROM messages WHERE queue_id = p_queue
            ORDER BY seq LIMIT p_limit) d
        WHERE d.sent_at <= p_cut
        ORDER BY 1
    LOOP
        PERFORM 1 FROM fifo_groups WHERE queue_id = p_queue AND group_id = g.group_id
        FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM messages WHERE queue_id = p_queue AND group_id = g.group_id AND sent_at <= p_cut;
        PERFORM sluice_fix_group(p_queue, g.group_id);
    END LOOP;
END
$fn$;

-- sluice_delete is MessageDelete in one statement (one round trip). It
-- returns NULL when the queue (incarnation p_id; '' means any) does not
-- exist, else the outcome: 0 current, 1 expired, 2 stale, 3 gone, and
-- whether the queue is FIFO. The message is deleted when current, or
-- expired and not p_keep_expired. On a FIFO queue the group's row lock is
-- taken before the message's, and the row is put right after.
CREATE FUNCTION sluice_delete(p_name text, p_id text, p_msg text, p_token text, p_keep_expired boolean,
                              p_now timestamptz, OUT r_outcome integer, OUT r_fifo boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q   record;
    m   record;
    grp text;
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    SELECT id, fifo, retention_us INTO q FROM queues WHERE name = p_name AND (p_id = '' OR id = p_id);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    r_fifo := q.fifo;
    IF q.fifo THEN
        SELECT group_id INTO grp FROM messages WHERE queue_id = q.id AND message_id = p_msg;
        IF FOUND THEN
            PERFORM 1 FROM fifo_groups WHERE queue_id = q.id AND group_id = grp FOR NO KEY UPDATE;
        END IF;
    END IF;
    SELECT token, visible_at, sent_at INTO m FROM messages WHERE queue_id = q.id AND message_id = p_msg FOR UPDATE;
    IF NOT FOUND OR (q.retention_us > 0 AND m.sent_at <= v_now - q.retention_us * interval '1 microsecond') THEN
        r_outcome := 3;
        RETURN;
    ELSIF m.token = '' OR m.token <> p_token THEN
        r_outcome := 2;
        RETURN;
    ELSIF m.visible_at <= v_now THEN
        r_outcome := 1;
        IF p_keep_expired THEN
            RETURN;
        END IF;
    ELSE
        r_outcome := 0;
    END IF;
    DELETE FROM messages WHERE queue_id = q.id AND message_id = p_msg;
    IF q.fifo THEN
        PERFORM sluice_fix_group(q.id, grp);
    END IF;
END
$fn$;

-- sluice_fifo_receive is the common FIFO claim (no receive attempt id, no
-- redrive) in one statement, so one round trip: the queue (incarnation
-- p_id) is read, expired messages are swept and sluice_fifo_claim claims.
-- A missing queue raises no_data_found (P0002).
CREATE FUNCTION sluice_fifo_receive(p_name text, p_id text, p_now timestamptz, p_want integer,
                                    p_vt_us bigint, p_token text)
RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q     record;
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    SELECT id, retention_us INTO q FROM queues WHERE name = p_name AND id = p_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue not found' USING ERRCODE = 'P0002';
    END IF;
    RETURN QUERY SELECT * FROM sluice_fifo_claim(q.id, v_now,
        CASE WHEN q.retention_us > 0 THEN v_now - q.retention_us * interval '1 microsecond' ELSE '-infinity' END,
        p_want, v_now + p_vt_us * interval '1 microsecond', p_token, 2147483647, '{}', true);
END
$fn$;

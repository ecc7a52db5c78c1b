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
);
-- Standard claims and NextChange: visible (or next visible) first.
CREATE INDEX messages_visible ON messages (queue_id, visible_at, seq);
-- FIFO: group heads, runs, and the skip-scan over groups.
CREATE INDEX messages_group ON messages (queue_id, group_id, seq);
-- Retention sweeps.
CREATE INDEX messages_sent ON messages (queue_id, sent_at);
-- Moves (oldest first by sequence).
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

-- sluice_claim_groups picks and locks the FIFO groups one claim will take
-- from: groups whose head (first message within retention) is visible, in
-- the order of their heads, each locked with a transaction-scoped advisory
-- lock (skipping groups another claim holds), until their visible runs add
-- up to p_want. A loop rather than one statement so that it stops locking
-- as soon as it has enough, and so that each run is counted after its lock
-- was granted (a volatile function takes a fresh snapshot per statement).
-- Groups in p_taken were taken by this claim already.
CREATE FUNCTION sluice_claim_groups(p_queue text, p_now timestamptz, p_after timestamptz,
                                    p_want integer, p_taken text[])
RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    h   record;
    got integer := 0;
    run integer;
BEGIN
    FOR h IN
        WITH RECURSIVE groups AS (
            (SELECT group_id FROM messages WHERE queue_id = p_queue ORDER BY group_id LIMIT 1)
            UNION ALL
            SELECT (SELECT m.group_id FROM messages m WHERE m.queue_id = p_queue AND m.group_id > g.group_id
                    ORDER BY m.group_id LIMIT 1)
            FROM groups g WHERE g.group_id IS NOT NULL
        )
        SELECT g.group_id, hd.seq FROM groups g
        CROSS JOIN LATERAL (
            SELECT seq, visible_at FROM messages m
            WHERE m.queue_id = p_queue AND m.group_id = g.group_id AND m.sent_at > p_after
            ORDER BY seq LIMIT 1
        ) hd
        WHERE g.group_id IS NOT NULL AND hd.visible_at <= p_now AND g.group_id <> ALL(p_taken)
        ORDER BY hd.seq
    LOOP
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(hashtextextended(p_queue || chr(31) || h.group_id, 0));
        SELECT count(*) INTO run FROM (
            SELECT bool_and(visible_at <= p_now) OVER (ORDER BY seq) AS ok FROM (
                SELECT seq, visible_at FROM messages
                WHERE queue_id = p_queue AND group_id = h.group_id AND sent_at > p_after
                ORDER BY seq LIMIT p_want - got
            ) r
        ) k WHERE ok;
        CONTINUE WHEN run = 0;
        RETURN NEXT h.group_id;
        got := got + run;
        EXIT WHEN got >= p_want;
    END LOOP;
END
$fn$;

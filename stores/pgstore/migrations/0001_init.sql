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
    purged_at    timestamptz,
    -- FIFO sequence counter: the next SequenceNumber is 10^19 + next_seq.
    -- Bumped by an UPDATE in the sending transaction, so sequence order is
    -- commit order within a queue.
    next_seq     bigint NOT NULL DEFAULT 0
);

CREATE TABLE queue_tombstones (
    name       text COLLATE "C" PRIMARY KEY,
    deleted_at timestamptz NOT NULL
);

-- Standard queues order by a global sequence (no hot row per queue).
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

-- sluice pgstore schema, version 12: a receive that gets nothing says in
-- the same statement when to look again.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- After a one-statement receive that got nothing, a second statement, a
-- transaction of its own, said when the next message becomes visible and
-- whether one is receivable now (see claim.go: a claim can get nothing
-- beside a receivable message, passed over locked or sent after its
-- snapshot). Consumers of a FIFO queue whose groups are all in flight
-- receive nothing about half the time under load, so that was a round
-- trip and a commit for every other receive. sluice_fifo_receive_next and
-- sluice_standard_receive_next claim as sluice_fifo_receive and
-- sluice_standard_receive do and, when they got nothing, return instead
-- one row with an empty message id and the two answers, from
-- sluice_fifo_next or sluice_standard_next. Those run as later statements
-- of the same function, each on a snapshot of its own under READ
-- COMMITTED, so they still see what committed while the claim ran. The
-- general claim path calls them too. The older functions stay, unchanged,
-- for instances of older versions.

-- sluice_fifo_next: when the next group head becomes visible (avail_at is
-- never later than the head's visible_at; a head that is deleted, or a
-- send, wakes waiters anyway), and whether a group's head is receivable
-- now: visible and sent after p_after (retained). A group whose head is
-- past retention but whose later messages are receivable is not counted.
CREATE FUNCTION sluice_fifo_next(p_queue text, p_now timestamptz, p_after timestamptz,
                                 OUT r_next timestamptz, OUT r_receivable boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    SELECT (SELECT min(avail_at) FROM fifo_groups WHERE queue_id = p_queue AND head_seq > 0 AND avail_at > p_now),
        EXISTS (SELECT 1 FROM fifo_groups f
            JOIN messages m ON m.queue_id = f.queue_id AND m.group_id = f.group_id AND m.group_id > ''
              AND m.seq = f.head_seq
            WHERE f.queue_id = p_queue AND f.head_seq > 0 AND f.avail_at < 'infinity' AND f.avail_at <= p_now
              AND m.visible_at <= p_now AND m.sent_at > p_after)
    INTO r_next, r_receivable;
END
$fn$;

-- sluice_standard_next: when the next message in flight or delayed becomes
-- visible, and whether one is receivable now (visible and retained).
CREATE FUNCTION sluice_standard_next(p_queue text, p_now timestamptz, p_after timestamptz,
                                     OUT r_next timestamptz, OUT r_receivable boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    SELECT min(visible_at) FILTER (WHERE visible_at > p_now), coalesce(bool_or(visible_at <= p_now), false)
    INTO r_next, r_receivable
    FROM messages WHERE queue_id = p_queue AND seq > 0 AND sent_at > p_after;
END
$fn$;

-- sluice_fifo_receive_next: sluice_fifo_receive, and when it got nothing,
-- sluice_fifo_next's answers in a row of their own (empty message id).
CREATE FUNCTION sluice_fifo_receive_next(p_name text, p_id text, p_now timestamptz, p_want integer,
                                         p_vt_us bigint, p_token text, p_sweep boolean)
RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q       record;
    v_now   timestamptz := coalesce(p_now, now());
    v_after timestamptz;
    n       record;
BEGIN
    SELECT id, retention_us INTO q FROM queues WHERE name = p_name AND id = p_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue not found' USING ERRCODE = 'P0002';
    END IF;
    v_after := CASE WHEN q.retention_us > 0 THEN v_now - q.retention_us * interval '1 microsecond' ELSE '-infinity' END;
    RETURN QUERY SELECT c.*, NULL::timestamptz, false FROM sluice_fifo_claim(q.id, v_now, v_after,
        p_want, v_now + p_vt_us * interval '1 microsecond', p_token, 2147483647, '{}', p_sweep) c;
    IF NOT FOUND THEN
        -- A later statement: it sees what committed while the claim ran.
        SELECT * INTO n FROM sluice_fifo_next(q.id, v_now, v_after);
        RETURN QUERY SELECT false, ''::text, 0::bigint, ''::text, ''::text, ''::text, NULL::bytea, NULL::bytea,
            ''::text, ''::text, ''::text, ''::text, v_now, 0, NULL::timestamptz, ''::text, 0::float8, 0::bigint,
            n.r_next, n.r_receivable;
    END IF;
END
$fn$;

-- sluice_standard_receive_next: sluice_standard_receive, and when it got
-- nothing, sluice_standard_next's answers in a row of their own.
CREATE FUNCTION sluice_standard_receive_next(p_name text, p_id text, p_now timestamptz, p_want integer,
                                             p_vt_us bigint, p_token text)
RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q       record;
    v_now   timestamptz := coalesce(p_now, now());
    v_after timestamptz;
    v_until timestamptz;
    n       record;
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
        m.first_received_at, m.dead_letter_source, 0::float8, m.seq, NULL::timestamptz, false;
    IF NOT FOUND THEN
        -- A later statement: it sees what committed while the claim ran.
        SELECT * INTO n FROM sluice_standard_next(q.id, v_now, v_after);
        RETURN QUERY SELECT false, ''::text, 0::bigint, ''::text, ''::text, ''::text, NULL::bytea, NULL::bytea,
            ''::text, ''::text, ''::text, ''::text, v_now, 0, NULL::timestamptz, ''::text, 0::float8, 0::bigint,
            n.r_next, n.r_receivable;
    END IF;
END
$fn$;

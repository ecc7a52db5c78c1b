-- sluice pgstore schema, version 11: fewer statements per FIFO claim and
-- delete.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- sluice_fifo_claim read its candidate groups once, in order, and then
-- locked each with a statement of its own; under load most candidates
-- were taken by other claims by then (about 2.7 lock statements for each
-- group claimed). It now takes the next group in one statement that
-- walks fifo_groups_avail in order and locks as it goes, skipping rows
-- other claims hold (FOR NO KEY UPDATE SKIP LOCKED under LIMIT 1): a row
-- changed since the statement's snapshot is checked again under its lock,
-- so a group another claim just put in flight is passed over. Each turn
-- of the loop sees what committed since the last.
--
-- sluice_delete sorted a FIFO batch's groups in a statement of its own,
-- locked each group and then called sluice_fix_group, which read the
-- group's head again. It now sorts only when the batch has more than one
-- group, reads each group's head as it locks it, and puts the group right
-- from that head (sluice_fix_group's rule, unchanged, now in
-- sluice_fix_group_from). Outcomes, and the locking order (a FIFO queue's
-- group rows first, bytewise), are as in version 9.
CREATE FUNCTION sluice_fix_group_from(p_queue text, p_group text, p_from bigint)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    h      record;
    v_from bigint := coalesce(p_from, 1);
BEGIN
    SELECT seq, visible_at INTO h FROM messages
    WHERE queue_id = p_queue AND group_id = p_group AND group_id > '' AND seq >= v_from ORDER BY seq LIMIT 1;
    IF NOT FOUND THEN
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_queue || chr(30) || 's' || chr(31) || p_group, 0)) THEN
            UPDATE fifo_groups SET avail_at = '-infinity'
            WHERE queue_id = p_queue AND group_id = p_group AND avail_at <> '-infinity';
            RETURN;
        END IF;
        -- No send of the group is under way and every earlier one committed:
        -- look again.
        SELECT seq, visible_at INTO h FROM messages
        WHERE queue_id = p_queue AND group_id = p_group AND group_id > '' AND seq >= v_from ORDER BY seq LIMIT 1;
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

-- sluice_fix_group keeps its signature (older instances call it): it reads
-- the recorded head and puts the group right from there.
CREATE OR REPLACE FUNCTION sluice_fix_group(p_queue text, p_group text)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_from bigint;
BEGIN
    -- From the recorded head on (see the note above sluice_fix_group).
    SELECT head_seq INTO v_from FROM fifo_groups WHERE queue_id = p_queue AND group_id = p_group;
    PERFORM sluice_fix_group_from(p_queue, p_group, v_from);
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
    g      record;
    got    integer := 0;
    n      integer;
    ord    integer := 0;
    v_head bigint;
    v_past text[] := p_taken; -- groups taken before, or tried in this claim
BEGIN
    IF p_sweep AND isfinite(p_after) THEN
        PERFORM sluice_fifo_sweep(p_queue, p_after, 100);
    END IF;
    LOOP
        SELECT f.group_id, f.head_seq INTO g FROM fifo_groups f
        WHERE f.queue_id = p_queue AND f.avail_at < 'infinity' AND f.avail_at <= p_now AND f.group_id <> ALL(v_past)
        ORDER BY f.avail_at, f.head_seq
        LIMIT 1
        FOR NO KEY UPDATE SKIP LOCKED;
        EXIT WHEN NOT FOUND;
        v_past := v_past || g.group_id;
        v_head := g.head_seq;
        ord := ord + 1;
        RETURN QUERY
        WITH run AS (
            SELECT m.ctid, m.message_id, m.seq, m.receive_count, m.visible_at FROM messages m
            WHERE m.queue_id = p_queue AND m.group_id = g.group_id AND m.group_id > '' AND m.seq >= v_head
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
            PERFORM sluice_fix_group_from(p_queue, g.group_id, v_head);
        END IF;
        got := got + n;
        EXIT WHEN got >= p_want;
    END LOOP;
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
    heads  bigint[]; -- each group's head, read as it was locked
    v_head bigint;
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
        IF array_length(groups, 1) > 1 THEN
            -- In group order (bytewise, as everyone takes group locks).
            SELECT array_agg(g ORDER BY g COLLATE "C") INTO groups FROM unnest(groups) g;
        END IF;
        heads := array_fill(NULL::bigint, ARRAY[coalesce(array_length(groups, 1), 0)]);
        -- One by one: an equality lookup is ten times cheaper than = ANY.
        FOR i IN 1 .. coalesce(array_length(groups, 1), 0) LOOP
            SELECT head_seq INTO v_head FROM fifo_groups WHERE queue_id = q.id AND group_id = groups[i]
            FOR NO KEY UPDATE;
            heads[i] := v_head;
        END LOOP;
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_msgs, 1), 0) LOOP
        -- The common case, a current receipt, in one statement: no row
        -- lock to write first. (A row changed meanwhile is re-checked
        -- under its lock, so the conditions hold for what is deleted.)
        DELETE FROM messages WHERE queue_id = q.id AND message_id = p_msgs[i]
          AND token = p_tokens[i] AND p_tokens[i] <> '' AND visible_at > v_now AND sent_at > v_cut
        RETURNING group_id INTO grp;
        IF FOUND THEN
            r_outcomes := r_outcomes || 0;
            IF q.fifo AND NOT grp = ANY(fixes) THEN
                fixes := fixes || grp;
            END IF;
            CONTINUE;
        END IF;
        SELECT token, visible_at, sent_at, group_id INTO m FROM messages
        WHERE queue_id = q.id AND message_id = p_msgs[i] FOR UPDATE;
        IF NOT FOUND OR m.sent_at <= v_cut THEN
            o := 3;
        ELSIF m.token = '' OR p_tokens[i] = '' THEN
            o := 2;
        ELSIF m.token <> p_tokens[i] THEN
            o := 4;
        ELSIF m.visible_at <= v_now THEN
            o := 1;
        ELSE
            o := 0;
        END IF;
        r_outcomes := r_outcomes || o;
        IF o = 0 OR (o IN (1, 4) AND NOT p_keep_expired) THEN
            DELETE FROM messages WHERE queue_id = q.id AND message_id = p_msgs[i];
            IF q.fifo AND NOT m.group_id = ANY(fixes) THEN
                fixes := fixes || m.group_id;
            END IF;
        END IF;
    END LOOP;
    -- From the head each group had under its lock (no statement since
    -- moved it).
    FOREACH grp IN ARRAY fixes LOOP
        PERFORM sluice_fix_group_from(q.id, grp, heads[array_position(groups, grp)]);
    END LOOP;
END
$fn$;

-- CREATE OR REPLACE FUNCTION resets the functions' settings: as version 3.
ALTER FUNCTION sluice_fix_group(text, text) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION sluice_fix_group_from(text, text, bigint) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION sluice_fifo_claim(text, timestamptz, timestamptz, integer, timestamptz, text, integer, text[], boolean)
    SET plan_cache_mode = force_generic_plan;

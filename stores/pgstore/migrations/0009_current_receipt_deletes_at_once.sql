-- sluice pgstore schema, version 9: a current receipt deletes in one
-- statement.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- sluice_delete judged every receipt under the message's row lock (SELECT
-- ... FOR UPDATE, a WAL record of its own) and then deleted. Now it first
-- deletes the message only if the receipt is current (its claim token,
-- still in flight, within retention), which is nearly every delete, and
-- takes the old path, lock then judge, for the rest. Outcomes and locking
-- order (a FIFO queue's group rows first) are as in version 6.
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
    FOREACH grp IN ARRAY fixes LOOP
        PERFORM sluice_fix_group(q.id, grp);
    END LOOP;
END
$fn$;

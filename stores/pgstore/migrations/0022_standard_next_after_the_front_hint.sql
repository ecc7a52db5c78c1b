-- sluice pgstore schema, version 22: a Standard claim that got nothing
-- answers from the messages after its front hint.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- sluice_standard_next read every message of the queue. Beside a large
-- front of messages in flight (the case the front hint serves) that was a
-- walk of the whole queue for every claim that got nothing, as in a long
-- poll. sluice_standard_next_from reads only the messages after p_from (0:
-- all), and also says how many it read and the last one's seq, so that an
-- empty claim can start or move a hint the way a claim that got messages
-- does. The store answers for the messages up to p_from from the hint.
-- sluice_standard_next stays, unchanged, for instances of older versions.

CREATE FUNCTION sluice_standard_next_from(p_queue text, p_now timestamptz, p_after timestamptz, p_from bigint,
                                          OUT r_next timestamptz, OUT r_receivable boolean,
                                          OUT r_count bigint, OUT r_last bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    SELECT min(visible_at) FILTER (WHERE visible_at > p_now), coalesce(bool_or(visible_at <= p_now), false),
        count(*), coalesce(max(seq), 0)
    INTO r_next, r_receivable, r_count, r_last
    -- seq > 0 as well: messages_seq covers only those, and a generic plan
    -- cannot know that p_from is never negative.
    FROM messages WHERE queue_id = p_queue AND seq > 0 AND seq > p_from AND sent_at > p_after;
END
$fn$;

-- sluice pgstore schema, version 23: a receive attempt keeps where it left
-- its messages' visibility.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- SQS replays a ReceiveRequestAttemptId only "if none of the messages have
-- been modified (deleted or had their visibility changes)". visible_until
-- holds the visibility the claim, or its last replay, gave each message, in
-- the order of message_ids; a message whose visible_at differs was changed
-- since, and the attempt is a new receive. Attempts written by older
-- instances have none (NULL): their replays are judged as before.

ALTER TABLE receive_attempts ADD COLUMN visible_until timestamptz[];

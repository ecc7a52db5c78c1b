-- sluice pgstore schema, version 4: move tasks stepped by many instances.
-- (Migrations are append-only once on main: TestMigrationsAppendOnly.)
--
-- version: every change of a task increments it, and a step moves messages
-- only while the version it read is the stored one, checked under the
-- task's row lock in the move's own transaction, so two instances never
-- both move for one step and the count is exactly what moved.
-- paced_to: how far the task's rate allowance is used; stored with the task
-- so the rate holds however many instances step it. A task from before
-- continues from its last step.
ALTER TABLE move_tasks
    ADD COLUMN version bigint NOT NULL DEFAULT 1,
    ADD COLUMN paced_to timestamptz NOT NULL DEFAULT '0001-01-01 00:00:00+00';
UPDATE move_tasks SET paced_to = updated_at;

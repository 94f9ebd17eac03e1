-- Undoes up.sql (the keys' snapshots are lost: their repeats then count as in flight).
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_snapshot_check;
ALTER TABLE idempotency_keys DROP COLUMN snapshot;

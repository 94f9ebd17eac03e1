-- Undoes up.sql (the keys' snapshots are lost: their repeats then count as in flight).
ALTER TABLE idempotency_keys DROP COLUMN snapshot;

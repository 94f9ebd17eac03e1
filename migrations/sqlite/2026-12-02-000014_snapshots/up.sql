-- What an idempotent request did, as the service snapshots it (a versioned format of its own,
-- read back on a repeat and rendered by the front end), instead of a front end's answer bytes.
-- Rows written before keep `status` and `response_body` (answered as they are until purged);
-- a version without this column reads a new row as still in flight (409), never as an answer.
-- Keep in step with migrations/postgres/2026-12-02-000014_snapshots/up.sql and schema.rs.
ALTER TABLE idempotency_keys ADD COLUMN snapshot BLOB NULL CONSTRAINT idempotency_keys_snapshot_check CHECK (snapshot IS NULL OR response_body IS NULL);

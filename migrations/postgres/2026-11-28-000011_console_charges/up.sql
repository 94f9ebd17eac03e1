-- The console's Charges list and Home (PostgreSQL), read without scanning an organisation's
-- charges (an organisation may have millions). Charges are inserted and updated at over a
-- thousand a second, and every index costs each of those writes an entry, so only these:
--
-- charges_payer_idx: the list filtered by "Phone number", newest first: the payer's charges of
--   the organisation and mode in id order, the first page read straight off the index.
-- charges_state_idx: the list filtered by "State", newest first (a rare state, say `failed`
--   among a million `completed`, would otherwise walk the organisation's whole history).
-- charges_created_idx: Home's figures (today's charges, the last 14 days' completed amount per
--   local day): a range of the days' charges alone, carrying kind, state and amount so that the
--   sums read the index, not the table.
-- events_object_idx: a charge's page, its state history and webhook deliveries: the events of
--   one object (object ids are prefixed UUIDv7s, unique across organisations and modes, so the
--   object is enough to find its few events; the query checks organisation and mode on them).
--
-- Built in the migration's transaction, so the tables take no writes while the indexes are
-- built (a few seconds for a million charges); on a large live database, create them first
-- with CREATE INDEX CONCURRENTLY under these names and this migration finds them (IF NOT EXISTS).
-- Keep in step with migrations/sqlite/2026-11-28-000011_console_charges/up.sql.
CREATE INDEX IF NOT EXISTS charges_payer_idx ON charges (org_id, mode, payer_msisdn, id);
CREATE INDEX IF NOT EXISTS charges_state_idx ON charges (org_id, mode, state, id);
CREATE INDEX IF NOT EXISTS charges_created_idx ON charges (org_id, mode, created_at) INCLUDE (kind, state, amount);
CREATE INDEX IF NOT EXISTS events_object_idx ON events (object_id, id);

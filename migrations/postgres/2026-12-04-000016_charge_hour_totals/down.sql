-- Undoes up.sql.
CREATE INDEX IF NOT EXISTS charges_created_idx ON charges (org_id, mode, created_at) INCLUDE (kind, state, amount);
DROP TRIGGER charges_hour_totals_update ON charges;
DROP TRIGGER charges_hour_totals_insert ON charges;
DROP FUNCTION charge_hour_totals_completed();
DROP FUNCTION charge_hour_totals_inserted();
DROP TABLE charge_hour_totals;

-- Undoes up.sql.
CREATE INDEX IF NOT EXISTS charges_created_idx ON charges (org_id, mode, created_at);
DROP TRIGGER charges_hour_totals_update;
DROP TRIGGER charges_hour_totals_insert;
DROP TABLE charge_hour_totals;

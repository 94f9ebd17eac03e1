-- Undoes up.sql.
DROP TRIGGER charges_hour_totals_update;
DROP TRIGGER charges_hour_totals_insert;
DROP TABLE charge_hour_totals;

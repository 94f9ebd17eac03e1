-- Undoes up.sql.
DROP TRIGGER charges_hour_totals_update ON charges;
DROP TRIGGER charges_hour_totals_insert ON charges;
DROP FUNCTION charge_hour_totals_completed();
DROP FUNCTION charge_hour_totals_inserted();
DROP TABLE charge_hour_totals;

-- Undoes up.sql (the CHECK goes with the last column, which is dropped first).
ALTER TABLE bulk_payouts DROP COLUMN rejected_by_person;
ALTER TABLE bulk_payouts DROP COLUMN approved_by_person;
ALTER TABLE bulk_payouts DROP COLUMN created_by_person;

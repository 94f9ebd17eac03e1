-- Undoes up.sql.
ALTER TABLE bulk_payouts
    DROP CONSTRAINT bulk_payouts_people_check,
    DROP COLUMN rejected_by_person,
    DROP COLUMN approved_by_person,
    DROP COLUMN created_by_person;

-- Maker/checker compares people (api.md section 6, console.md section 4, Corporate): the person
-- behind the maker and behind the checker of a bulk payout, when a person acts (in the console,
-- or through a key pair they created there). A person never approves or rejects a batch they
-- made, whatever credential either side used; the batch's state machine checks it, and so does
-- the database. NULL (a key pair an operator issued) compares as unknown, so the CHECK holds.
-- Keep in step with migrations/sqlite/2026-11-28-000012_corporate/up.sql and
-- crates/malipo-store-diesel/src/schema.rs.
ALTER TABLE bulk_payouts
    ADD COLUMN created_by_person  TEXT NULL,
    ADD COLUMN approved_by_person TEXT NULL,
    ADD COLUMN rejected_by_person TEXT NULL,
    ADD CONSTRAINT bulk_payouts_people_check
        CHECK (approved_by_person <> created_by_person AND rejected_by_person <> created_by_person);

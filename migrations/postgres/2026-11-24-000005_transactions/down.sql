DROP INDEX postings_account_time_idx;
ALTER TABLE accounts DROP COLUMN posted_at;
ALTER TABLE postings DROP COLUMN fee;

-- Undoes up.sql.
DROP INDEX postings_account_debits_idx;

-- A wallet's debits of the day (its daily limit's use, read at every charge push and approval)
-- by an index-only range: the debits alone, with their amounts and journals.
CREATE INDEX postings_account_debits_idx ON postings (account_id, created_at) INCLUDE (amount, journal_id) WHERE amount < 0;

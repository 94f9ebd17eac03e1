-- Transactions and daily reconciliation.

-- The fee an organisation paid on a journal, on the posting of its account that carried it
-- (negative for a fee share given back or an agent's commission). Journals posted before this
-- migration recorded no fee and show zero.
ALTER TABLE postings ADD COLUMN fee BIGINT NOT NULL DEFAULT 0;

-- The latest posting time of each account. A posting's time is never earlier than the one
-- before it on the same account (a journal that took its clock reading before another one
-- that locked the account first is stamped with the later time), so an account's postings in
-- ledger order are in time order too: a day's postings are one unbroken run, and
-- closing = opening + credits - debits holds over every day boundary.
ALTER TABLE accounts ADD COLUMN posted_at BIGINT NOT NULL DEFAULT 0;
UPDATE accounts SET posted_at = COALESCE((SELECT max(p.created_at) FROM postings p WHERE p.account_id = accounts.id), 0);

-- Transactions and statements by account and time, in ledger order.
CREATE INDEX postings_account_time_idx ON postings (account_id, created_at, id);

-- Undoes up.sql.
DROP INDEX journals_source_key;
CREATE UNIQUE INDEX journals_source_key ON journals (source_ref) WHERE kind IN ('charge', 'payout');
DROP TABLE payment_requests;

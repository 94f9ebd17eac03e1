-- Merchant payment requests (SQLite): a merchant asks to be paid, a customer pays the request's
-- pay code from the USSD menu; and a payment request paid by one journal at most. Same
-- conventions as the core schema. Keep in step with
-- migrations/postgres/2026-11-24-000006_payment_requests/up.sql and crates/malipo-store-diesel/src/schema.rs.

CREATE TABLE payment_requests (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organisations (id),
    mode             TEXT NOT NULL CONSTRAINT payment_requests_mode_check CHECK (mode IN ('test', 'live')),
    pay_code         TEXT NOT NULL CONSTRAINT payment_requests_pay_code_check CHECK (length(pay_code) = 6 AND pay_code NOT GLOB '*[^0-9]*'),
    state            TEXT NOT NULL CONSTRAINT payment_requests_state_check CHECK (state IN ('open', 'paid', 'cancelled', 'expired')),
    amount           BIGINT NOT NULL CONSTRAINT payment_requests_amount_check CHECK (amount > 0),
    fee              BIGINT NOT NULL CONSTRAINT payment_requests_fee_check CHECK (fee >= 0 AND fee <= amount),
    currency         TEXT NOT NULL,
    reference        TEXT NOT NULL,
    description      TEXT NULL,
    -- The customer it is addressed to (it shows in their pending approvals).
    payer_msisdn     TEXT NULL,
    paid_by_msisdn   TEXT NULL,
    transaction_id   TEXT NULL CONSTRAINT payment_requests_transaction_id_key UNIQUE,
    -- The merchant's collection account, credited with amount - fee.
    merchant_account TEXT NOT NULL REFERENCES accounts (id),
    expires_at       BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    paid_at          BIGINT NULL,
    -- GLOB, not LIKE: SQLite's LIKE ignores case and has no default escape character.
    CONSTRAINT payment_requests_id_prefix_check CHECK (id GLOB 'pr_*'),
    -- Who paid, with which ledger transaction and when: exactly when paid.
    CONSTRAINT payment_requests_paid_check CHECK (
        (paid_by_msisdn IS NOT NULL) = (state = 'paid')
        AND (transaction_id IS NOT NULL) = (state = 'paid')
        AND (paid_at IS NOT NULL) = (state = 'paid')),
    CONSTRAINT payment_requests_expires_at_check CHECK (expires_at > created_at)
);
CREATE INDEX payment_requests_org_idx ON payment_requests (org_id, mode, id);
-- A pay code names at most one open request of its mode; codes are reused once a request closes.
CREATE UNIQUE INDEX payment_requests_open_code_key ON payment_requests (mode, pay_code) WHERE state = 'open';
-- The request that used a code last (a customer is told why a closed one cannot be paid).
CREATE INDEX payment_requests_code_idx ON payment_requests (mode, pay_code, updated_at);
-- Open requests come due for expiry, and show in their addressee's pending approvals.
CREATE INDEX payment_requests_due_idx ON payment_requests (expires_at, id) WHERE state = 'open';
CREATE INDEX payment_requests_payer_idx ON payment_requests (mode, payer_msisdn, id) WHERE state = 'open';

-- A charge, a payout or a payment request is paid by one ledger transaction, whatever the code does.
DROP INDEX journals_source_key;
CREATE UNIQUE INDEX journals_source_key ON journals (source_ref) WHERE kind IN ('charge', 'payout', 'payment_request');

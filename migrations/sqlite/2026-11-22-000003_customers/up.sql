-- The customer side (SQLite): wallets' KYC details and lock reason, cash-outs as prompts in the
-- charges table, and USSD sessions. Keep in step with
-- migrations/postgres/2026-11-22-000003_customers/up.sql and crates/malipo-store-diesel/src/schema.rs.
-- SQLite cannot add table constraints to an existing table: column checks and triggers say the same.

ALTER TABLE wallets ADD COLUMN id_type TEXT NULL;
ALTER TABLE wallets ADD COLUMN id_number TEXT NULL CONSTRAINT wallets_id_check CHECK ((id_type IS NULL) = (id_number IS NULL));
ALTER TABLE wallets ADD COLUMN date_of_birth TEXT NULL;
ALTER TABLE wallets ADD COLUMN lock_reason TEXT NULL;
-- Wallets locked before this migration were locked by the sandbox's wrong-PIN outcome.
UPDATE wallets SET lock_reason = 'pin_attempts_exceeded' WHERE state = 'locked';
CREATE TRIGGER wallets_lock_reason_insert BEFORE INSERT ON wallets
    WHEN (NEW.state = 'locked') <> (NEW.lock_reason IS NOT NULL)
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: wallets_lock_reason_check');
END;
CREATE TRIGGER wallets_lock_reason_update BEFORE UPDATE ON wallets
    WHEN (NEW.state = 'locked') <> (NEW.lock_reason IS NOT NULL)
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: wallets_lock_reason_check');
END;
-- One identity document opens one wallet per country and mode.
CREATE UNIQUE INDEX wallets_id_document_key ON wallets (mode, country, id_type, id_number) WHERE id_number IS NOT NULL;

-- A cash-out (`wd_…`) is a prompt like a charge: same states, worker, expiry and PIN lockout.
ALTER TABLE charges ADD COLUMN kind TEXT NOT NULL DEFAULT 'charge'
    CONSTRAINT charges_kind_check CHECK (kind IN ('charge', 'cash_out'));
ALTER TABLE charges ADD COLUMN commission BIGINT NOT NULL DEFAULT 0
    CONSTRAINT charges_commission_check CHECK (commission >= 0 AND commission <= fee);

-- A USSD gateway's sessions, keyed by its sessionId; they expire 180 s after their last hop.
CREATE TABLE ussd_sessions (
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    mode        TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    msisdn      TEXT NOT NULL,
    state       TEXT NOT NULL,
    hops        INTEGER NOT NULL CONSTRAINT ussd_sessions_hops_check CHECK (hops >= 0),
    last_screen TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, mode, session_id)
);
CREATE INDEX ussd_sessions_updated_at_idx ON ussd_sessions (updated_at);

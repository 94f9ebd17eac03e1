-- Malipo's core schema (PostgreSQL). Ids are prefixed TEXT, timestamps BIGINT microseconds since
-- the Unix epoch, money BIGINT minor units. The constraints restate the domain's rules so that
-- the database refuses a wrong state even when written by hand. Keep in step with
-- migrations/sqlite/2026-11-22-000001_core/up.sql and crates/malipo-store-diesel/src/schema.rs.

CREATE TABLE organisations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL CONSTRAINT organisations_kind_check
                   CHECK (kind IN ('merchant', 'agent', 'operator', 'gateway')),
    country    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX organisations_name_idx ON organisations (name);

CREATE TABLE credentials (
    client_id   TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    mode        TEXT NOT NULL CONSTRAINT credentials_mode_check CHECK (mode IN ('test', 'live')),
    secret_hash TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT NULL
);

CREATE TABLE access_tokens (
    digest     TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL REFERENCES credentials (client_id),
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT NULL
);
CREATE INDEX access_tokens_client_id_idx ON access_tokens (client_id);

CREATE TABLE accounts (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NULL REFERENCES organisations (id),
    mode           TEXT NOT NULL,
    kind           TEXT NOT NULL CONSTRAINT accounts_kind_check
                       CHECK (kind IN ('collection', 'payout', 'wallet', 'agent_float', 'revenue', 'issuance', 'sandbox_funding')),
    currency       TEXT NOT NULL,
    balance        BIGINT NOT NULL DEFAULT 0,
    held           BIGINT NOT NULL DEFAULT 0,
    allow_negative BOOLEAN NOT NULL,
    owner_msisdn   TEXT NULL,
    created_at     BIGINT NOT NULL,
    CONSTRAINT accounts_held_check CHECK (held >= 0),
    CONSTRAINT accounts_balance_check CHECK (allow_negative OR balance >= held),
    CONSTRAINT accounts_allow_negative_check CHECK (allow_negative = (kind IN ('issuance', 'sandbox_funding')))
);
CREATE UNIQUE INDEX accounts_org_kind_key ON accounts (org_id, mode, kind) WHERE org_id IS NOT NULL;
CREATE UNIQUE INDEX accounts_system_kind_key ON accounts (mode, currency, kind)
    WHERE kind IN ('revenue', 'issuance', 'sandbox_funding');
CREATE UNIQUE INDEX accounts_wallet_owner_key ON accounts (mode, owner_msisdn) WHERE kind = 'wallet';

-- The head of each ledger's audit chain (one ledger per mode and currency).
CREATE TABLE ledger_heads (
    mode     TEXT NOT NULL,
    currency TEXT NOT NULL,
    seq      BIGINT NOT NULL,
    hash     TEXT NOT NULL,
    PRIMARY KEY (mode, currency)
);

CREATE TABLE journals (
    id         TEXT PRIMARY KEY,
    mode       TEXT NOT NULL,
    currency   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    source_ref TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    seq        BIGINT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL,
    CONSTRAINT journals_chain_key UNIQUE (mode, currency, seq)
);

CREATE TABLE postings (
    id            BIGSERIAL PRIMARY KEY,
    journal_id    TEXT NOT NULL REFERENCES journals (id) DEFERRABLE INITIALLY DEFERRED,
    line_no       INTEGER NOT NULL,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    amount        BIGINT NOT NULL CONSTRAINT postings_amount_check CHECK (amount <> 0),
    balance_after BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    CONSTRAINT postings_line_key UNIQUE (journal_id, line_no)
);
CREATE INDEX postings_account_idx ON postings (account_id, id);

-- Journals and postings are append-only.
CREATE FUNCTION malipo_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% are append-only', TG_TABLE_NAME;
END;
$$;
CREATE TRIGGER journals_append_only BEFORE UPDATE OR DELETE ON journals
    FOR EACH ROW EXECUTE FUNCTION malipo_refuse_change();
CREATE TRIGGER journals_no_truncate BEFORE TRUNCATE ON journals
    FOR EACH STATEMENT EXECUTE FUNCTION malipo_refuse_change();
CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON postings
    FOR EACH ROW EXECUTE FUNCTION malipo_refuse_change();
CREATE TRIGGER postings_no_truncate BEFORE TRUNCATE ON postings
    FOR EACH STATEMENT EXECUTE FUNCTION malipo_refuse_change();

CREATE TABLE wallets (
    mode         TEXT NOT NULL,
    msisdn       TEXT NOT NULL,
    account_id   TEXT NOT NULL UNIQUE REFERENCES accounts (id),
    country      TEXT NOT NULL,
    currency     TEXT NOT NULL,
    state        TEXT NOT NULL CONSTRAINT wallets_state_check CHECK (state IN ('active', 'locked')),
    kyc_tier     INTEGER NOT NULL CONSTRAINT wallets_kyc_tier_check CHECK (kyc_tier >= 0),
    pin_hash     TEXT NULL,
    pin_attempts INTEGER NOT NULL DEFAULT 0 CONSTRAINT wallets_pin_attempts_check CHECK (pin_attempts >= 0),
    first_name   TEXT NULL,
    last_name    TEXT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (mode, msisdn)
);

CREATE TABLE charges (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organisations (id),
    mode             TEXT NOT NULL,
    payer_msisdn     TEXT NOT NULL,
    amount           BIGINT NOT NULL CONSTRAINT charges_amount_check CHECK (amount > 0),
    fee              BIGINT NOT NULL CONSTRAINT charges_fee_check CHECK (fee >= 0 AND fee <= amount),
    currency         TEXT NOT NULL,
    amount_reversed  BIGINT NOT NULL DEFAULT 0
                         CONSTRAINT charges_amount_reversed_check CHECK (amount_reversed >= 0 AND amount_reversed <= amount),
    reference        TEXT NOT NULL,
    description      TEXT NULL,
    state            TEXT NOT NULL CONSTRAINT charges_state_check
                         CHECK (state IN ('pending', 'authorised', 'completed', 'declined', 'expired', 'failed')),
    failure_reason   TEXT NULL,
    transaction_id   TEXT NULL,
    merchant_account TEXT NOT NULL REFERENCES accounts (id),
    payer_account    TEXT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    completed_at     BIGINT NULL,
    next_action_at   BIGINT NULL,
    CONSTRAINT charges_next_action_check CHECK ((state IN ('pending', 'authorised')) = (next_action_at IS NOT NULL)),
    CONSTRAINT charges_transaction_check CHECK ((state = 'completed') = (transaction_id IS NOT NULL)),
    CONSTRAINT charges_failure_reason_check CHECK ((state IN ('declined', 'expired', 'failed')) = (failure_reason IS NOT NULL))
);
CREATE INDEX charges_org_idx ON charges (org_id, mode, id);
CREATE INDEX charges_reference_idx ON charges (org_id, mode, reference, id);
CREATE INDEX charges_due_idx ON charges (next_action_at) WHERE next_action_at IS NOT NULL;
CREATE INDEX charges_pending_payer_idx ON charges (mode, payer_msisdn) WHERE state = 'pending';
CREATE INDEX charges_authorised_merchant_idx ON charges (merchant_account) WHERE state = 'authorised';

CREATE TABLE idempotency_keys (
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    operation     TEXT NOT NULL,
    key           TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    status        INTEGER NULL,
    response_body BYTEA NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (org_id, mode, operation, key),
    CONSTRAINT idempotency_keys_response_check CHECK ((status IS NULL) = (response_body IS NULL))
);
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

-- Scratch schema for the pgbench baseline of `bench/run.sh` (loaded into a throw-away database).
--
-- KEEP IN STEP WITH migrations/postgres/*/up.sql: the tables below are copied from
-- migrations/postgres/2026-11-22-000001_core/up.sql and the `charges` columns added by
-- migrations/postgres/2026-11-22-000003_customers/up.sql (columns, constraints, foreign keys and every
-- index of the tables one `POST /partner/stk` touches, since each costs on insert), so that the
-- "our rate / pgbench" ratio in docs/performance.md compares like with like. Change both together.

DROP TABLE IF EXISTS idempotency_keys, charges, accounts, access_tokens, credentials, organisations;

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
    kind             TEXT NOT NULL DEFAULT 'charge' CONSTRAINT charges_kind_check CHECK (kind IN ('charge', 'cash_out')),
    commission       BIGINT NOT NULL DEFAULT 0 CONSTRAINT charges_commission_check CHECK (commission >= 0 AND commission <= fee),
    CONSTRAINT charges_id_prefix_check CHECK ((kind = 'charge') = (id LIKE 'ch\_%')),
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

-- Seed, so the planner sees realistic non-empty tables: 20 merchants with their accounts,
-- 50,000 payer wallets (every sandbox payer gets one), 1,000 bearer tokens (digest = hex SHA-256 of 'tok-N', N in 1..1000; token N belongs to
-- merchant N % 20), 50,000 completed charges with their idempotency keys. Timestamps in µs.
INSERT INTO organisations
SELECT 'org_' || i, 'seed-' || i, 'merchant', 'KE', 1700000000000000 FROM generate_series(0, 19) AS i;
INSERT INTO credentials
SELECT 'ck_test_' || i, 'org_' || i, 'test', 'argon2-hash', 'payments payouts reversals bulk:create',
       1700000000000000, NULL
FROM generate_series(0, 19) AS i;
INSERT INTO accounts (id, org_id, mode, kind, currency, allow_negative, created_at)
SELECT 'acc_' || k || '_' || i, 'org_' || i, 'test', k, 'KES', false, 1700000000000000
FROM generate_series(0, 19) AS i, unnest(ARRAY['collection', 'payout']) AS k;
INSERT INTO accounts (id, org_id, mode, kind, currency, balance, allow_negative, owner_msisdn, created_at)
SELECT 'acc_wallet_' || i, NULL, 'test', 'wallet', 'KES', 100000000, false, (254700000000 + i)::text,
       1700000000000000
FROM generate_series(1, 50000) AS i;
INSERT INTO access_tokens
SELECT encode(sha256(('tok-' || i)::bytea), 'hex'), 'ck_test_' || (i % 20), 'org_' || (i % 20), 'test',
       'payments payouts reversals bulk:create', 1700000000000000, 9000000000000000, NULL
FROM generate_series(1, 1000) AS i;
INSERT INTO charges
SELECT 'ch_' || lpad(to_hex(1700000000000 + i), 12, '0') || lpad(to_hex(i), 20, '0'),
       'org_' || (i % 20), 'test', (254700000000 + i)::text, 10000, 0, 'KES', 0, 'seed-' || i, NULL,
       'completed', NULL, 'tx_seed_' || i, 'acc_collection_' || (i % 20), 'acc_wallet_' || i,
       1700000000000000 + i, 1700000000000000 + i, 1700000090000000 + i, 1700000000000000 + i, NULL
FROM generate_series(1, 50000) AS i;
INSERT INTO idempotency_keys
SELECT 'org_' || (i % 20), 'test', 'POST /partner/stk', 'seed-' || i, repeat('0', 64), 200,
       convert_to('{"charge_ref": "seed"}', 'UTF8'), 1700000000000000 + i
FROM generate_series(1, 50000) AS i;

ANALYZE;

-- Money out (PostgreSQL): corporate organisations, bulk payout batches with maker/checker,
-- payouts (single ones and the items of batches), reversals, and a charge or payout paid at most
-- once. Same conventions as the core schema. Keep in step with
-- migrations/sqlite/2026-11-24-000004_payouts/up.sql and crates/malipo-store-diesel/src/schema.rs.

ALTER TABLE organisations DROP CONSTRAINT organisations_kind_check;
ALTER TABLE organisations ADD CONSTRAINT organisations_kind_check
    CHECK (kind IN ('merchant', 'corporate', 'agent', 'operator', 'gateway'));

-- A batch of payouts: created by a maker, approved or rejected by a checker (another credential).
CREATE TABLE bulk_payouts (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organisations (id),
    mode             TEXT NOT NULL CONSTRAINT bulk_payouts_mode_check CHECK (mode IN ('test', 'live')),
    reference        TEXT NOT NULL,
    currency         TEXT NOT NULL,
    item_count       INTEGER NOT NULL CONSTRAINT bulk_payouts_item_count_check CHECK (item_count BETWEEN 1 AND 10000),
    total_amount     BIGINT NOT NULL CONSTRAINT bulk_payouts_total_amount_check CHECK (total_amount > 0),
    total_fees       BIGINT NOT NULL CONSTRAINT bulk_payouts_total_fees_check CHECK (total_fees >= 0),
    payout_account   TEXT NOT NULL REFERENCES accounts (id),
    -- Client ids of the maker and the checker.
    created_by       TEXT NOT NULL,
    approved_by      TEXT NULL,
    rejected_by      TEXT NULL,
    rejection_reason TEXT NULL,
    state            TEXT NOT NULL CONSTRAINT bulk_payouts_state_check
                         CHECK (state IN ('awaiting_approval', 'processing', 'completed', 'rejected')),
    pending_count    INTEGER NOT NULL CONSTRAINT bulk_payouts_pending_count_check CHECK (pending_count >= 0),
    completed_count  INTEGER NOT NULL CONSTRAINT bulk_payouts_completed_count_check CHECK (completed_count >= 0),
    failed_count     INTEGER NOT NULL CONSTRAINT bulk_payouts_failed_count_check CHECK (failed_count >= 0),
    created_at       BIGINT NOT NULL,
    approved_at      BIGINT NULL,
    completed_at     BIGINT NULL,
    updated_at       BIGINT NOT NULL,
    CONSTRAINT bulk_payouts_id_prefix_check CHECK (id LIKE 'bp\_%'),
    CONSTRAINT bulk_payouts_counts_check CHECK (pending_count + completed_count + failed_count = item_count),
    -- The checker is never the maker.
    CONSTRAINT bulk_payouts_maker_checker_check CHECK (approved_by <> created_by AND rejected_by <> created_by),
    -- Approved exactly when processing or completed; rejected (with a reason) exactly when rejected.
    CONSTRAINT bulk_payouts_approval_check CHECK (
        (approved_by IS NOT NULL) = (state IN ('processing', 'completed'))
        AND (approved_at IS NOT NULL) = (state IN ('processing', 'completed'))),
    CONSTRAINT bulk_payouts_rejection_check CHECK (
        (rejected_by IS NOT NULL) = (state = 'rejected') AND (rejection_reason IS NOT NULL) = (state = 'rejected')),
    CONSTRAINT bulk_payouts_completed_at_check CHECK ((completed_at IS NOT NULL) = (state IN ('completed', 'rejected'))),
    -- Waiting: every item pending. Processing: some still pending. Completed: none pending.
    -- Rejected: every item failed.
    CONSTRAINT bulk_payouts_counts_state_check CHECK (CASE state
        WHEN 'awaiting_approval' THEN pending_count = item_count
        WHEN 'processing' THEN pending_count > 0
        WHEN 'completed' THEN pending_count = 0
        WHEN 'rejected' THEN failed_count = item_count
    END)
);
CREATE INDEX bulk_payouts_org_idx ON bulk_payouts (org_id, mode, id);

-- Payouts: single ones, and the items of batches (with their batch and place in it).
CREATE TABLE payouts (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES organisations (id),
    mode            TEXT NOT NULL CONSTRAINT payouts_mode_check CHECK (mode IN ('test', 'live')),
    payee_msisdn    TEXT NOT NULL,
    amount          BIGINT NOT NULL CONSTRAINT payouts_amount_check CHECK (amount > 0),
    fee             BIGINT NOT NULL CONSTRAINT payouts_fee_check CHECK (fee >= 0),
    currency        TEXT NOT NULL,
    amount_reversed BIGINT NOT NULL DEFAULT 0
                        CONSTRAINT payouts_amount_reversed_check CHECK (amount_reversed >= 0 AND amount_reversed <= amount),
    reference       TEXT NOT NULL,
    narration       TEXT NULL,
    state           TEXT NOT NULL CONSTRAINT payouts_state_check CHECK (state IN ('pending', 'completed', 'failed')),
    failure_reason  TEXT NULL,
    transaction_id  TEXT NULL CONSTRAINT payouts_transaction_id_key UNIQUE,
    bulk_payout_id  TEXT NULL REFERENCES bulk_payouts (id),
    bulk_index      INTEGER NULL CONSTRAINT payouts_bulk_index_check CHECK (bulk_index >= 0),
    payout_account  TEXT NOT NULL REFERENCES accounts (id),
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    completed_at    BIGINT NULL,
    next_action_at  BIGINT NULL,
    CONSTRAINT payouts_id_prefix_check CHECK (id LIKE 'po\_%'),
    CONSTRAINT payouts_transaction_check CHECK ((state = 'completed') = (transaction_id IS NOT NULL)),
    CONSTRAINT payouts_completed_at_check CHECK ((state = 'completed') = (completed_at IS NOT NULL)),
    CONSTRAINT payouts_failure_reason_check CHECK ((state = 'failed') = (failure_reason IS NOT NULL)),
    -- Work is due only while pending (and not yet for an item of a batch awaiting approval).
    CONSTRAINT payouts_next_action_check CHECK (state = 'pending' OR next_action_at IS NULL),
    -- Only a completed payout is reversed.
    CONSTRAINT payouts_reversal_check CHECK (amount_reversed = 0 OR state = 'completed'),
    CONSTRAINT payouts_bulk_check CHECK ((bulk_payout_id IS NULL) = (bulk_index IS NULL)),
    CONSTRAINT payouts_bulk_item_key UNIQUE (bulk_payout_id, bulk_index)
);
CREATE INDEX payouts_org_idx ON payouts (org_id, mode, id);
-- With the id: a batch's items all come due at the same moment, and are claimed in id order.
CREATE INDEX payouts_due_idx ON payouts (next_action_at, id) WHERE next_action_at IS NOT NULL;

-- Reversals of all or part of a completed charge or payout.
CREATE TABLE reversals (
    id                      TEXT PRIMARY KEY,
    org_id                  TEXT NOT NULL REFERENCES organisations (id),
    mode                    TEXT NOT NULL CONSTRAINT reversals_mode_check CHECK (mode IN ('test', 'live')),
    charge_ref              TEXT NULL REFERENCES charges (id),
    payout_ref              TEXT NULL REFERENCES payouts (id),
    original_transaction_id TEXT NOT NULL,
    amount                  BIGINT NOT NULL CONSTRAINT reversals_amount_check CHECK (amount > 0),
    fee_reversed            BIGINT NOT NULL CONSTRAINT reversals_fee_reversed_check CHECK (fee_reversed >= 0),
    currency                TEXT NOT NULL,
    reason                  TEXT NOT NULL,
    transaction_id          TEXT NOT NULL CONSTRAINT reversals_transaction_id_key UNIQUE,
    created_at              BIGINT NOT NULL,
    CONSTRAINT reversals_original_check CHECK ((charge_ref IS NULL) <> (payout_ref IS NULL))
);
CREATE INDEX reversals_org_idx ON reversals (org_id, mode, id);

-- A charge or a payout is paid by one ledger transaction, whatever the code does.
CREATE UNIQUE INDEX journals_source_key ON journals (source_ref) WHERE kind IN ('charge', 'payout');

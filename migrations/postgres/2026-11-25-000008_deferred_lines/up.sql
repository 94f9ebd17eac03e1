-- Hot accounts. The accounts that many journals post to at once (a merchant's collection
-- account, every charge of it; the platform's revenue, issuance and sandbox funding accounts)
-- take the lines that need no funds check (credits, and any line on an account that may go
-- negative) without their row being updated: such a line waits here, committed with its journal,
-- and is applied later in order (a posting with its running balance_after, the account's balance
-- moved), in batches, under the account's lock. So no row is updated by every charge, and a
-- debit that must check funds applies the account's waiting lines first, under the same lock.
-- An account's balance is its row's balance plus its waiting lines. Keep in step with
-- migrations/sqlite/2026-11-25-000008_deferred_lines/up.sql and
-- crates/malipo-store-diesel/src/schema.rs.

CREATE TABLE deferred_lines (
    id         BIGSERIAL PRIMARY KEY,
    journal_id TEXT NOT NULL REFERENCES journals (id) DEFERRABLE INITIALLY DEFERRED,
    line_no    INTEGER NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    amount     BIGINT NOT NULL CONSTRAINT deferred_lines_amount_check CHECK (amount <> 0),
    fee        BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    CONSTRAINT deferred_lines_line_key UNIQUE (journal_id, line_no)
);
-- The applier reads an account's waiting lines in order.
CREATE INDEX deferred_lines_account_idx ON deferred_lines (account_id, id);

-- A waiting line is never changed, and leaves only as the posting it becomes: deleting one whose
-- posting (same journal, line, account, amount and fee) does not exist would lose money.
CREATE FUNCTION malipo_deferred_line_applied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM postings p
               WHERE p.journal_id = OLD.journal_id AND p.line_no = OLD.line_no
                 AND p.account_id = OLD.account_id AND p.amount = OLD.amount AND p.fee = OLD.fee) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'a deferred line leaves only as its posting (journal %, line %)', OLD.journal_id, OLD.line_no;
END;
$$;
CREATE TRIGGER deferred_lines_applied BEFORE DELETE ON deferred_lines
    FOR EACH ROW EXECUTE FUNCTION malipo_deferred_line_applied();
CREATE TRIGGER deferred_lines_no_update BEFORE UPDATE ON deferred_lines
    FOR EACH ROW EXECUTE FUNCTION malipo_refuse_change();
CREATE TRIGGER deferred_lines_no_truncate BEFORE TRUNCATE ON deferred_lines
    FOR EACH STATEMENT EXECUTE FUNCTION malipo_refuse_change();

-- Hot accounts (SQLite): lines that need no funds check on the accounts many journals post to
-- wait here and are applied later in order. See
-- migrations/postgres/2026-11-25-000008_deferred_lines/up.sql, kept in step with this file and
-- crates/malipo-store-diesel/src/schema.rs.

CREATE TABLE deferred_lines (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    journal_id TEXT NOT NULL REFERENCES journals (id) DEFERRABLE INITIALLY DEFERRED,
    line_no    INTEGER NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    amount     BIGINT NOT NULL CONSTRAINT deferred_lines_amount_check CHECK (amount <> 0),
    fee        BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    CONSTRAINT deferred_lines_line_key UNIQUE (journal_id, line_no)
);
CREATE INDEX deferred_lines_account_idx ON deferred_lines (account_id, id);

-- A waiting line is never changed, and leaves only as the posting it becomes.
CREATE TRIGGER deferred_lines_applied BEFORE DELETE ON deferred_lines
WHEN NOT EXISTS (SELECT 1 FROM postings p
                 WHERE p.journal_id = OLD.journal_id AND p.line_no = OLD.line_no
                   AND p.account_id = OLD.account_id AND p.amount = OLD.amount AND p.fee = OLD.fee)
BEGIN
    SELECT RAISE(ABORT, 'a deferred line leaves only as its posting');
END;
CREATE TRIGGER deferred_lines_no_update BEFORE UPDATE ON deferred_lines
BEGIN
    SELECT RAISE(ABORT, 'deferred lines are never changed');
END;

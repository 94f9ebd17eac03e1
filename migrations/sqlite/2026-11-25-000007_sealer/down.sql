-- Undoes up.sql; rebuilds `journals` the same way (see up.sql and metadata.toml). Fails while a
-- journal awaits its seal (its seq cannot be NOT NULL): seal them first (`malipo ledger verify`
-- does) with no server posting.

PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE journals_new (
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
INSERT INTO journals_new (id, mode, currency, kind, source_ref, created_at, seq, prev_hash, hash)
    SELECT id, mode, currency, kind, source_ref, created_at, seq, prev_hash, hash FROM journals;
DROP TABLE journals;
ALTER TABLE journals_new RENAME TO journals;
CREATE UNIQUE INDEX journals_source_key ON journals (source_ref) WHERE kind IN ('charge', 'payout', 'payment_request');
CREATE TRIGGER journals_no_update BEFORE UPDATE ON journals
BEGIN
    SELECT RAISE(ABORT, 'journals are append-only');
END;
CREATE TRIGGER journals_no_delete BEFORE DELETE ON journals
BEGIN
    SELECT RAISE(ABORT, 'journals are append-only');
END;

CREATE TEMP TABLE malipo_foreign_key_check (violations INTEGER NOT NULL CONSTRAINT foreign_keys_hold CHECK (violations = 0));
INSERT INTO malipo_foreign_key_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE malipo_foreign_key_check;

COMMIT;
PRAGMA foreign_keys = ON;

-- The audit chain off the posting path (SQLite). A journal is committed unsealed (no seq,
-- prev_hash, hash); a sealer gives committed journals their chain entries shortly after, in
-- batches. Keep in step with migrations/postgres/2026-11-25-000007_sealer/up.sql and
-- crates/malipo-store-diesel/src/schema.rs.
--
-- SQLite cannot drop a NOT NULL, so `journals` is rebuilt the way SQLite recommends
-- (https://www.sqlite.org/lang_altertable.html#otheralter), as 2026-11-24-000004_payouts rebuilt
-- `organisations`: foreign keys off (postings reference journals; see metadata.toml), one
-- transaction, every row copied into a new table that takes the old one's name, its index and
-- triggers made again, and the foreign keys checked before committing.

PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE journals_new (
    id         TEXT PRIMARY KEY,
    mode       TEXT NOT NULL,
    currency   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    source_ref TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    seq        BIGINT NULL,
    prev_hash  TEXT NULL,
    hash       TEXT NULL,
    CONSTRAINT journals_chain_key UNIQUE (mode, currency, seq),
    -- A journal is sealed (all three set) or not (none).
    CONSTRAINT journals_seal_check CHECK ((seq IS NULL) = (prev_hash IS NULL) AND (seq IS NULL) = (hash IS NULL))
);
INSERT INTO journals_new (id, mode, currency, kind, source_ref, created_at, seq, prev_hash, hash)
    SELECT id, mode, currency, kind, source_ref, created_at, seq, prev_hash, hash FROM journals;
DROP TABLE journals;
ALTER TABLE journals_new RENAME TO journals;
CREATE UNIQUE INDEX journals_source_key ON journals (source_ref) WHERE kind IN ('charge', 'payout', 'payment_request');
-- What the sealer reads, in the order it seals; empty but for the last moments' journals.
CREATE INDEX journals_unsealed_idx ON journals (mode, currency, created_at, id) WHERE seq IS NULL;

-- Journals stay append-only, but for their seal: an unsealed journal may be given its seq,
-- prev_hash and hash, once; nothing else of a journal ever changes, and none is deleted.
CREATE TRIGGER journals_no_update BEFORE UPDATE ON journals
WHEN OLD.seq IS NOT NULL OR NEW.seq IS NULL
    OR NEW.id IS NOT OLD.id OR NEW.mode IS NOT OLD.mode OR NEW.currency IS NOT OLD.currency
    OR NEW.kind IS NOT OLD.kind OR NEW.source_ref IS NOT OLD.source_ref OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'journals are append-only (an unsealed journal is sealed once, and nothing else changes)');
END;
CREATE TRIGGER journals_no_delete BEFORE DELETE ON journals
BEGIN
    SELECT RAISE(ABORT, 'journals are append-only');
END;

-- The rebuilt table breaks no foreign key. The pragma only lists violations, so a count above
-- zero is made to fail a CHECK (and the migration with it).
CREATE TEMP TABLE malipo_foreign_key_check (violations INTEGER NOT NULL CONSTRAINT foreign_keys_hold CHECK (violations = 0));
INSERT INTO malipo_foreign_key_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE malipo_foreign_key_check;

COMMIT;
PRAGMA foreign_keys = ON;

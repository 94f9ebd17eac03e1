-- The audit chain off the posting path. A journal is committed unsealed (no seq, prev_hash,
-- hash), without locking its ledger's head; a sealer gives committed journals their chain
-- entries shortly after, in batches, holding the head (`ledger_heads ... FOR UPDATE`) while it
-- does. Keep in step with migrations/sqlite/2026-11-25-000007_sealer/up.sql and
-- crates/malipo-store-diesel/src/schema.rs.

ALTER TABLE journals
    ALTER COLUMN seq DROP NOT NULL,
    ALTER COLUMN prev_hash DROP NOT NULL,
    ALTER COLUMN hash DROP NOT NULL;
-- A journal is sealed (all three set) or not (none); `journals_chain_key` still keeps one
-- journal per (mode, currency, seq).
ALTER TABLE journals ADD CONSTRAINT journals_seal_check
    CHECK ((seq IS NULL) = (prev_hash IS NULL) AND (seq IS NULL) = (hash IS NULL));
-- What the sealer reads, in the order it seals; empty but for the last moments' journals.
CREATE INDEX journals_unsealed_idx ON journals (mode, currency, created_at, id) WHERE seq IS NULL;

-- Journals stay append-only, but for their seal: an unsealed journal may be given its seq,
-- prev_hash and hash, once; nothing else of a journal ever changes, and none is deleted.
CREATE FUNCTION malipo_seal_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.seq IS NULL AND NEW.seq IS NOT NULL
        AND (NEW.id, NEW.mode, NEW.currency, NEW.kind, NEW.source_ref, NEW.created_at)
            IS NOT DISTINCT FROM (OLD.id, OLD.mode, OLD.currency, OLD.kind, OLD.source_ref, OLD.created_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'journals are append-only (an unsealed journal is sealed once, and nothing else changes)';
END;
$$;
DROP TRIGGER journals_append_only ON journals;
CREATE TRIGGER journals_append_only BEFORE DELETE ON journals
    FOR EACH ROW EXECUTE FUNCTION malipo_refuse_change();
CREATE TRIGGER journals_seal_once BEFORE UPDATE ON journals
    FOR EACH ROW EXECUTE FUNCTION malipo_seal_once();

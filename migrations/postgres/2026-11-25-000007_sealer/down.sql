-- Undoes up.sql. Fails while a journal awaits its seal (its seq cannot be NOT NULL): seal them
-- first (`malipo ledger verify` does) with no server posting.
DROP TRIGGER journals_seal_once ON journals;
DROP TRIGGER journals_append_only ON journals;
CREATE TRIGGER journals_append_only BEFORE UPDATE OR DELETE ON journals
    FOR EACH ROW EXECUTE FUNCTION malipo_refuse_change();
DROP FUNCTION malipo_seal_once();
DROP INDEX journals_unsealed_idx;
ALTER TABLE journals DROP CONSTRAINT journals_seal_check;
ALTER TABLE journals
    ALTER COLUMN seq SET NOT NULL,
    ALTER COLUMN prev_hash SET NOT NULL,
    ALTER COLUMN hash SET NOT NULL;

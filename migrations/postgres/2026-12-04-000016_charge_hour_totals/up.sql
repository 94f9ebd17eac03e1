-- Home's figures (PostgreSQL): each hour's charges (how many were created and their amount, how
-- many of them are completed and their amount), kept by the database in the transaction that
-- writes the charges, so the totals are never off by one and Home reads a few rows an hour
-- however many charges an organisation has. A local day of a country whose offset is whole
-- hours is 24 of these hours; the store sums the charges themselves for any other offset.
--
-- `slot` is the writing backend's process id: no two live backends share one, so the counters
-- never make two transactions wait on each other (one row per hour would serialise every charge
-- of an organisation), and an hour reads the sum of its slots. A slot's completed count may be
-- negative (a charge completed by one backend and moved on by another); the sum never is.
--
-- Only charges (kind 'charge') are counted; cash-outs are not Home's. A charge's organisation,
-- mode, creation time and amount never change; whether it is completed does (once, in practice),
-- and only that change moves a count: one row, in the statement's own transaction.
-- Keep in step with migrations/sqlite/2026-12-04-000016_charge_hour_totals/up.sql.
CREATE TABLE charge_hour_totals (
    org_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    hour BIGINT NOT NULL,
    slot INTEGER NOT NULL,
    created BIGINT NOT NULL,
    created_amount BIGINT NOT NULL,
    completed BIGINT NOT NULL,
    completed_amount BIGINT NOT NULL,
    PRIMARY KEY (org_id, mode, hour, slot),
    CHECK (hour % 3600000000 = 0)
);

-- Writers are held off from here until this transaction commits (readers are not), so that no
-- charge is written between the count of those already there and the triggers that count the
-- rest: a charge committed after the count's snapshot and before the triggers would be missed.
LOCK TABLE charges IN SHARE ROW EXCLUSIVE MODE;

-- The charges written before this migration.
INSERT INTO charge_hour_totals (org_id, mode, hour, slot, created, created_amount, completed, completed_amount)
SELECT org_id, mode, created_at - ((created_at % 3600000000) + 3600000000) % 3600000000, 0,
       COUNT(*), SUM(amount), COUNT(*) FILTER (WHERE state = 'completed'), COALESCE(SUM(amount) FILTER (WHERE state = 'completed'), 0)
  FROM charges
 WHERE kind = 'charge'
 GROUP BY 1, 2, 3;

-- Inserts: one upsert per statement (a group of creations is one statement), from the rows it
-- inserted, in key order.
CREATE FUNCTION charge_hour_totals_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    me INTEGER := pg_backend_pid();
BEGIN
    INSERT INTO charge_hour_totals AS t (org_id, mode, hour, slot, created, created_amount, completed, completed_amount)
    SELECT i.org_id, i.mode, i.created_at - ((i.created_at % 3600000000) + 3600000000) % 3600000000, me,
           COUNT(*), SUM(i.amount), COUNT(*) FILTER (WHERE i.state = 'completed'),
           COALESCE(SUM(i.amount) FILTER (WHERE i.state = 'completed'), 0)
      FROM inserted_charges i
     WHERE i.kind = 'charge'
     GROUP BY 1, 2, 3
     ORDER BY 1, 2, 3
    ON CONFLICT (org_id, mode, hour, slot) DO UPDATE
       SET created = t.created + EXCLUDED.created, created_amount = t.created_amount + EXCLUDED.created_amount,
           completed = t.completed + EXCLUDED.completed, completed_amount = t.completed_amount + EXCLUDED.completed_amount;
    RETURN NULL;
END
$$;

CREATE TRIGGER charges_hour_totals_insert AFTER INSERT ON charges
    REFERENCING NEW TABLE AS inserted_charges
    FOR EACH STATEMENT EXECUTE FUNCTION charge_hour_totals_inserted();

-- A charge completed (or, were it ever, no longer completed): per row, and only for such rows
-- (the condition is checked without calling the function), so the other updates (a claim's
-- lease, a move between open states, a failure) cost nothing here.
CREATE FUNCTION charge_hour_totals_completed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    one INTEGER := CASE WHEN NEW.state = 'completed' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO charge_hour_totals AS t (org_id, mode, hour, slot, created, created_amount, completed, completed_amount)
    VALUES (NEW.org_id, NEW.mode, NEW.created_at - ((NEW.created_at % 3600000000) + 3600000000) % 3600000000, pg_backend_pid(),
            0, 0, one, one * NEW.amount)
    ON CONFLICT (org_id, mode, hour, slot) DO UPDATE
       SET completed = t.completed + EXCLUDED.completed, completed_amount = t.completed_amount + EXCLUDED.completed_amount;
    RETURN NULL;
END
$$;

CREATE TRIGGER charges_hour_totals_update AFTER UPDATE OF state ON charges
    FOR EACH ROW
    WHEN ((OLD.state = 'completed') IS DISTINCT FROM (NEW.state = 'completed') AND NEW.kind = 'charge')
    EXECUTE FUNCTION charge_hour_totals_completed();

-- With Home on these totals and date windows on id ranges (`charges_org_idx`), nothing reads
-- the creation-time index any more, and every charge written paid for an entry in it.
DROP INDEX IF EXISTS charges_created_idx;

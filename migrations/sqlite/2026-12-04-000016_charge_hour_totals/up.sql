-- Home's figures (SQLite): each hour's charges (how many were created and their amount, how many
-- of them are completed and their amount), kept by the database in the transaction that writes
-- the charges, so the totals are never off by one and Home reads a few rows an hour however
-- many charges an organisation has. A local day of a country whose offset is whole hours is 24
-- of these hours; the store sums the charges themselves for any other offset.
--
-- `slot` is always 0 here (SQLite has one writer at a time; PostgreSQL keeps a slot per backend).
-- Only charges (kind 'charge') are counted; cash-outs are not Home's. A charge's organisation,
-- mode, creation time and amount never change; whether it is completed does (once, in
-- practice), and only that change moves a count. Keep in step with
-- migrations/postgres/2026-12-04-000016_charge_hour_totals/up.sql.
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
) WITHOUT ROWID;

-- The charges written before this migration (the migration's transaction has held SQLite's one
-- write lock since the CREATE TABLE above, so no charge is written until the triggers count it).
INSERT INTO charge_hour_totals (org_id, mode, hour, slot, created, created_amount, completed, completed_amount)
SELECT org_id, mode, created_at - ((created_at % 3600000000) + 3600000000) % 3600000000, 0,
       COUNT(*), SUM(amount), SUM(state = 'completed'), SUM(CASE WHEN state = 'completed' THEN amount ELSE 0 END)
  FROM charges
 WHERE kind = 'charge'
 GROUP BY 1, 2, 3;

CREATE TRIGGER charges_hour_totals_insert AFTER INSERT ON charges
WHEN NEW.kind = 'charge'
BEGIN
    INSERT INTO charge_hour_totals (org_id, mode, hour, slot, created, created_amount, completed, completed_amount)
    VALUES (NEW.org_id, NEW.mode, NEW.created_at - ((NEW.created_at % 3600000000) + 3600000000) % 3600000000, 0,
            1, NEW.amount, NEW.state = 'completed', CASE WHEN NEW.state = 'completed' THEN NEW.amount ELSE 0 END)
    ON CONFLICT (org_id, mode, hour, slot) DO UPDATE
       SET created = created + excluded.created, created_amount = created_amount + excluded.created_amount,
           completed = completed + excluded.completed, completed_amount = completed_amount + excluded.completed_amount;
END;

CREATE TRIGGER charges_hour_totals_update AFTER UPDATE OF state ON charges
WHEN (OLD.state = 'completed') IS NOT (NEW.state = 'completed') AND NEW.kind = 'charge'
BEGIN
    INSERT INTO charge_hour_totals (org_id, mode, hour, slot, created, created_amount, completed, completed_amount)
    VALUES (NEW.org_id, NEW.mode, NEW.created_at - ((NEW.created_at % 3600000000) + 3600000000) % 3600000000, 0,
            0, 0, CASE WHEN NEW.state = 'completed' THEN 1 ELSE -1 END,
            CASE WHEN NEW.state = 'completed' THEN NEW.amount ELSE -NEW.amount END)
    ON CONFLICT (org_id, mode, hour, slot) DO UPDATE
       SET completed = completed + excluded.completed, completed_amount = completed_amount + excluded.completed_amount;
END;

-- With Home on these totals and date windows on id ranges (`charges_org_idx`), nothing reads
-- the creation-time index any more, and every charge written paid for an entry in it.
DROP INDEX IF EXISTS charges_created_idx;

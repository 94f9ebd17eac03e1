DROP INDEX journals_source_key;
DROP TABLE reversals;
DROP TABLE payouts;
DROP TABLE bulk_payouts;
ALTER TABLE organisations DROP CONSTRAINT organisations_kind_check;
ALTER TABLE organisations ADD CONSTRAINT organisations_kind_check
    CHECK (kind IN ('merchant', 'agent', 'operator', 'gateway'));

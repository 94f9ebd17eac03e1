-- Undoes up.sql; rebuilds `organisations` the same way (see up.sql and metadata.toml). Fails
-- while a corporate organisation exists.

PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

DROP INDEX journals_source_key;
DROP TABLE reversals;
DROP TABLE payouts;
DROP TABLE bulk_payouts;

CREATE TABLE organisations_new (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL CONSTRAINT organisations_kind_check
                   CHECK (kind IN ('merchant', 'agent', 'operator', 'gateway')),
    country    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
INSERT INTO organisations_new (id, name, kind, country, created_at)
    SELECT id, name, kind, country, created_at FROM organisations;
DROP TABLE organisations;
ALTER TABLE organisations_new RENAME TO organisations;
CREATE INDEX organisations_name_idx ON organisations (name);

CREATE TEMP TABLE malipo_foreign_key_check (violations INTEGER NOT NULL CONSTRAINT foreign_keys_hold CHECK (violations = 0));
INSERT INTO malipo_foreign_key_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE malipo_foreign_key_check;

COMMIT;
PRAGMA foreign_keys = ON;

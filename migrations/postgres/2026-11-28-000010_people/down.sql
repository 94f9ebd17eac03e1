-- Undoes up.sql (the audit log's triggers go with its table).
DROP INDEX credentials_org_idx;
ALTER TABLE credentials DROP COLUMN last_used_at, DROP COLUMN created_by;
DROP TABLE organisation_settings;
DROP TABLE audit_log;
DROP TABLE sign_in_failures;
DROP TABLE console_sessions;
DROP TABLE recovery_codes;
DROP TABLE invitations;
DROP TABLE users;

-- Undoes up.sql (fails while an email waits in two organisations).
DROP INDEX users_org_email_key;
DROP INDEX users_email_key;
CREATE UNIQUE INDEX users_email_key ON users (email_key);

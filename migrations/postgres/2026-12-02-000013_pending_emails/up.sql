-- An email names one person once they have accepted an invitation, however it is capitalised;
-- until then an invitation to it may wait in several organisations (the first accepted wins,
-- the others can then no longer be), so that inviting an address answers the same whether or
-- not someone elsewhere already uses it. Within one organisation an email is invited once.
-- Keep in step with the other backend's migration of the same name.
DROP INDEX users_email_key;
CREATE UNIQUE INDEX users_email_key ON users (email_key) WHERE activated_at IS NOT NULL;
CREATE UNIQUE INDEX users_org_email_key ON users (org_id, email_key);

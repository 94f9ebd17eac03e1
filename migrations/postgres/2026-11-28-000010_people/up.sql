-- People who use the console (PostgreSQL): users, their invitations and recovery codes, console
-- sessions, the sign-in failure counts, the audit log and organisations' console settings; and
-- who created a credential and when it was last used. Same conventions as the core schema
-- (prefixed TEXT ids, BIGINT microseconds, named CHECK constraints restating the domain's
-- rules). Tokens, invitation links and recovery codes are stored only as digests; TOTP secrets
-- sealed. People are removed (removed_at), never deleted, so every person an invitation, a
-- session, a recovery code, an audit entry or a credential names is a foreign key to `users`
-- (the audit log's and the credentials' ones too: an entry or key naming nobody was not written
-- by the domain). Keep in step with migrations/sqlite/2026-11-28-000010_people/up.sql and
-- crates/malipo-store-diesel/src/schema.rs.

CREATE TABLE users (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES organisations (id),
    -- As typed at the invitation, and as compared (trimmed, lower-cased: unique).
    email           TEXT NOT NULL,
    email_key       TEXT NOT NULL,
    name            TEXT NOT NULL,
    role            TEXT NOT NULL CONSTRAINT users_role_check
                        CHECK (role IN ('admin', 'finance', 'viewer', 'maker', 'checker', 'agent', 'operator')),
    -- Argon2id PHC string; NULL until the invitation is accepted.
    password_hash   TEXT NULL,
    -- Sealed (encrypted at rest); set at enrolment, before the first code confirms it.
    totp_secret     BYTEA NULL,
    totp_enabled_at BIGINT NULL,
    -- The last TOTP time step a code was accepted at (a code is accepted once).
    totp_last_step  BIGINT NOT NULL DEFAULT 0 CONSTRAINT users_totp_last_step_check CHECK (totp_last_step >= 0),
    demo            BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      BIGINT NOT NULL,
    activated_at    BIGINT NULL,
    removed_at      BIGINT NULL,
    CONSTRAINT users_id_prefix_check CHECK (id LIKE 'usr\_%'),
    -- lower() and trim() leave a key the domain made (Rust's full lower-casing and trimming) as
    -- it is; a key with a capital or a space around it was not made by the domain.
    CONSTRAINT users_email_key_check CHECK (email_key = lower(trim(email_key))),
    -- The second factor is on only with a secret; a person is active only with a password.
    CONSTRAINT users_totp_check CHECK (totp_enabled_at IS NULL OR totp_secret IS NOT NULL),
    CONSTRAINT users_activated_check CHECK (activated_at IS NULL OR password_hash IS NOT NULL)
);
-- One person per email, however it is capitalised.
CREATE UNIQUE INDEX users_email_key ON users (email_key);
-- An organisation's people.
CREATE INDEX users_org_idx ON users (org_id, id);

-- One-time invitation links, by the SHA-256 of the token in the link; valid 72 hours.
CREATE TABLE invitations (
    digest      TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id),
    -- NULL: an operator's command.
    invited_by  TEXT NULL REFERENCES users (id),
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    accepted_at BIGINT NULL,
    CONSTRAINT invitations_expires_at_check CHECK (expires_at > created_at),
    CONSTRAINT invitations_accepted_at_check CHECK (accepted_at IS NULL OR accepted_at < expires_at)
);
CREATE INDEX invitations_user_idx ON invitations (user_id);

-- A person's one-time recovery codes, by keyed digest.
CREATE TABLE recovery_codes (
    user_id    TEXT NOT NULL REFERENCES users (id),
    digest     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    used_at    BIGINT NULL,
    PRIMARY KEY (user_id, digest)
);

-- Console sessions, by the SHA-256 of the cookie's token. A session ends at expires_at or after
-- 30 minutes without a request (last_seen_at, written at most once a minute). No index on
-- last_seen_at: it is written by requests, and the purge that reads it is rare.
CREATE TABLE console_sessions (
    digest       TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id),
    stage        TEXT NOT NULL CONSTRAINT console_sessions_stage_check CHECK (stage IN ('second_factor', 'active')),
    mode         TEXT NOT NULL CONSTRAINT console_sessions_mode_check CHECK (mode IN ('test', 'live')),
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    ip           TEXT NOT NULL,
    CONSTRAINT console_sessions_times_check CHECK (expires_at > created_at AND last_seen_at >= created_at)
);
-- "Sign out everywhere" and a removed person's sessions.
CREATE INDEX console_sessions_user_idx ON console_sessions (user_id);

-- Failed sign-ins counted per subject (`account:<email>` or `address:<ip>`), locked row by row
-- while an attempt is judged.
CREATE TABLE sign_in_failures (
    subject      TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    count        INTEGER NOT NULL CONSTRAINT sign_in_failures_count_check CHECK (count >= 0),
    locked_until BIGINT NULL
);

-- Every action a person takes. Append-only: never changed, never deleted.
CREATE TABLE audit_log (
    id         TEXT PRIMARY KEY,
    -- NULL when unknown (a failed sign-in of an unknown email).
    org_id     TEXT NULL REFERENCES organisations (id),
    -- NULL when unknown, or an operator's command.
    user_id    TEXT NULL REFERENCES users (id),
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    object_id  TEXT NULL,
    detail     TEXT NOT NULL,
    ip         TEXT NULL,
    mode       TEXT NULL CONSTRAINT audit_log_mode_check CHECK (mode IN ('test', 'live')),
    created_at BIGINT NOT NULL,
    CONSTRAINT audit_log_id_prefix_check CHECK (id LIKE 'aud\_%')
);
-- An organisation's log, newest first (ids are time-ordered); an operator's reads every one.
CREATE INDEX audit_log_org_idx ON audit_log (org_id, id);
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION malipo_refuse_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION malipo_refuse_change();

-- An organisation's console settings (none stored: the defaults).
CREATE TABLE organisation_settings (
    org_id             TEXT PRIMARY KEY REFERENCES organisations (id),
    require_two_factor BOOLEAN NOT NULL
);

-- Who created a credential in the console (it acts as that person for maker/checker; NULL: an
-- operator's command), and when it last got a token. Credentials made before this migration
-- have neither. An organisation's key pairs are listed newest first.
ALTER TABLE credentials
    ADD COLUMN created_by   TEXT NULL REFERENCES users (id),
    ADD COLUMN last_used_at BIGINT NULL;
CREATE INDEX credentials_org_idx ON credentials (org_id, created_at);

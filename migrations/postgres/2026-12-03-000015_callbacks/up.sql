-- Callbacks: where a request asked for its outcome to be sent (the GSMA door's X-Callback-URL),
-- one row per request, written in the transaction that made the object. It waits until the
-- object is final, then is due like a webhook delivery, retried on the same schedule until a
-- 2xx. Signed under the organisation's callback secret (one per mode, sealed at rest).
-- Keep in step with migrations/sqlite/2026-12-03-000015_callbacks/up.sql and schema.rs.
CREATE TABLE callbacks (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES organisations (id),
    mode            TEXT NOT NULL CONSTRAINT callbacks_mode_check CHECK (mode IN ('test', 'live')),
    -- The credential that asked: the outcome is read as it would read it.
    client_id       TEXT NOT NULL,
    object_id       TEXT NOT NULL,
    url             TEXT NOT NULL,
    -- The client's X-CorrelationID, sent back with the callback.
    correlation_id  TEXT NULL,
    state           TEXT NOT NULL CONSTRAINT callbacks_state_check CHECK (state IN ('waiting', 'pending', 'succeeded', 'failed')),
    attempts        INTEGER NOT NULL CONSTRAINT callbacks_attempts_check CHECK (attempts >= 0),
    next_attempt_at BIGINT NULL,
    last_status     INTEGER NULL,
    last_error      TEXT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    CONSTRAINT callbacks_next_attempt_check CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE INDEX callbacks_due_idx ON callbacks (next_attempt_at) WHERE state = 'pending';
CREATE INDEX callbacks_waiting_idx ON callbacks (object_id) WHERE state = 'waiting';
CREATE INDEX callbacks_object_idx ON callbacks (org_id, mode, object_id);
CREATE INDEX callbacks_created_at_idx ON callbacks (created_at);

CREATE TABLE callback_secrets (
    org_id                     TEXT NOT NULL REFERENCES organisations (id),
    mode                       TEXT NOT NULL CONSTRAINT callback_secrets_mode_check CHECK (mode IN ('test', 'live')),
    -- Sealed (encrypted at rest).
    secret                     BYTEA NOT NULL,
    previous_secret            BYTEA NULL,
    previous_secret_expires_at BIGINT NULL,
    created_at                 BIGINT NOT NULL,
    updated_at                 BIGINT NOT NULL,
    PRIMARY KEY (org_id, mode),
    CONSTRAINT callback_secrets_previous_secret_check
        CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))
);

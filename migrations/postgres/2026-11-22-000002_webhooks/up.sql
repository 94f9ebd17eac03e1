-- Webhooks (PostgreSQL): registered endpoints, the event outbox, one delivery per event and
-- endpoint, and every HTTP attempt of a delivery. Same conventions as the core schema. Keep in
-- step with migrations/sqlite/2026-11-22-000002_webhooks/up.sql and
-- crates/malipo-store-diesel/src/schema.rs.

CREATE TABLE webhook_endpoints (
    id                         TEXT PRIMARY KEY,
    org_id                     TEXT NOT NULL REFERENCES organisations (id),
    mode                       TEXT NOT NULL CONSTRAINT webhook_endpoints_mode_check CHECK (mode IN ('test', 'live')),
    url                        TEXT NOT NULL,
    description                TEXT NULL,
    -- `*` or space-separated event kinds.
    events                     TEXT NOT NULL,
    enabled                    BOOLEAN NOT NULL,
    -- Sealed (encrypted at rest).
    secret                     BYTEA NOT NULL,
    previous_secret            BYTEA NULL,
    previous_secret_expires_at BIGINT NULL,
    disabled_reason            TEXT NULL,
    failing_since              BIGINT NULL,
    deleted_at                 BIGINT NULL,
    created_at                 BIGINT NOT NULL,
    updated_at                 BIGINT NOT NULL,
    CONSTRAINT webhook_endpoints_previous_secret_check
        CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))
);
CREATE INDEX webhook_endpoints_org_idx ON webhook_endpoints (org_id, mode, id);

-- The outbox: one row per committed change, written in the transaction that made it.
CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organisations (id),
    mode       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    object_id  TEXT NOT NULL,
    data       BYTEA NOT NULL,
    amount     TEXT NULL,
    currency   TEXT NULL,
    state      TEXT NULL,
    reference  TEXT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX events_org_idx ON events (org_id, mode, id);
CREATE INDEX events_kind_idx ON events (org_id, mode, kind, id);
CREATE INDEX events_created_at_idx ON events (created_at);

-- Events are append-only: never changed, deleted only when purged after retention.
CREATE TRIGGER events_append_only BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION malipo_refuse_change();

CREATE TABLE deliveries (
    id              TEXT PRIMARY KEY,
    event_id        TEXT NOT NULL REFERENCES events (id),
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id),
    state           TEXT NOT NULL CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts        INTEGER NOT NULL CONSTRAINT deliveries_attempts_check CHECK (attempts >= 0),
    next_attempt_at BIGINT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    CONSTRAINT deliveries_next_attempt_check CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX deliveries_event_idx ON deliveries (event_id);
CREATE INDEX deliveries_pending_endpoint_idx ON deliveries (endpoint_id) WHERE state = 'pending';

CREATE TABLE delivery_attempts (
    id           BIGSERIAL PRIMARY KEY,
    delivery_id  TEXT NOT NULL REFERENCES deliveries (id),
    event_id     TEXT NOT NULL,
    endpoint_id  TEXT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status       INTEGER NULL,
    latency_ms   INTEGER NOT NULL CONSTRAINT delivery_attempts_latency_ms_check CHECK (latency_ms >= 0),
    error        TEXT NULL
);
CREATE INDEX delivery_attempts_event_idx ON delivery_attempts (event_id, id);
-- Backs the foreign key: deleting a delivery (a purge) looks up its attempts by this column.
CREATE INDEX delivery_attempts_delivery_idx ON delivery_attempts (delivery_id);

//! Tests of idempotency (to be written).

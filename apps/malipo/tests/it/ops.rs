//! Tests of ops (to be written).

//! Tests of auth (to be written).

//! Tests of lifecycle (to be written).

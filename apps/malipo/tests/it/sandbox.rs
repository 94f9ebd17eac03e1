//! Tests of sandbox (to be written).

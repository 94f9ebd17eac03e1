//! Tests of cli (to be written).

//! Tests of errors (to be written).

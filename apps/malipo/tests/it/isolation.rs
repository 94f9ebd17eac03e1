//! Tests of isolation (to be written).

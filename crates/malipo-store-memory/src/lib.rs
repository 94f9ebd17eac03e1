//! malipo-store-memory

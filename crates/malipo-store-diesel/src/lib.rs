//! malipo-store-diesel

//! malipo-store-contract

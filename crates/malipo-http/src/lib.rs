//! malipo-http

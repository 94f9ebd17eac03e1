//! CSV files the console writes (exports a person opens in a spreadsheet): the service's one
//! writer (`malipo_service::csv_files`), which the API's exports use too, so that a field a
//! spreadsheet would run as a formula is written as text in every file Malipo gives out, and the
//! console's transactions export is byte for byte the API's.

pub use malipo_service::csv_files::{field, row};

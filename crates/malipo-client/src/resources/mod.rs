//! The API's groups, one module each.

pub(crate) mod charges;

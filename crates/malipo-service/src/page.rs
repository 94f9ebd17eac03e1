//! Pages of list results and their cursors.

use crate::error::ServiceError;

/// A page of results.
#[derive(Clone, Debug)]
pub struct Page<T> {
    /// The items.
    pub data: Vec<T>,
    /// Whether more follow.
    pub has_more: bool,
    /// Cursor for the next page.
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// A page from up to `limit + 1` fetched items: the extra one only says that more follow.
    /// `cursor_of` gives the cursor of the last item kept.
    pub fn from_fetched(mut data: Vec<T>, limit: usize, cursor_of: impl Fn(&T) -> String) -> Self {
        let has_more = data.len() > limit;
        data.truncate(limit);
        let next_cursor = if has_more { data.last().map(cursor_of) } else { None };
        Page { data, has_more, next_cursor }
    }
}

/// The `invalid_cursor` refusal of a cursor that does not parse.
pub(crate) fn bad_cursor(field: &str) -> ServiceError {
    ServiceError::field(field, "invalid_cursor", format!("{field} is not valid"))
}

//! The answer port: how a front end keeps its answer with an idempotency key.

use malipo_idempotency::StoredResponse;

/// How a front end keeps its answer to a state-changing request with the request's idempotency
/// key. A use case that runs under a key calls it once with what it did (the charge created, the
/// wallet locked) and stores what it returns with the key, in the effect's own transaction, so
/// that a crash never leaves a key without its answer; a repeat of the request is then given
/// that answer again, whatever has happened since.
///
/// The service never reads what it stores, nor knows its format: the API stores its JSON bytes
/// (replayed byte for byte), another front end may store something else (the web console, the
/// id of the object to show next). A closure `Fn(&T) -> StoredResponse` is an answer.
pub trait Answer<T>: Sync {
    /// What to store with the key for `value`, the use case's result.
    fn answer(&self, value: &T) -> StoredResponse;
}

impl<T, F> Answer<T> for F
where
    F: Fn(&T) -> StoredResponse + Sync,
{
    fn answer(&self, value: &T) -> StoredResponse {
        self(value)
    }
}

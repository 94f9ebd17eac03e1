//! Lists: one page at a time, or every item as an async stream that fetches the pages as it goes.

use std::marker::PhantomData;

use futures_util::stream::{self, Stream, TryStreamExt};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::client::Call;
use crate::{Client, Error};

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Page<T> {
    /// The items of this page.
    pub data: Vec<T>,
    /// Whether another page follows.
    #[serde(default)]
    pub has_more: bool,
    /// The cursor of the next page, when there is one.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// A list request: [`List::page`] for one page, [`List::stream`] for every item.
#[derive(Debug, Clone)]
#[must_use = "a list does nothing until its page or stream is asked for"]
pub struct List<T> {
    client: Client,
    call: Call,
    _items: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned + Send + 'static> List<T> {
    pub(crate) fn new(client: &Client, call: Call) -> Self {
        List { client: client.clone(), call, _items: PhantomData }
    }

    /// At most `limit` items per page (1 to 100; the API's default is 20).
    pub fn limit(mut self, limit: u32) -> Self {
        self.call = self.call.query("limit", Some(limit));
        self
    }

    /// The page after `cursor` (the first when `None`).
    ///
    /// # Errors
    /// As every call ([`Error`]).
    pub async fn page(&self, cursor: Option<&str>) -> Result<Page<T>, Error> {
        let call = self.call.clone().query("cursor", cursor);
        self.client.json(&call).await
    }

    /// Every item, page after page, fetched as the stream is read. A page that fails (after
    /// the client's retries) ends the stream with its error.
    pub fn stream(self) -> impl Stream<Item = Result<T, Error>> + Send + 'static {
        let pages = stream::try_unfold((self, None::<String>, false), |(list, cursor, done)| async move {
            if done {
                return Ok(None);
            }
            let page = list.page(cursor.as_deref()).await?;
            let next = page.next_cursor.clone().filter(|_| page.has_more);
            let done = next.is_none();
            Ok(Some((stream::iter(page.data.into_iter().map(Ok::<T, Error>)), (list, next, done))))
        });
        pages.try_flatten()
    }
}

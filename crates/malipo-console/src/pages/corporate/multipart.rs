//! Form posts that carry a file (`enctype="multipart/form-data"`, RFC 7578): "Upload" and
//! "Submit for approval" of Bulk payouts. The body is read up to a limit, split into its parts,
//! and checked like every other post (the console's origin, the session, its CSRF token) before
//! a handler sees it.

use std::net::IpAddr;

use actix_web::{web, HttpRequest};
use futures_util::StreamExt;

use crate::csrf::{same_origin, token_matches};
use crate::session::{client_ip, console_of, person_of, Person};
use crate::ConsoleError;

/// One part of a multipart body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// Its form field's name.
    pub name: String,
    /// The file's name, for a file field.
    pub filename: Option<String>,
    /// Its content.
    pub data: Vec<u8>,
}

/// A multipart form post's parts.
#[derive(Clone, Debug, Default)]
pub struct Parts(pub Vec<Part>);

impl Parts {
    /// The first part named `name`.
    pub fn get(&self, name: &str) -> Option<&Part> {
        self.0.iter().find(|p| p.name == name)
    }

    /// The first part named `name` as text (empty when absent; invalid UTF-8 replaced).
    pub fn text(&self, name: &str) -> String {
        self.get(name).map(|p| String::from_utf8_lossy(&p.data).into_owned()).unwrap_or_default()
    }
}

/// The value of `key` in a header's parameters (`name="file"`), quotes removed.
fn param(header: &str, key: &str) -> Option<String> {
    header.split(';').skip(1).find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.trim().eq_ignore_ascii_case(key).then(|| v.trim().trim_matches('"').to_owned())
    })
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let rest = haystack.get(from..)?;
    rest.windows(needle.len()).position(|w| w == needle).and_then(|i| i.checked_add(from))
}

/// Splits `body` by the boundary of `content_type`.
///
/// # Errors
/// A sentence saying what is wrong with the body.
pub fn parse(content_type: &str, body: &[u8]) -> Result<Parts, String> {
    if !content_type.trim_start().to_ascii_lowercase().starts_with("multipart/form-data") {
        return Err("the form must be sent as multipart/form-data".into());
    }
    let boundary = param(content_type, "boundary").filter(|b| !b.is_empty()).ok_or("the form has no boundary")?;
    let delimiter = format!("--{boundary}").into_bytes();
    let next_delimiter = format!("\r\n--{boundary}").into_bytes();
    let bad = || "the form's body is not well formed".to_owned();
    let mut at = find(body, &delimiter, 0).ok_or_else(bad)?.checked_add(delimiter.len()).ok_or_else(bad)?;
    let mut parts = Vec::new();
    loop {
        match body.get(at..at.saturating_add(2)) {
            Some(b"--") => return Ok(Parts(parts)),
            Some(b"\r\n") => at = at.saturating_add(2),
            _ => return Err(bad()),
        }
        let headers_end = find(body, b"\r\n\r\n", at).ok_or_else(bad)?;
        let headers = String::from_utf8_lossy(body.get(at..headers_end).ok_or_else(bad)?).into_owned();
        let data_start = headers_end.saturating_add(4);
        let data_end = find(body, &next_delimiter, data_start).ok_or_else(bad)?;
        let disposition =
            headers.split("\r\n").find(|h| h.to_ascii_lowercase().starts_with("content-disposition:")).ok_or_else(bad)?.to_owned();
        parts.push(Part {
            name: param(&disposition, "name").unwrap_or_default(),
            filename: param(&disposition, "filename"),
            data: body.get(data_start..data_end).ok_or_else(bad)?.to_vec(),
        });
        at = data_end.saturating_add(next_delimiter.len());
    }
}

/// A signed-in person's multipart form post, read up to `limit` bytes, its origin and CSRF
/// token (the `csrf_token` part) checked as [`crate::csrf::Posted`] checks them.
///
/// # Errors
/// [`ConsoleError::Csrf`], [`ConsoleError::SignIn`], [`ConsoleError::BadForm`] (too large, not
/// multipart).
pub async fn posted(req: &HttpRequest, mut payload: web::Payload, limit: usize) -> Result<(Person, Parts, IpAddr), ConsoleError> {
    let console = console_of(req)?;
    if !same_origin(req, &console.settings) {
        return Err(ConsoleError::Csrf);
    }
    let person = person_of(req).await?;
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ConsoleError::BadForm(e.to_string()))?;
        if body.len().saturating_add(chunk.len()) > limit {
            return Err(ConsoleError::BadForm(format!("the form is larger than {} MiB", limit / (1024 * 1024))));
        }
        body.extend_from_slice(&chunk);
    }
    let content_type = req.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let parts = parse(content_type, &body).map_err(ConsoleError::BadForm)?;
    if !token_matches(&person, &parts.text("csrf_token")) {
        return Err(ConsoleError::Csrf);
    }
    Ok((person, parts, client_ip(req, &console.settings)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_split_by_their_boundary_with_file_names() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"reference\"\r\n\r\nPAYROLL\r\n--XyZ\r\n\
Content-Disposition: form-data; name=\"file\"; filename=\"nov.csv\"\r\nContent-Type: text/csv\r\n\r\na,b\r\n1,2\r\n\r\n--XyZ--\r\n";
        let parts = parse("multipart/form-data; boundary=XyZ", body).unwrap_or_default();
        assert_eq!(parts.text("reference"), "PAYROLL");
        let file = parts.get("file").cloned().unwrap_or_default();
        assert_eq!((file.filename.as_deref(), file.data.as_slice()), (Some("nov.csv"), b"a,b\r\n1,2\r\n".as_slice()));
        assert!(parse("application/x-www-form-urlencoded", body).is_err());
        assert!(parse("multipart/form-data; boundary=XyZ", b"--XyZ\r\nbroken").is_err());
    }
}

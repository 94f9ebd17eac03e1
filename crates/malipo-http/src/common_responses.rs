//! What every operation of the document shares, added in one place after the groups' own
//! annotations, so that each operation lists every status it can answer (contract sections 9 and
//! 10) without repeating it.
//!
//! An operation's shape decides what it can answer besides its own statuses:
//!
//! | the operation | adds |
//! |---|---|
//! | any, under `/api/v1` | 500 `internal_error`, 503 `unavailable` (`Retry-After`) |
//! | the token and revoke endpoints | 429 `rate_limited` (`Retry-After`): too many failed client authentications |
//! | has a bearer security requirement | 401 `unauthorized`/`invalid_token` (`WWW-Authenticate`), 403 `insufficient_scope`, 429 `rate_limited` (`Retry-After`); `RateLimit` and `RateLimit-Policy` on its answers |
//! | has query parameters | 400 `invalid_request` |
//! | has path parameters | 404 `not_found` |
//! | has a request body | 400 `invalid_request`, 413 `payload_too_large`, 415 `unsupported_media_type`, 422 `validation_failed` |
//! | has an `Idempotency-Key` header parameter | 400 `idempotency_key_missing` (when required), 409 `idempotency_in_progress` (`Retry-After`), 422 `idempotency_key_reused`; `Idempotent-Replayed` on its 200 |
//!
//! A status the operation already lists keeps its description, with the codes above it did not
//! name appended. Every error answer is an `application/problem+json` [`Problem`], except at the
//! token and revoke endpoints (`/api/v1/oauth/…`), whose errors are `application/json` with
//! `error` and `error_description` as well (the `OAuthProblem` schema). Every answer carries
//! `X-Request-Id`. The `Idempotency-Key` header parameter gets its pattern and `limit` its
//! bounds here too, and a body that may be left out is optional rather than `null`.
//!
//! [`Problem`]: crate::problem::Problem

use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{OpenApi, Ref, RefOr, Required};
use utoipa::Modify;

use crate::schema::{inline, IDEMPOTENCY_KEY_HEADER, LIMIT_MAX, LIMIT_MIN};

/// The media type of error answers.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The prefix of the token and revoke endpoints, whose errors are `application/json`.
pub const OAUTH_PREFIX: &str = "/api/v1/oauth/";

/// The document modifier that adds the shared statuses, media types, headers and parameter
/// rules to every operation (see the module's table).
pub struct CommonResponses;

/// What an operation is, as far as the shared rules care.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    api: bool,
    oauth: bool,
    authenticated: bool,
    query: bool,
    path: bool,
    body: bool,
    idempotent: bool,
    key_required: bool,
}

impl Shape {
    fn of(path: &str, op: &Operation) -> Self {
        let params = op.parameters.as_deref().unwrap_or_default();
        let key = params.iter().find(|p| p.parameter_in == ParameterIn::Header && p.name.eq_ignore_ascii_case("Idempotency-Key"));
        let authenticated =
            op.security.iter().flatten().any(|requirement| {
                serde_json::to_value(requirement).ok().and_then(|v| v.as_object().map(|o| !o.is_empty())).unwrap_or(false)
            });
        Shape {
            api: path.starts_with("/api/v1/") && path != "/api/v1/openapi.json",
            oauth: path.starts_with(OAUTH_PREFIX),
            authenticated,
            query: params.iter().any(|p| p.parameter_in == ParameterIn::Query),
            path: params.iter().any(|p| p.parameter_in == ParameterIn::Path),
            body: op.request_body.is_some(),
            idempotent: key.is_some(),
            key_required: key.is_some_and(|k| k.required == Required::True),
        }
    }

    /// The statuses and codes the shape adds, with the headers of each.
    fn additions(self) -> Vec<(u16, Vec<&'static str>, Vec<&'static str>)> {
        let mut out: Vec<(u16, Vec<&'static str>, Vec<&'static str>)> = Vec::new();
        let mut add = |status: u16, code: &'static str, headers: &[&'static str]| match out.iter_mut().find(|(s, _, _)| *s == status) {
            Some((_, codes, hs)) => {
                codes.push(code);
                hs.extend_from_slice(headers);
            }
            None => out.push((status, vec![code], headers.to_vec())),
        };
        if self.query || self.body {
            add(400, "invalid_request", &[]);
        }
        if self.key_required {
            add(400, "idempotency_key_missing", &[]);
        }
        if self.authenticated {
            add(401, "unauthorized", &["WWW-Authenticate"]);
            add(401, "invalid_token", &[]);
            add(403, "insufficient_scope", &["WWW-Authenticate"]);
        }
        if self.path {
            add(404, "not_found", &[]);
        }
        if self.idempotent {
            add(409, "idempotency_in_progress", &["Retry-After"]);
        }
        if self.body {
            add(413, "payload_too_large", &[]);
            add(415, "unsupported_media_type", &[]);
            add(422, "validation_failed", &[]);
        }
        if self.idempotent {
            add(422, "idempotency_key_reused", &[]);
        }
        if self.authenticated || self.oauth {
            // At the token and revoke endpoints: too many failed client authentications.
            add(429, "rate_limited", &["Retry-After"]);
        }
        if self.api {
            add(500, "internal_error", &[]);
            add(503, "unavailable", &["Retry-After"]);
        }
        out
    }
}

fn string_header(description: &str, pattern: Option<&str>) -> utoipa::openapi::header::Header {
    let schema = ObjectBuilder::new().schema_type(Type::String).pattern(pattern);
    HeaderBuilder::new().schema(schema).description(Some(description)).build()
}

/// A response header the contract fixes, by name.
fn header(name: &str) -> Option<utoipa::openapi::header::Header> {
    Some(match name {
        "X-Request-Id" => {
            string_header("The request's id: the caller's own (1 to 128 visible ASCII characters) or a new one", Some("^[!-~]{1,128}$"))
        }
        "RateLimit" => {
            string_header("The credential's requests left in the current second", Some("^limit=[0-9]+, remaining=[0-9]+, reset=[0-9]+$"))
        }
        "RateLimit-Policy" => string_header("The credential's requests per second", Some("^[0-9]+;w=1$")),
        "Idempotent-Replayed" => {
            let schema = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["true"]));
            HeaderBuilder::new().schema(schema).description(Some("Present on the stored answer to a retried request")).build()
        }
        "Retry-After" => {
            let schema = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0));
            HeaderBuilder::new().schema(schema).description(Some("Seconds to wait before retrying")).build()
        }
        "WWW-Authenticate" => string_header("The bearer challenge (RFC 6750), or `Basic` at the token endpoint when Basic was used", None),
        _ => return None,
    })
}

fn problem_content(oauth: bool) -> (&'static str, utoipa::openapi::content::Content) {
    if oauth {
        ("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("OAuthProblem"))).build())
    } else {
        (PROBLEM_JSON, ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build())
    }
}

fn add_header(response: &mut Response, name: &'static str) {
    if let Some(h) = header(name) {
        response.headers.entry(name.to_owned()).or_insert(h);
    }
}

fn complete(path: &str, op: &mut Operation) {
    let shape = Shape::of(path, op);
    for (status, codes, headers) in shape.additions() {
        let entry = op
            .responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| RefOr::T(ResponseBuilder::new().description(codes.join(", ")).build()));
        if let RefOr::T(response) = entry {
            let missing: Vec<&str> = codes.iter().copied().filter(|c| !response.description.contains(c)).collect();
            if !missing.is_empty() {
                response.description = format!("{}, {}", response.description, missing.join(", "));
            }
            for h in headers {
                add_header(response, h);
            }
        }
    }
    for (status, response) in &mut op.responses.responses {
        let RefOr::T(response) = response else { continue };
        add_header(response, "X-Request-Id");
        if shape.authenticated && status != "401" {
            add_header(response, "RateLimit");
            add_header(response, "RateLimit-Policy");
        }
        if status.starts_with('2') {
            if shape.idempotent {
                add_header(response, "Idempotent-Replayed");
            }
        } else {
            let (media, content) = problem_content(shape.oauth);
            response.content.clear();
            response.content.insert(media.to_owned(), content);
        }
    }
    for p in op.parameters.iter_mut().flatten() {
        match (&p.parameter_in, p.name.as_str()) {
            (ParameterIn::Header, name) if name.eq_ignore_ascii_case("Idempotency-Key") => {
                p.schema = Some(inline(ObjectBuilder::new().schema_type(Type::String).pattern(Some(IDEMPOTENCY_KEY_HEADER)).build()));
            }
            (ParameterIn::Query, "limit") => {
                let bounds = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(LIMIT_MIN)).maximum(Some(LIMIT_MAX));
                p.schema = Some(inline(bounds.build()));
            }
            _ => {}
        }
    }
    if let Some(body) = op.request_body.as_mut() {
        for content in body.content.values_mut() {
            if let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema {
                let is_null = |s: &RefOr<Schema>| matches!(s, RefOr::T(Schema::Object(o)) if o.schema_type == SchemaType::Type(Type::Null));
                if one_of.items.len() == 2 && one_of.items.iter().any(is_null) {
                    content.schema = one_of.items.iter().find(|s| !is_null(s)).cloned();
                }
            }
        }
    }
}

fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.options, &mut item.head, &mut item.patch, &mut item.trace]
        .into_iter()
        .filter_map(Option::as_mut)
}

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut OpenApi) {
        for (path, item) in &mut openapi.paths.paths {
            for op in operations(item) {
                complete(path, op);
            }
        }
        let components = openapi.components.get_or_insert_with(Default::default);
        let oauth = AllOfBuilder::new()
            .item(Ref::from_schema_name("Problem"))
            .item(ObjectBuilder::new().required("error").required("error_description"))
            .description(Some("An error of the token and revoke endpoints: a problem document with the RFC 6749 members"));
        components.schemas.insert("OAuthProblem".to_owned(), RefOr::T(Schema::AllOf(oauth.build())));
    }
}

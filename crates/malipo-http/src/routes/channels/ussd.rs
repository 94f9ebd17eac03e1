//! The USSD gateway callback (contract section 11).

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_service::UssdRequest;

use crate::extract::{media_type, parse_json, Auth, Body};
use crate::handler::run;
use crate::problem::{ApiError, Problem, ProblemField};
use crate::routes::channels::dto::UssdCallback;
use crate::state::AppState;

/// The callback's fields from a form body. Fields other than the five of the callback are
/// ignored (gateways add their own); a repeated field is malformed.
fn parse_form(body: &[u8]) -> Result<UssdCallback, ApiError> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(body).map_err(|e| ApiError::InvalidRequest(format!("malformed form body: {e}")))?;
    let mut c = UssdCallback::default();
    for (k, v) in pairs {
        let slot = match k.as_str() {
            "sessionId" => &mut c.session_id,
            "serviceCode" => &mut c.service_code,
            "phoneNumber" => &mut c.phone_number,
            "text" => &mut c.text,
            "networkCode" => &mut c.network_code,
            _ => continue,
        };
        if slot.replace(v).is_some() {
            return Err(ApiError::InvalidRequest(format!("parameter {k} is repeated")));
        }
    }
    // A `+` sent without percent-encoding arrives as a space: restore it.
    if let Some(p) = c.phone_number.as_mut() {
        if let Some(rest) = p.strip_prefix(' ') {
            *p = format!("+{rest}");
        }
    }
    Ok(c)
}

/// The callback from a form or JSON body, with its required fields checked.
fn parse_callback(req: &HttpRequest, body: &[u8]) -> Result<UssdRequest, ApiError> {
    let c = match media_type(req).as_deref() {
        Some("application/x-www-form-urlencoded") => parse_form(body)?,
        Some("application/json") => parse_json::<UssdCallback>(body)?.value,
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "use application/x-www-form-urlencoded or application/json, not {}",
                other.unwrap_or("absent")
            )))
        }
    };
    let missing = |name: &str| ProblemField { field: name.into(), code: "missing_field".into(), message: format!("{name} is required") };
    let mut errors = Vec::new();
    if c.session_id.is_none() {
        errors.push(missing("sessionId"));
    }
    if c.phone_number.is_none() {
        errors.push(missing("phoneNumber"));
    }
    match (c.session_id, c.phone_number) {
        (Some(session_id), Some(phone_number)) => Ok(UssdRequest {
            session_id,
            service_code: c.service_code.unwrap_or_default(),
            phone_number,
            text: c.text.unwrap_or_default(),
            network_code: c.network_code,
        }),
        _ => Err(ApiError::Fields(errors)),
    }
}

/// The USSD gateway's callback (Africa's Talking fields), one per hop of a session: answers the
/// next screen as plain text, beginning `CON ` (more input expected) or `END ` (session over),
/// at most 182 characters.
///
/// The body is `application/x-www-form-urlencoded` (as Africa's Talking sends it) or
/// `application/json`. `sessionId` and `phoneNumber` are required; `text` (every input of the
/// session joined by `*`) defaults to empty, as does `serviceCode`. Form bodies may carry other
/// fields, which are ignored (gateways add their own); JSON bodies refuse unknown fields (422
/// `unknown_field`) like every JSON endpoint. No idempotency key: a repeated hop replays its
/// screen. Errors are problem documents as everywhere.
#[utoipa::path(
    post, path = "/api/v1/ussd", operation_id = "continueUssdSession", tag = "Channels",
    request_body(
        description = "The gateway's callback, form-encoded (Africa's Talking) or JSON",
        content(
            (UssdCallback = "application/x-www-form-urlencoded"),
            (UssdCallback = "application/json"),
        )
    ),
    responses(
        (status = 200, description = "The next screen: `CON …` or `END …`", body = String, content_type = "text/plain; charset=utf-8",
            example = json!("CON Welcome to Malipo\n1. Send money\n2. Pay merchant\n3. Approve payments\n4. My balance\n5. My account")),
        (status = 400, description = "invalid_request (malformed body, wrong types, a repeated form field)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`missing_field`, `invalid_value`, `invalid_msisdn`, `too_long`, `unknown_field`)", body = Problem),
    ),
    security(("bearer" = ["ussd"]))
)]
pub async fn ussd(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Ussd)?.clone();
    let callback = parse_callback(&req, &body.0)?;
    let screen = run(&state, move |p| p.ussd().handle(&principal, &callback)).await?;
    Ok(HttpResponse::Ok().insert_header((header::CONTENT_TYPE, "text/plain; charset=utf-8")).body(screen))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use actix_web::test::TestRequest;

    fn with(content_type: &str) -> HttpRequest {
        TestRequest::post().insert_header(("content-type", content_type)).to_http_request()
    }

    fn field_codes(e: ApiError) -> Vec<(String, String)> {
        match e {
            ApiError::Fields(f) => f.into_iter().map(|f| (f.field, f.code)).collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn a_form_callback_is_parsed_and_extra_fields_are_ignored() {
        let body =
            b"sessionId=ATUid_1&serviceCode=%2A384%2A1%23&phoneNumber=%2B254712345678&text=1%2A254798765432&networkCode=63902&channel=2";
        let r = parse_callback(&with("application/x-www-form-urlencoded"), body).unwrap();
        assert_eq!(r.session_id, "ATUid_1");
        assert_eq!(r.service_code, "*384*1#");
        assert_eq!(r.phone_number, "+254712345678");
        assert_eq!(r.text, "1*254798765432");
        assert_eq!(r.network_code.as_deref(), Some("63902"));
    }

    #[test]
    fn form_defaults_and_an_unencoded_plus() {
        let r =
            parse_callback(&with("application/x-www-form-urlencoded; charset=UTF-8"), b"sessionId=s1&phoneNumber=+254712345678").unwrap();
        assert_eq!(r.phone_number, "+254712345678");
        assert_eq!(r.text, "");
        assert_eq!(r.service_code, "");
        assert_eq!(r.network_code, None);
        let r = parse_callback(&with("application/x-www-form-urlencoded"), b"sessionId=s1&phoneNumber=254712345678&text=").unwrap();
        assert_eq!(r.phone_number, "254712345678");
        assert_eq!(r.text, "");
    }

    #[test]
    fn a_repeated_form_field_is_malformed() {
        let e =
            parse_callback(&with("application/x-www-form-urlencoded"), b"sessionId=a&sessionId=b&phoneNumber=254712345678").unwrap_err();
        assert!(matches!(e, ApiError::InvalidRequest(_)), "{e:?}");
    }

    #[test]
    fn a_json_callback_is_parsed_with_a_charset() {
        let body = br#"{"sessionId":"s1","serviceCode":"*384#","phoneNumber":"254712345678","text":"4","networkCode":null}"#;
        let r = parse_callback(&with("application/json; charset=utf-8"), body).unwrap();
        assert_eq!(
            (r.session_id.as_str(), r.service_code.as_str(), r.phone_number.as_str(), r.text.as_str()),
            ("s1", "*384#", "254712345678", "4")
        );
        assert_eq!(r.network_code, None);
        let r = parse_callback(&with("application/json"), br#"{"sessionId":"s1","phoneNumber":"254712345678"}"#).unwrap();
        assert_eq!((r.text.as_str(), r.service_code.as_str()), ("", ""));
    }

    #[test]
    fn json_refuses_unknown_fields_and_wrong_types() {
        let e = parse_callback(&with("application/json"), br#"{"sessionId":"s1","phoneNumber":"254712345678","channel":2}"#).unwrap_err();
        assert_eq!(field_codes(e), [("channel".to_owned(), "unknown_field".to_owned())]);
        let e = parse_callback(&with("application/json"), br#"{"sessionId":1,"phoneNumber":"254712345678"}"#).unwrap_err();
        assert!(matches!(e, ApiError::InvalidRequest(_)), "{e:?}");
        let e = parse_callback(&with("application/json"), b"sessionId=s1").unwrap_err();
        assert!(matches!(e, ApiError::InvalidRequest(_)), "{e:?}");
    }

    #[test]
    fn missing_session_and_number_are_both_reported() {
        for (ct, body) in [("application/json", &b"{}"[..]), ("application/x-www-form-urlencoded", &b"text=1"[..])] {
            let e = parse_callback(&with(ct), body).unwrap_err();
            assert_eq!(
                field_codes(e),
                [("sessionId".to_owned(), "missing_field".to_owned()), ("phoneNumber".to_owned(), "missing_field".to_owned())],
                "{ct}"
            );
        }
        let e = parse_callback(&with("application/json"), br#"{"sessionId":"s1"}"#).unwrap_err();
        assert_eq!(field_codes(e), [("phoneNumber".to_owned(), "missing_field".to_owned())]);
    }

    #[test]
    fn other_media_types_are_refused() {
        for req in [with("text/plain"), with("multipart/form-data; boundary=x"), TestRequest::post().to_http_request()] {
            let e = parse_callback(&req, b"sessionId=s1&phoneNumber=254712345678").unwrap_err();
            assert!(matches!(e, ApiError::UnsupportedMediaType(_)), "{e:?}");
        }
    }
}

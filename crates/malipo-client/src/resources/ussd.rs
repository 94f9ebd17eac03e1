//! The USSD channel (contract section 11): a USSD gateway's hops (a key pair with scope `ussd`),
//! each answered with the next screen.

use serde::Serialize;

use crate::client::Call;
use crate::operations as ops;
use crate::{Client, Error};

/// One hop of a USSD session, with the Africa's Talking callback's fields (`POST /ussd`).
///
/// `text` holds every input of the session, PINs included, so its `Debug` output shows only how
/// many inputs it has.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UssdRequest {
    /// The gateway's session id (1 to 128 visible ASCII characters), the same on every hop.
    pub session_id: String,
    /// The caller's number, international digits (a leading `+` is accepted).
    pub phone_number: String,
    /// Every input of the session so far joined by `*` (empty on the first hop).
    pub text: String,
    /// The dialled code (`*384*1#`).
    pub service_code: Option<String>,
    /// The caller's network, when the gateway knows it.
    pub network_code: Option<String>,
}

impl std::fmt::Debug for UssdRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inputs = if self.text.is_empty() { 0 } else { self.text.split('*').count() };
        f.debug_struct("UssdRequest")
            .field("session_id", &self.session_id)
            .field("phone_number", &self.phone_number)
            .field("text", &format_args!("<{inputs} input(s) redacted>"))
            .field("service_code", &self.service_code)
            .field("network_code", &self.network_code)
            .finish()
    }
}

impl UssdRequest {
    /// The hop of session `session_id` from `phone_number` whose inputs so far are `text`
    /// (joined by `*`; `""` for the first hop).
    pub fn new(session_id: impl Into<String>, phone_number: impl Into<String>, text: impl Into<String>) -> Self {
        UssdRequest {
            session_id: session_id.into(),
            phone_number: phone_number.into(),
            text: text.into(),
            service_code: None,
            network_code: None,
        }
    }

    /// With the inputs so far given one by one (joined by `*` into `text`).
    pub fn inputs<I, S>(mut self, inputs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.text = inputs.into_iter().map(|s| s.as_ref().to_owned()).collect::<Vec<_>>().join("*");
        self
    }

    /// With the dialled code.
    pub fn service_code(mut self, code: impl Into<String>) -> Self {
        self.service_code = Some(code.into());
        self
    }

    /// With the caller's network code.
    pub fn network_code(mut self, code: impl Into<String>) -> Self {
        self.network_code = Some(code.into());
        self
    }
}

/// The screen a hop answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UssdScreen {
    /// `true` for a `CON` screen (more input expected), `false` for `END` (the session is over).
    pub more: bool,
    /// What the caller sees, without the `CON `/`END ` prefix (at most 178 characters).
    pub text: String,
}

impl UssdScreen {
    /// The screen of an answer body, `CON …` or `END …`.
    fn parse(body: &str) -> Option<Self> {
        if let Some(text) = body.strip_prefix("CON ") {
            Some(UssdScreen { more: true, text: text.to_owned() })
        } else {
            body.strip_prefix("END ").map(|text| UssdScreen { more: false, text: text.to_owned() })
        }
    }
}

/// The JSON form of the callback (the server also takes it form-encoded).
#[derive(Serialize)]
struct CallbackBody<'a> {
    #[serde(rename = "sessionId")]
    session_id: &'a str,
    #[serde(rename = "phoneNumber")]
    phone_number: &'a str,
    text: &'a str,
    #[serde(rename = "serviceCode", skip_serializing_if = "Option::is_none")]
    service_code: Option<&'a str>,
    #[serde(rename = "networkCode", skip_serializing_if = "Option::is_none")]
    network_code: Option<&'a str>,
}

/// The USSD gateway's callback: `client.ussd()`.
#[derive(Debug, Clone, Copy)]
pub struct Ussd<'a> {
    pub(crate) client: &'a Client,
}

impl Client {
    /// The USSD channel, for a USSD gateway (scope `ussd`).
    pub fn ussd(&self) -> Ussd<'_> {
        Ussd { client: self }
    }
}

impl Ussd<'_> {
    /// Sends one hop of a session (`continueUssdSession`) and reads the next screen. The call
    /// carries no idempotency key (the endpoint takes none); a retried hop is safe, as the
    /// server replays a repeated hop's screen without acting twice.
    ///
    /// # Errors
    /// As every call ([`Error`]); `validation_failed` (`invalid_msisdn`, ...);
    /// [`Error::Decode`] for an answer that is neither a `CON ` nor an `END ` screen.
    pub async fn send(&self, hop: &UssdRequest) -> Result<UssdScreen, Error> {
        let body = CallbackBody {
            session_id: &hop.session_id,
            phone_number: &hop.phone_number,
            text: &hop.text,
            service_code: hop.service_code.as_deref(),
            network_code: hop.network_code.as_deref(),
        };
        let call = Call::to(ops::CONTINUE_USSD_SESSION, &[]).json(&body)?;
        let answer = self.client.send(&call).await?;
        let text = answer.text().await.map_err(Error::transport)?;
        UssdScreen::parse(&text).ok_or_else(|| {
            let start: String = text.chars().take(40).collect();
            Error::decode(format!("POST /ussd: not a CON or END screen: {start:?}"))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn screens_are_read_without_their_prefix() {
        assert_eq!(UssdScreen::parse("CON Enter PIN"), Some(UssdScreen { more: true, text: "Enter PIN".into() }));
        assert_eq!(UssdScreen::parse("END Bye\nnow"), Some(UssdScreen { more: false, text: "Bye\nnow".into() }));
        assert_eq!(UssdScreen::parse("CONTINUE"), None);
        assert_eq!(UssdScreen::parse(""), None);
    }

    #[test]
    fn the_text_never_shows_in_debug_output() {
        let hop = UssdRequest::new("s1", "254712345678", "").inputs(["4", "4826"]).service_code("*384#");
        assert_eq!(hop.text, "4*4826");
        let shown = format!("{hop:?}");
        assert!(!shown.contains("4826") && shown.contains("2 input(s)"), "{shown}");
        let body = CallbackBody {
            session_id: &hop.session_id,
            phone_number: &hop.phone_number,
            text: &hop.text,
            service_code: hop.service_code.as_deref(),
            network_code: None,
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"sessionId":"s1","phoneNumber":"254712345678","text":"4*4826","serviceCode":"*384#"}"#
        );
    }
}

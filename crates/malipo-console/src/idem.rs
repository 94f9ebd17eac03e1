//! Console actions that move money are idempotent like the API's calls: each form carries a
//! one-time key (drawn when the form is shown), so a double click, a refresh or the same form
//! posted again acts once. The key is claimed in the action's own transaction; a repeat is given
//! what the first did, so it goes where the first went (the object's page, made from it).

use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyScope};
use malipo_service::{Actor, Done, Earlier, Idem, ServiceError, SignedIn};

use crate::ConsoleError;

/// A new one-time key for a form.
pub fn new_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The idempotency context of a console action `operation` (e.g. `refund`) by `who` with form
/// key `key`, fingerprinted by the form's fields (the CSRF token left out: it is the session's,
/// not the request's).
///
/// # Errors
/// [`ConsoleError::BadForm`] for a missing or malformed key.
pub fn idem(who: &SignedIn, operation: &str, key: &str, fields: &[(&str, &str)]) -> Result<Idem, ConsoleError> {
    let key =
        IdempotencyKey::parse(key).map_err(|_| ConsoleError::BadForm("the form's one-time key is missing; reload the page".into()))?;
    // Each field as `name=length:value`, so that no value can pass for another field's.
    let canonical: String = fields.iter().map(|(k, v)| format!("{k}={}:{v}\n", v.len())).collect();
    Ok(Idem {
        scope: KeyScope { org_id: who.org.id.clone(), mode: who.mode(), operation: format!("console {operation}") },
        key,
        fingerprint: Fingerprint::of("POST", &format!("/console/{operation}"), canonical.as_bytes()),
        actor: None,
        callback: None,
    })
}

/// Who acts, for the audit log: `who` from `ip`, doing `action` (e.g. `reversal.created`). The
/// use case records it in the action's own transaction.
pub fn by(mut idem: Idem, who: &SignedIn, ip: std::net::IpAddr, action: &str) -> Idem {
    idem.actor = Some(Actor { user_id: who.user.id.clone(), email: who.user.email.clone(), ip: ip.to_string(), action: action.to_owned() });
    idem
}

/// The page an action's result sends the person to (`to` of its value, the first time or on a
/// repeat alike), or for a repeat of an action a version before snapshots answered, the page
/// that version kept.
///
/// # Errors
/// The action's.
pub fn page<T>(done: Result<Done<T>, ServiceError>, to: impl FnOnce(&T) -> String) -> Result<Done<String>, ServiceError> {
    match done {
        Ok(done) => Ok(done.map(|v| to(&v))),
        Err(ServiceError::AnsweredEarlier(Earlier(kept))) => {
            Ok(Done { value: String::from_utf8_lossy(&kept).into_owned(), replayed: true })
        }
        Err(e) => Err(e),
    }
}

/// Where an action's page (first or repeated) sends the person: a console page, nothing else.
pub fn location(done: &Done<String>) -> String {
    if done.value.starts_with("/console/") {
        done.value.clone()
    } else {
        "/console/".to_owned()
    }
}

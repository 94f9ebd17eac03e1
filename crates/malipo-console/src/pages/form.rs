//! Refused forms: each error beside its field, the values kept.

use malipo_service::validate::sentence;
use malipo_service::ServiceError;

/// Field errors of a refused form, by field name.
#[derive(Clone, Debug, Default)]
pub struct FieldErrors(Vec<(String, String)>);

impl FieldErrors {
    /// No errors.
    pub fn none() -> Self {
        FieldErrors::default()
    }

    /// One error on `field`.
    pub fn one(field: &str, message: impl Into<String>) -> Self {
        FieldErrors(vec![(field.to_owned(), message.into())])
    }

    /// The first error on `field`, if any.
    pub fn of(&self, field: &str) -> Option<&str> {
        self.0.iter().find(|(f, _)| f == field).map(|(_, m)| m.as_str())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds an error.
    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        self.0.push((field.to_owned(), message.into()));
    }

    /// Adds an error unless the field already has this one (two of the use case's fields may be
    /// one of the form's).
    pub fn add_once(&mut self, field: &str, message: impl Into<String>) {
        let message = message.into();
        if !self.0.iter().any(|(f, m)| f == field && *m == message) {
            self.0.push((field.to_owned(), message));
        }
    }

    /// The errors of a refusal, the form's fields named as the use case names them (`fields`
    /// maps a use case's field name to the form's, where they differ). `None` when the refusal
    /// is not about fields.
    pub fn from_service(e: &ServiceError, fields: &[(&str, &str)]) -> Option<Self> {
        let ServiceError::Validation(list) = e else { return None };
        let rename = |f: &str| fields.iter().find(|(from, _)| *from == f).map_or_else(|| f.to_owned(), |(_, to)| (*to).to_owned());
        Some(FieldErrors(list.iter().map(|f| (rename(&f.field), sentence(&f.message))).collect()))
    }
}

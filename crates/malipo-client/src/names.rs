//! Closed sets of names the API writes (a transaction's type, a delivery's state, ...), read as
//! enums with an `Other` for any name this version of the client does not know.

/// An enum of the names `$text`, with `Other(String)`, read from and written as the name.
macro_rules! names {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal: $doc:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name {
            $(#[doc = concat!("`", $text, "`: ", $doc)] $variant,)*
            /// A name this version of the client does not know, as the API wrote it.
            Other(String),
        }

        impl $name {
            /// Every name the contract gives, as the API writes them.
            pub const NAMES: &'static [&'static str] = &[$($text),*];

            /// The name as the API writes it.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)*
                    $name::Other(name) => name,
                }
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> Self {
                match name {
                    $($text => $name::$variant,)*
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Ok($name::from(String::deserialize(d)?.as_str()))
            }
        }
    };
}

pub(crate) use names;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{AccountType, DeliveryState, FieldErrorCode, TransactionKind};

    #[test]
    fn every_name_reads_as_itself_and_an_unknown_one_as_other() {
        fn check<T: serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug>(names: &[&str], is_other: fn(&T) -> bool) {
            for name in names {
                let v: T = serde_json::from_value(serde_json::Value::from(*name)).unwrap();
                assert!(!is_other(&v), "{name}");
                assert_eq!(serde_json::to_value(&v).unwrap(), serde_json::Value::from(*name));
            }
            let v: T = serde_json::from_str(r#""teleport""#).unwrap();
            assert!(is_other(&v), "{v:?}");
            assert_eq!(serde_json::to_string(&v).unwrap(), r#""teleport""#);
        }
        check::<TransactionKind>(TransactionKind::NAMES, |v| matches!(v, TransactionKind::Other(_)));
        check::<AccountType>(AccountType::NAMES, |v| matches!(v, AccountType::Other(_)));
        check::<DeliveryState>(DeliveryState::NAMES, |v| matches!(v, DeliveryState::Other(_)));
        check::<FieldErrorCode>(FieldErrorCode::NAMES, |v| matches!(v, FieldErrorCode::Other(_)));
        check::<crate::ChargeFailure>(crate::ChargeFailure::NAMES, |v| matches!(v, crate::ChargeFailure::Other(_)));
        check::<crate::PayoutFailure>(crate::PayoutFailure::NAMES, |v| matches!(v, crate::PayoutFailure::Other(_)));
        assert_eq!(TransactionKind::CashIn.to_string(), "cash_in");
    }
}

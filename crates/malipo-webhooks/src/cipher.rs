//! Endpoint secrets at rest: sealed with XChaCha20-Poly1305 under a key from configuration, so a
//! copy of the database alone does not yield signing secrets.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;

/// The key was not the base64 of 32 bytes, or a sealed value did not open.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum CipherError {
    /// `MALIPO_WEBHOOK_KEY` must be the base64 of 32 bytes.
    #[error("the webhook key must be the base64 of 32 bytes")]
    Key,
    /// Tampered, truncated, or sealed under another key.
    #[error("a sealed secret could not be opened (wrong key or damaged)")]
    Open,
}

/// Seals and opens secrets. Each sealed value is a fresh 24-byte nonce followed by the
/// ciphertext and its tag.
#[derive(Clone)]
pub struct SecretCipher {
    aead: XChaCha20Poly1305,
    /// The configured key, from which the other server keys are derived.
    key: [u8; 32],
}

impl std::fmt::Debug for SecretCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretCipher(…)")
    }
}

impl SecretCipher {
    /// From the base64 of a 32-byte key.
    ///
    /// # Errors
    /// [`CipherError::Key`].
    pub fn from_base64(text: &str) -> Result<Self, CipherError> {
        let key = B64.decode(text.trim()).map_err(|_| CipherError::Key)?;
        Self::from_key(&key)
    }

    /// From 32 key bytes.
    ///
    /// # Errors
    /// [`CipherError::Key`].
    pub fn from_key(key: &[u8]) -> Result<Self, CipherError> {
        let key: [u8; 32] = key.try_into().map_err(|_| CipherError::Key)?;
        Ok(SecretCipher { aead: XChaCha20Poly1305::new(&key.into()), key })
    }

    /// A new random key, as base64 (for a development key file).
    pub fn generate_key() -> String {
        let mut key = [0_u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        B64.encode(key)
    }

    /// A cipher under a random key that lives as long as the process (tests, in-memory stores).
    pub fn ephemeral() -> Self {
        let mut key = [0_u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        SecretCipher { aead: XChaCha20Poly1305::new(&key.into()), key }
    }

    /// A 32-byte key for another purpose, derived from the configured key with HKDF-SHA256
    /// (`purpose` as the info): one configured key, independent keys for sealing and hashing.
    pub fn derive_key(&self, purpose: &[u8]) -> [u8; 32] {
        let mut out = [0_u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit of 255 blocks: expand cannot fail.
        let _ = hkdf::Hkdf::<sha2::Sha256>::new(None, &self.key).expand(purpose, &mut out);
        out
    }

    /// Seals `plain`.
    pub fn seal(&self, plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0_u8; 24];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let sealed = self.aead.encrypt(XNonce::from_slice(&nonce), plain).unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens a sealed value.
    ///
    /// # Errors
    /// [`CipherError::Open`].
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, CipherError> {
        if sealed.len() < 24 + 16 {
            return Err(CipherError::Open);
        }
        let (nonce, body) = sealed.split_at(24);
        self.aead.decrypt(XNonce::from_slice(nonce), body).map_err(|_| CipherError::Open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_round_trip_and_tamper_detection() {
        let c = SecretCipher::from_base64(&SecretCipher::generate_key()).unwrap_or_else(|_| SecretCipher::ephemeral());
        let sealed = c.seal(b"whsec-key-bytes");
        assert_ne!(&sealed[24..], b"whsec-key-bytes", "not stored in plain text");
        assert_eq!(c.open(&sealed), Ok(b"whsec-key-bytes".to_vec()));
        assert_ne!(c.seal(b"x"), c.seal(b"x"), "fresh nonce each time");
        let mut bad = sealed.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(c.open(&bad), Err(CipherError::Open));
        assert_eq!(SecretCipher::ephemeral().open(&sealed), Err(CipherError::Open), "another key");
        assert_eq!(c.open(&sealed[..30]), Err(CipherError::Open));
        assert!(SecretCipher::from_base64("c2hvcnQ=").is_err());
    }

    #[test]
    fn derived_keys_depend_on_the_key_and_the_purpose() {
        let key = SecretCipher::generate_key();
        let (a, b) = (SecretCipher::from_base64(&key).unwrap_or_else(|_| SecretCipher::ephemeral()), SecretCipher::ephemeral());
        let again = SecretCipher::from_base64(&key).unwrap_or_else(|_| SecretCipher::ephemeral());
        assert_eq!(a.derive_key(b"hashing"), again.derive_key(b"hashing"), "the same key derives the same key");
        assert_ne!(a.derive_key(b"hashing"), a.derive_key(b"other"), "another purpose");
        assert_ne!(a.derive_key(b"hashing"), b.derive_key(b"hashing"), "another key");
        assert_ne!(a.derive_key(b"hashing").to_vec(), B64.decode(key.trim()).unwrap_or_default(), "not the key itself");
    }
}

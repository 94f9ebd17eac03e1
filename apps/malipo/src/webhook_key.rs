//! The key that seals webhook endpoint secrets at rest (`MALIPO_WEBHOOK_KEY`).
//!
//! Given: used as is (every instance of a deployment must share it). Not given: a SQLite
//! deployment keeps `webhook.key` (mode 0600) beside its database file, created on first use; a
//! PostgreSQL deployment refuses to start, because several instances must share one key and a
//! key made up by one of them would not open the secrets another sealed.

use std::path::{Path, PathBuf};

use anyhow::Context;
use malipo_webhooks::SecretCipher;

use crate::Settings;

/// The name of the key file beside a SQLite database.
pub const KEY_FILE: &str = "webhook.key";

/// Where the key comes from, decided before anything is opened.
#[derive(Debug)]
pub enum KeySource {
    /// `MALIPO_WEBHOOK_KEY`.
    Given(SecretCipher),
    /// A key file beside the SQLite database (read, or created on first use).
    File(PathBuf),
    /// An in-memory SQLite database: a key that lives as long as the process, like the data.
    Ephemeral,
}

/// Why no key could be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The variable is set but is not the base64 of 32 bytes.
    #[error("MALIPO_WEBHOOK_KEY must be the base64 of 32 random bytes (generate one with `openssl rand -base64 32`)")]
    Invalid,
    /// PostgreSQL without a key.
    #[error(
        "MALIPO_WEBHOOK_KEY is not set. A PostgreSQL deployment needs it: it encrypts webhook endpoint secrets at rest \
         and keys the hashes of client secrets and PINs, and every instance and operator command must use the same \
         value. Generate one with `openssl rand -base64 32`, keep it with your \
         other secrets, and set it on every instance"
    )]
    MissingForPostgres,
}

/// Decides where the key comes from.
///
/// # Errors
/// [`KeyError`].
pub fn source(settings: &Settings) -> Result<KeySource, KeyError> {
    if let Some(key) = &settings.webhook_key {
        return SecretCipher::from_base64(&key.0).map(KeySource::Given).map_err(|_| KeyError::Invalid);
    }
    match settings.database_url.strip_prefix("sqlite://") {
        Some(":memory:") => Ok(KeySource::Ephemeral),
        Some(path) => {
            let dir = Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Ok(KeySource::File(dir.join(KEY_FILE)))
        }
        None => Err(KeyError::MissingForPostgres),
    }
}

impl KeySource {
    /// The cipher: reads or creates the key file if that is the source.
    ///
    /// # Errors
    /// An unreadable, unwritable or damaged key file.
    pub fn cipher(self) -> anyhow::Result<SecretCipher> {
        match self {
            KeySource::Given(c) => Ok(c),
            KeySource::Ephemeral => Ok(SecretCipher::ephemeral()),
            KeySource::File(path) => key_file(&path),
        }
    }
}

/// Reads `path`, or creates it with a new key (mode 0600). Creation is atomic: the key is written
/// to a private temporary file which is then linked into place, so two processes starting at once
/// on a new database agree on one key.
fn key_file(path: &Path) -> anyhow::Result<SecretCipher> {
    if !path.exists() {
        create_key_file(path).with_context(|| format!("cannot create the webhook key file {}", path.display()))?;
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the webhook key file {}", path.display()))?;
    warn_if_readable_by_others(path);
    SecretCipher::from_base64(&text)
        .map_err(|_| anyhow::anyhow!("the webhook key file {} is damaged: it must hold the base64 of 32 bytes", path.display()))
}

fn create_key_file(path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp =
        path.with_file_name(format!(".{KEY_FILE}.{}.{}", std::process::id(), SecretCipher::generate_key().replace(['/', '+', '='], "")));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(format!("{}\n", SecretCipher::generate_key()).as_bytes())?;
        f.sync_all()
    });
    let linked = written.and_then(|()| match std::fs::hard_link(&tmp, path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()), // another process won
        other => other,
    });
    let _ = std::fs::remove_file(&tmp);
    if linked.is_ok() {
        tracing::info!(path = %path.display(), "created the webhook key file (back it up with the database)");
    }
    linked
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(path = %path.display(), "the webhook key file is readable by other users; chmod 600 it");
        }
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_: &Path) {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn settings(args: &[&str]) -> Settings {
        let mut all = vec!["malipo"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all).unwrap().into_action().unwrap() {
            crate::cli::Action::Serve(settings) => settings,
            crate::cli::Action::Operator(..) => unreachable!("no command was given"),
        }
    }

    #[test]
    fn postgres_without_a_key_is_refused_with_a_clear_message() {
        let s = settings(&["--database-url", "postgres://localhost/x"]);
        let e = source(&s).unwrap_err();
        assert!(matches!(e, KeyError::MissingForPostgres));
        assert!(e.to_string().contains("MALIPO_WEBHOOK_KEY") && e.to_string().contains("every instance"), "{e}");
    }

    #[test]
    fn a_given_key_must_be_32_bytes_of_base64() {
        let s = settings(&["--database-url", "postgres://localhost/x", "--webhook-key", "c2hvcnQ="]);
        assert!(matches!(source(&s), Err(KeyError::Invalid)));
        let key = SecretCipher::generate_key();
        let s = settings(&["--database-url", "postgres://localhost/x", "--webhook-key", &key]);
        assert!(matches!(source(&s), Ok(KeySource::Given(_))));
        assert!(!format!("{s:?}").contains(&key), "the key is never printed");
    }

    #[test]
    fn sqlite_keeps_a_private_key_file_beside_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("data/malipo.db").display());
        let s = settings(&["--database-url", &url]);
        let KeySource::File(path) = source(&s).unwrap() else { panic!("a key file") };
        assert_eq!(path, dir.path().join("data").join(KEY_FILE));
        let first = source(&s).unwrap().cipher().unwrap();
        let sealed = first.seal(b"secret");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(SecretCipher::from_base64(&text).is_ok());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // A restart reads the same key.
        assert_eq!(source(&s).unwrap().cipher().unwrap().open(&sealed).unwrap(), b"secret");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary files left");
        // A damaged file is an error, not a new key.
        std::fs::write(&path, "nonsense").unwrap();
        assert!(source(&s).unwrap().cipher().unwrap_err().to_string().contains("damaged"));
    }

    #[test]
    fn concurrent_first_starts_agree_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let ciphers: Vec<SecretCipher> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| key_file(&path).unwrap())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let sealed = ciphers[0].seal(b"x");
        assert!(ciphers.iter().all(|c| c.open(&sealed).is_ok()));
    }

    #[test]
    fn the_retry_schedule_is_checked_at_start_up() {
        let s = settings(&[]);
        assert_eq!(s.webhook_retry_schedule, malipo_webhooks::RetrySchedule::default());
        assert_eq!(s.webhook_timeout_ms, 15_000);
        assert!(!s.webhook_allow_private);
        assert_eq!(s.webhook_concurrency, 64);
        assert_eq!(settings(&["--webhook-retry-schedule", "0,1,1"]).webhook_retry_schedule.attempts(), 3);
        let bad = Cli::try_parse_from(["malipo", "--webhook-retry-schedule", "0,soon"]);
        assert!(bad.is_err_and(|e| e.to_string().contains("retry schedule")));
        assert!(Cli::try_parse_from(["malipo", "--webhook-timeout-ms", "0"]).is_err());
    }
}

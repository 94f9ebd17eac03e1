//! The failure limits of every guess at a person's secrets: the password and the second factor
//! at sign-in, the current password when changing it, and the code of a step-up action.
//!
//! **Counted before it is checked, under the rows' locks.** An attempt first counts against each
//! of its subjects (the account from this address, the address, and the account from everywhere
//! unless the browser has signed in as the account's person before: [`malipo_auth::Subject`])
//! under their rows' locks, always in that order; it is refused while any of them is locked, the
//! right secret included. So attempts racing on one account are counted one after the other,
//! and the one past the limit is refused however they interleave. An attempt that succeeds gives
//! its count back (and clears its account's count at its address); one that was never judged
//! (the password hashing was busy) gives it all back.
//!
//! **A lock only where the guessing is.** Ten failures lock the account at the address they came
//! from, not everywhere: an attacker elsewhere slows only themselves, and the person signs in
//! from their own address. The brake on the account as a whole (fifty failures, from however
//! many addresses) holds back a guesser with many addresses; it does not apply to a browser that
//! carries the account's device cookie (it signed in as that person before), so it cannot keep
//! the person out either. Step-up codes and the current password count as untrusted attempts
//! (the brake applies): they come with a session, which may be stolen.

use std::net::IpAddr;

use malipo_auth::{Failures, Subject};
use malipo_core::Timestamp;

use crate::error::ServiceError;
use crate::ports::{SessionRepo, Store};
use crate::views::{OnSessions, View};

/// One guess at an account's secrets, before it is judged: the subjects it counts against.
pub(crate) struct Attempt {
    subjects: Vec<Subject>,
}

/// An attempt counted against its subjects, or refused because one of them is locked.
pub(crate) enum Counted {
    /// Counted: each subject with its stored key and count as written.
    Yes(Vec<(Subject, String, Failures)>),
    /// Refused: locked until then.
    Locked(Timestamp),
}

impl Attempt {
    /// A guess at the account of `email_key` from `ip`; `trusted` when the browser carries the
    /// account's device cookie (the brake does not apply).
    pub(crate) fn new(email_key: &str, ip: IpAddr, trusted: bool) -> Self {
        let mut subjects = vec![Subject::AccountAt(email_key.to_owned(), ip), Subject::Address(ip)];
        if !trusted {
            subjects.push(Subject::Account(email_key.to_owned()));
        }
        Attempt { subjects }
    }

    /// When one of the subjects is locked already, by a plain read before any row is locked:
    /// a flood from a locked address is refused without queueing on its row's lock, so it slows
    /// no one else's sign-in.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn already_locked(&self, store: &dyn Store, now: Timestamp) -> Result<Option<Timestamp>, ServiceError> {
        OnSessions::read(store, |tx| {
            for subject in &self.subjects {
                if let Some(until) = tx.failures(&subject.key())?.and_then(|f| f.locked(now)) {
                    return Ok(Some(until));
                }
            }
            Ok(None)
        })
    }

    /// Counts the attempt against every subject under its row's lock (in one order for
    /// everyone), or refuses it while one of them is locked (counting nothing).
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn count(&self, tx: &mut (impl SessionRepo + ?Sized), now: Timestamp) -> Result<Counted, ServiceError> {
        let mut counted = Vec::with_capacity(self.subjects.len());
        for subject in &self.subjects {
            let key = subject.key();
            let current = tx.lock_failures(&key, now)?;
            match Failures::attempt(Some(current), now, subject.limit()) {
                Ok(next) => counted.push((subject.clone(), key, next)),
                Err(until) => return Ok(Counted::Locked(until)),
            }
        }
        for (_, key, next) in &counted {
            tx.put_failures(key, next)?;
        }
        Ok(Counted::Yes(counted))
    }
}

impl Counted {
    /// When the attempt was refused, until when.
    pub(crate) fn locked(&self) -> Option<Timestamp> {
        match self {
            Counted::Locked(until) => Some(*until),
            Counted::Yes(_) => None,
        }
    }

    /// Whether this (failed) attempt locked its account at its address or as a whole.
    pub(crate) fn locked_account(&self, now: Timestamp) -> bool {
        match self {
            Counted::Yes(all) => all.iter().any(|(s, _, f)| !matches!(s, Subject::Address(_)) && f.locked(now).is_some()),
            Counted::Locked(_) => false,
        }
    }

    /// The attempt succeeded: its one count is given back to the address and the brake, and
    /// the account's count at this address is cleared (its person is no longer being guessed at
    /// from there).
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn succeeded(&self, tx: &mut (impl SessionRepo + ?Sized), now: Timestamp) -> Result<(), ServiceError> {
        let Counted::Yes(all) = self else { return Ok(()) };
        for (subject, key, counted) in all {
            match subject {
                Subject::AccountAt(..) => tx.clear_failures(key)?,
                _ => give_back(tx, key, counted, subject.limit(), now)?,
            }
        }
        Ok(())
    }

    /// The attempt was not judged: its count is given back to every subject.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn not_judged(&self, tx: &mut (impl SessionRepo + ?Sized), now: Timestamp) -> Result<(), ServiceError> {
        let Counted::Yes(all) = self else { return Ok(()) };
        for (subject, key, counted) in all {
            give_back(tx, key, counted, subject.limit(), now)?;
        }
        Ok(())
    }
}

/// Gives one counted attempt back to a subject: re-locks its row and subtracts from the count as
/// it is now, never writing back the count as it was, so that failures counted meanwhile (while
/// a password was being checked) stay counted. Nothing is given back to a window that has since
/// ended.
fn give_back(tx: &mut (impl SessionRepo + ?Sized), key: &str, counted: &Failures, limit: u32, now: Timestamp) -> Result<(), ServiceError> {
    let current = tx.lock_failures(key, now)?;
    if current.window_start == counted.window_start && current.count > 0 {
        tx.put_failures(key, &current.succeeded(limit))?;
    }
    Ok(())
}

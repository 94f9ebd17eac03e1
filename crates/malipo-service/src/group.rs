//! Group commit: a store decorator under which charge creations arriving together
//! ([`Store::create_charge`]) share one write transaction; everything else passes through.
//!
//! A request that finds no group being run leads one: it takes the requests queued behind it
//! (itself first, at most the `max` of [`Grouping::over`]), inserts their idempotency keys
//! (with the records a repeat is answered from) and their charges, each kind in one statement where
//! the database allows it, commits once and answers each. Requests that arrive meanwhile queue;
//! when the leader is done, the first of them leads the next group. Nobody waits on a timer: a
//! request that finds nobody else runs at once, in a group of one, as it would without grouping.
//! Under load the groups grow by themselves, and each request pays a share of one
//! `BEGIN`/`COMMIT` (and of one turn of SQLite's writer) instead of a whole one. One group runs
//! at a time per decorated store: the groups, not more transactions, carry the load.
//!
//! A group is all or nothing. When any member fails (its idempotency key is already stored, by
//! another request or by another member of the group; a constraint refuses a row; the database
//! fails) or the commit fails, nothing of the group is kept and every member runs alone, in a
//! transaction of its own on the decorated store, where a stored key writes nothing (the use
//! case then answers from its record) and a refusal fails that member only. An answer is given
//! only after the commit, so no member is told of a write that was not kept. A leader that
//! panics hands the lead on (its members, finding their answer gone, run alone).

use std::collections::VecDeque;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use malipo_core::AccountId;

use crate::error::{ServiceError, StoreError};
use crate::ports::{AccountKey, Creation, ReplicaState, Store, Tx};

/// What a member waiting for its group is told.
enum Signal {
    /// Committed with the group: its size to the member whose thread ran it, else 0.
    Done(usize),
    /// Not committed with a group: run alone.
    Alone,
    /// Lead the next group.
    Lead,
    /// The database could not be reached: the request fails as it would alone (a member would
    /// wait for a connection again).
    Unavailable(StoreError),
}

struct Member {
    creation: Creation,
    answer: Sender<Signal>,
}

struct Queue {
    waiting: VecDeque<Member>,
    /// Whether a group is being run (or its leader has been told to run it). While false, the
    /// queue is empty.
    leading: bool,
}

/// A store whose charge creations are grouped: at most `max` share a transaction.
pub struct Grouping {
    inner: Arc<dyn Store>,
    max: usize,
    queue: Mutex<Queue>,
}

impl Grouping {
    /// `inner` with its creations grouped by at most `max` (with `max` ≤ 1, `inner` itself).
    pub fn over(inner: Arc<dyn Store>, max: usize) -> Arc<dyn Store> {
        if max <= 1 {
            return inner;
        }
        Arc::new(Grouping { inner, max, queue: Mutex::new(Queue { waiting: VecDeque::new(), leading: false }) })
    }

    /// Writes `creation` with whatever other creations are waiting; blocks until the group is
    /// committed (its size for the member whose thread ran it, 0 for the others: as
    /// [`Store::create_charge`] counts) or given up (`None`: the caller runs it alone).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the database could not be reached.
    fn submit(&self, creation: Creation) -> Result<Option<usize>, ServiceError> {
        let (answer, answers) = channel();
        let lead = {
            let mut queue = self.lock();
            queue.waiting.push_back(Member { creation, answer });
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            self.lead();
        }
        loop {
            match answers.recv() {
                Ok(Signal::Done(members)) => return Ok(Some(members)),
                Ok(Signal::Alone) | Err(_) => return Ok(None),
                Ok(Signal::Unavailable(e)) => return Err(e.into()),
                Ok(Signal::Lead) => self.lead(),
            }
        }
    }

    /// Runs the next group: the queue's front (this thread's own request, as the one that found
    /// nobody leading or the one handed the lead) and those behind it.
    fn lead(&self) {
        let _hand_on = HandOn(self);
        let (mut answers, mut charges, mut keys) = (Vec::new(), Vec::new(), Vec::new());
        {
            let mut queue = self.lock();
            let n = queue.waiting.len().min(self.max.max(1));
            for m in queue.waiting.drain(..n) {
                answers.push(m.answer);
                charges.push(m.creation.charge);
                keys.push(m.creation.key);
            }
        }
        let group = answers;
        let kept = self.inner.run(&mut |tx| {
            // Any failure gives up the whole group (each member then runs alone); it is never
            // retried as a group, since a stored key would fail it again. The keys go first: a
            // key already stored gives the group up before its charges are written.
            let give_up = |e: StoreError| match e {
                StoreError::Unavailable(_) => ServiceError::Store(e),
                _ => ServiceError::Internal(format!("group given up: {e}")),
            };
            let stored = tx.insert_keys(&keys).map_err(give_up)?;
            if stored < keys.len() {
                return Err(ServiceError::Internal("group given up: an idempotency key is already stored".into()));
            }
            tx.insert_charges(&charges).map_err(give_up)?;
            Ok(())
        });
        match kept {
            Ok(()) => {
                // The leader's own answer (the queue's front) counts the group; the others none.
                for (i, answer) in group.iter().enumerate() {
                    let _ = answer.send(Signal::Done(if i == 0 { group.len() } else { 0 }));
                }
            }
            Err(ServiceError::Store(e @ StoreError::Unavailable(_))) => {
                for answer in &group {
                    let _ = answer.send(Signal::Unavailable(e.clone()));
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, members = group.len(), "group commit given up; its requests run alone");
                for answer in &group {
                    let _ = answer.send(Signal::Alone);
                }
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Passes the lead to the first request still queued when a group is done (also when its leader
/// panicked), or marks that nobody leads.
struct HandOn<'a>(&'a Grouping);

impl Drop for HandOn<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.lock();
        while let Some(next) = queue.waiting.front() {
            if next.answer.send(Signal::Lead).is_ok() {
                return;
            }
            // Its thread is gone: nobody is waiting for that request.
            queue.waiting.pop_front();
        }
        queue.leading = false;
    }
}

impl Store for Grouping {
    fn run(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.run(f)
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.read(f)
    }

    fn query(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.query(f)
    }

    fn autocommit(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.autocommit(f)
    }

    fn ready(&self) -> Result<(), StoreError> {
        self.inner.ready()
    }

    fn report(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.report(f)
    }

    fn replica(&self) -> Option<ReplicaState> {
        self.inner.replica()
    }

    fn account_id(&self, key: &AccountKey) -> Result<Option<AccountId>, ServiceError> {
        self.inner.account_id(key)
    }

    fn create_charge(&self, creation: &Creation) -> Result<Option<usize>, ServiceError> {
        match self.submit(creation.clone())? {
            Some(members) => Ok(Some(members)),
            // Given up as a group: alone, where a stored key or a refusal is settled.
            None => self.inner.create_charge(creation),
        }
    }
}

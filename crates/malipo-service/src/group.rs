//! Group commit: charge creations of one instance arriving together share one write transaction.
//!
//! A request that finds no group being run leads one: it takes the requests queued behind it
//! (itself first, at most [`crate::ServiceConfig::create_group_max`]), inserts their idempotency
//! keys (with the responses already rendered) and their charges, each kind in one statement where
//! the database allows it, commits once and answers each. Requests that arrive meanwhile queue;
//! when the leader is done, the first of them leads the next group. Nobody waits on a timer: a
//! request that finds nobody else runs at once, in a group of one, as it would without grouping.
//! Under load the groups grow by themselves, and each request pays a share of one
//! `BEGIN`/`COMMIT` (and of one turn of SQLite's writer) instead of a whole one. One group runs
//! at a time per instance (per store): the groups, not more transactions, carry the load.
//!
//! A group is all or nothing. When any member fails (its idempotency key is already stored, by
//! another request or by another member of the group; a constraint refuses a row; the database
//! fails) or the commit fails, nothing of the group is kept and every member runs alone, the
//! ordinary way ([`crate::core::Core`]'s `idempotent`), which settles repeats, refusals and
//! errors as it always has. An answer is given only after the commit, so no member is told of a
//! write that was not kept. A leader that panics hands the lead on (its members, finding their
//! answer gone, run alone).

use std::collections::VecDeque;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, MutexGuard, PoisonError};

use malipo_charges::Charge;
use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope};

use crate::error::{ServiceError, StoreError};
use crate::ports::Store;

/// One member's write: a new charge, and its idempotency key with the response to store.
pub(crate) struct Creation {
    pub(crate) charge: Charge,
    pub(crate) key: (KeyScope, IdempotencyKey, IdempotencyRecord),
}

/// What a member waiting for its group is told.
enum Signal {
    /// Committed with the group.
    Done,
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

/// The queue of one instance's grouped writes on one store.
pub(crate) struct GroupCommit {
    max: usize,
    queue: Mutex<Queue>,
}

impl GroupCommit {
    /// Groups of at most `max` requests (with `max` ≤ 1, every request runs alone).
    pub(crate) fn new(max: usize) -> Self {
        GroupCommit { max, queue: Mutex::new(Queue { waiting: VecDeque::new(), leading: false }) }
    }

    /// Whether requests are grouped at all.
    pub(crate) fn enabled(&self) -> bool {
        self.max > 1
    }

    /// Writes `creation` with whatever other requests are waiting, on `store`; blocks until the
    /// group is committed or given up, and tells `committed` the size of each group committed.
    /// Whether the creation was committed (else the caller runs it alone).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the database could not be reached.
    pub(crate) fn submit(&self, store: &dyn Store, committed: &dyn Fn(usize), creation: Creation) -> Result<bool, ServiceError> {
        let (answer, answers) = channel();
        let lead = {
            let mut queue = self.lock();
            queue.waiting.push_back(Member { creation, answer });
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            self.lead(store, committed);
        }
        loop {
            match answers.recv() {
                Ok(Signal::Done) => return Ok(true),
                Ok(Signal::Alone) | Err(_) => return Ok(false),
                Ok(Signal::Unavailable(e)) => return Err(e.into()),
                Ok(Signal::Lead) => self.lead(store, committed),
            }
        }
    }

    /// Runs the next group: the queue's front (this thread's own request, as the one that found
    /// nobody leading or the one handed the lead) and those behind it.
    fn lead(&self, store: &dyn Store, committed: &dyn Fn(usize)) {
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
        let kept = store.run(&mut |tx| {
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
                if group.len() > 1 {
                    committed(group.len());
                }
                for answer in &group {
                    let _ = answer.send(Signal::Done);
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
struct HandOn<'a>(&'a GroupCommit);

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

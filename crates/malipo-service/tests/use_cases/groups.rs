//! Group commit of charge creations: requests arriving while a creation's transaction runs are
//! committed together in the next one, and each answer is the one the request would get alone.
//! A store wrapper holds the first transaction until the others have queued behind it, so the
//! groups formed are known.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use malipo_auth::{OrgKind, Principal};
use malipo_charges::{Charge, ChargeFilter};
use malipo_core::Mode;
use malipo_service::{CreateCharge, Done, Grouping, Idem, NewCharge, Observer, Platform, ServiceConfig, ServiceError, Store, Tx};

use crate::support::{idem, number, World};

/// Lets the first write transaction start only when told to; counts the attempts of every
/// write transaction (a retried transaction counts once per attempt) and the transactions begun.
/// `down`: no transaction finds the database.
struct Held {
    inner: Platform,
    attempts: AtomicUsize,
    runs: AtomicUsize,
    first: Mutex<Option<Receiver<()>>>,
    down: bool,
}

impl Held {
    fn new(inner: Platform, first: Option<Receiver<()>>, down: bool) -> Self {
        Held { inner, attempts: AtomicUsize::new(0), runs: AtomicUsize::new(0), first: Mutex::new(first), down }
    }
}

impl Store for Held {
    fn run(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if self.down {
            return Err(malipo_service::StoreError::Unavailable("no connection".into()).into());
        }
        let gate = self.first.lock().unwrap().take();
        if let Some(gate) = gate {
            gate.recv().unwrap();
        }
        self.inner.store().run(&mut |tx| {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            f(tx)
        })
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.store().read(f)
    }

    fn query(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.store().query(f)
    }

    fn autocommit(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.store().autocommit(f)
    }

    fn ready(&self) -> Result<(), malipo_service::StoreError> {
        self.inner.store().ready()
    }
}

/// Counts the groups committed and their members.
#[derive(Default)]
struct Groups {
    groups: AtomicUsize,
    members: AtomicUsize,
}

impl Observer for Groups {
    fn group_committed(&self, members: usize) {
        self.groups.fetch_add(1, Ordering::SeqCst);
        self.members.fetch_add(members, Ordering::SeqCst);
    }
}

struct Setup {
    world: World,
    shop: Principal,
    platform: Platform,
    held: Arc<Held>,
    groups: Arc<Groups>,
    release: Sender<()>,
}

/// A merchant that has created one charge (so its account is known), and a platform grouping up
/// to 8 creations whose first write transaction waits for `release`.
fn setup() -> Setup {
    setup_with(8)
}

/// As [`setup`], grouping up to `max`.
fn setup_with(max: usize) -> Setup {
    let world = World::with_config(ServiceConfig::default());
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    world.charge(&shop, &number("0001"), "10").unwrap();
    let (release, gate) = channel();
    let held = Arc::new(Held::new(world.platform.clone(), Some(gate), false));
    let groups = Arc::new(Groups::default());
    let platform = world.platform.clone().with_store(Grouping::over(held.clone(), max)).with_observer(groups.clone());
    Setup { world, shop, platform, held, groups, release }
}

fn new_charge(reference: &str) -> NewCharge {
    NewCharge { payer_msisdn: number("0002"), amount: "25".into(), currency: None, reference: reference.into(), description: None }
}

/// Creates a charge on another thread.
fn create(s: &Setup, reference: &str, idem: &Idem) -> JoinHandle<Result<Done<Charge>, ServiceError>> {
    let (platform, shop, new, idem) = (s.platform.clone(), s.shop.clone(), new_charge(reference), idem.clone());
    std::thread::spawn(move || {
        let charge: CreateCharge = platform.parse(&shop, &new)?;
        platform.charges().create(&shop, &charge, &idem)
    })
}

/// Lets the threads started so far reach the queue (they wait for the held transaction).
fn settle() {
    std::thread::sleep(Duration::from_millis(150));
}

fn body(outcome: &Done<Charge>) -> String {
    outcome.value.id.to_string()
}

#[test]
fn creations_arriving_while_a_transaction_runs_are_committed_together_and_each_answered_as_alone() {
    let s = setup();
    let first = create(&s, "FIRST", &idem(&s.shop, "POST /partner/stk"));
    settle();
    let keys: Vec<(String, Idem)> = (0..5).map(|i| (format!("ORDER-{i}"), idem(&s.shop, "POST /partner/stk"))).collect();
    let queued: Vec<_> = keys.iter().map(|(reference, key)| create(&s, reference, key)).collect();
    settle();
    s.release.send(()).unwrap();
    let first = first.join().unwrap().unwrap();
    let answers: Vec<Done<Charge>> = queued.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
    // Two transactions: the first request's (alone, it found nobody) and the five that queued
    // behind it, together.
    assert_eq!(s.held.attempts.load(Ordering::SeqCst), 2);
    assert_eq!((s.groups.groups.load(Ordering::SeqCst), s.groups.members.load(Ordering::SeqCst)), (1, 5));
    assert!(!first.replayed);
    let mut ids = vec![body(&first)];
    for ((reference, key), answer) in keys.iter().zip(&answers) {
        assert!(!answer.replayed);
        let charge = s.platform.charges().get(&s.shop, &body(answer)).unwrap();
        assert_eq!(charge.reference, *reference, "each request is answered with its own charge");
        // A retry replays the stored answer, as for a charge created alone.
        let charge = s.platform.parse(&s.shop, &new_charge(reference)).unwrap();
        let again = s.platform.charges().create(&s.shop, &charge, key).unwrap();
        assert_eq!((again.replayed, &again.value), (true, &answer.value), "the same charge, as it was");
        ids.push(body(answer));
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6);
    let listed = s.world.platform.charges().list(&s.shop, &ChargeFilter::default(), None, 50).unwrap();
    assert_eq!(listed.data.len(), 7, "the setup's charge and six more");
}

#[test]
fn a_key_repeated_within_a_group_gives_the_group_up_and_each_request_is_settled_alone() {
    let s = setup();
    let first = create(&s, "FIRST", &idem(&s.shop, "POST /partner/stk"));
    settle();
    let twice = idem(&s.shop, "POST /partner/stk");
    let queued = [create(&s, "TWICE", &twice), create(&s, "TWICE", &twice), create(&s, "OTHER", &idem(&s.shop, "POST /partner/stk"))];
    settle();
    s.release.send(()).unwrap();
    assert!(!first.join().unwrap().unwrap().replayed);
    let [a, b, other] = queued.map(|h| h.join().unwrap().unwrap());
    // The group of three found the key stored by its own first member and was given up at once
    // (not retried as a group: that would fail the same way); each then ran alone, the repeat
    // once (its stored key found, writing nothing; its answer then read from the record).
    assert_eq!(s.held.attempts.load(Ordering::SeqCst), 1 + 1 + 1 + 1 + 1);
    assert_eq!(s.groups.groups.load(Ordering::SeqCst), 0, "no group was kept");
    assert_eq!(a.value, b.value, "the repeat answers as the first");
    assert_eq!([a.replayed, b.replayed].iter().filter(|r| **r).count(), 1, "exactly one of the two replays");
    assert!(!other.replayed);
    assert_ne!(body(&other), body(&a));
    let listed = s.world.platform.charges().list(&s.shop, &ChargeFilter::default(), None, 50).unwrap();
    assert_eq!(listed.data.len(), 4, "the setup's, the first, one for the repeated key, the other");
    assert_eq!(listed.data.iter().filter(|c| c.reference == "TWICE").count(), 1);
}

#[test]
fn with_grouping_off_every_creation_has_its_own_transaction() {
    let s = setup_with(1);
    let handles: Vec<_> = (0..4).map(|i| create(&s, &format!("ORDER-{i}"), &idem(&s.shop, "POST /partner/stk"))).collect();
    settle();
    s.release.send(()).unwrap();
    for h in handles {
        assert!(!h.join().unwrap().unwrap().replayed);
    }
    assert_eq!(s.held.attempts.load(Ordering::SeqCst), 4);
    assert_eq!(s.groups.groups.load(Ordering::SeqCst), 0);
}

#[test]
fn a_creation_while_the_database_is_down_fails_after_one_wait_for_it() {
    // Alone, a creation waits once for a connection and fails `unavailable`; a group that cannot
    // reach the database fails its members the same way rather than sending each to wait again.
    let s = setup();
    let down = Arc::new(Held::new(s.world.platform.clone(), None, true));
    let platform = s.world.platform.clone().with_store(Grouping::over(down.clone(), 8));
    let key = idem(&s.shop, "POST /partner/stk");
    let charge = platform.parse(&s.shop, &new_charge("DOWN")).unwrap();
    let failed = platform.charges().create(&s.shop, &charge, &key).unwrap_err();
    assert!(matches!(failed, ServiceError::Store(malipo_service::StoreError::Unavailable(_))), "{failed:?}");
    assert_eq!(down.runs.load(Ordering::SeqCst), 1, "one transaction tried, as alone");
}

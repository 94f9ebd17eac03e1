//! Webhooks: endpoints, the event outbox, deliveries and their attempts.

use std::collections::BTreeSet;

use malipo_core::{EndpointId, EventId, Mode, OrgId, Timestamp};
use malipo_service::{write, EventsPage, ServiceError, Store, StoreError};
use malipo_webhooks::{Delivery, DeliveryState, Endpoint, Event, EventFilter, Summary};

use crate::fixtures::duplicate;
use crate::fixtures::*;

const COMPLETED: &str = "charge.completed";
const FAILED: &str = "charge.failed";

/// Whether a transaction ended with [`StoreError::Other`] (a foreign key, check constraint or
/// missing row).
fn is_other(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Other(_)))
}

fn get_endpoint(store: &dyn Store, id: &EndpointId) -> Option<Endpoint> {
    query(store, |tx| Ok(tx.endpoint(id)?))
}

fn get_event(store: &dyn Store, org_id: &OrgId, mode: Mode, id: &EventId) -> Option<Event> {
    query(store, |tx| Ok(tx.event(org_id, mode, id)?))
}

/// A delivery as stored (`lock_deliveries` locks, so it runs in a write transaction).
fn get_delivery(store: &dyn Store, id: &str) -> Option<Delivery> {
    commit(store, |tx| Ok(tx.lock_deliveries(&[id.to_owned()])?.pop()))
}

fn event_ids(events: &[Event]) -> Vec<EventId> {
    events.iter().map(|e| e.id.clone()).collect()
}

fn delivery_ids(deliveries: &[Delivery]) -> Vec<String> {
    deliveries.iter().map(|d| d.id.clone()).collect()
}

/// Endpoints round trip (every field, optional ones set and unset, either event filter) by id
/// alone; a duplicate id and an unknown organisation are refused; `update_endpoint` overwrites
/// exactly the mutable fields, from and to `None` too, and refuses a missing endpoint.
pub fn endpoints_round_trip_and_update(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let plain = endpoint(&org, Mode::Test, at(1));
    let full = Endpoint {
        url: "https://hooks.example.com/malipo?tenant=ä&x=1".into(),
        description: None,
        events: EventFilter::Kinds(vec![FAILED.into(), COMPLETED.into()]),
        enabled: false,
        secret: Vec::new(),
        previous_secret: Some((b"\x00old sealed\xff".to_vec(), Timestamp::from_micros(at(86_400).as_micros() + 7))),
        disabled_reason: Some("failing".into()),
        failing_since: Some(Timestamp::from_micros(at(-432_000).as_micros() + 3)),
        deleted_at: Some(at(3)),
        updated_at: at(3),
        ..endpoint(&org, Mode::Live, at(2))
    };
    commit(store, |tx| {
        tx.insert_endpoint(&plain)?;
        tx.insert_endpoint(&full)?;
        Ok(())
    });
    assert_eq!(get_endpoint(store, &plain.id), Some(plain.clone()));
    assert_eq!(get_endpoint(store, &full.id), Some(full.clone()), "every field round trips; deleted ones are found by id");
    assert_eq!(get_endpoint(store, &EndpointId::new()), None);

    let again = Endpoint { url: "https://other.example.com/".into(), ..plain.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_endpoint(&again)?)), duplicate());
    let orphan = Endpoint { org_id: OrgId::new(), ..endpoint(&org, Mode::Test, at(1)) };
    assert!(is_other(&refused(store, |tx| Ok(tx.insert_endpoint(&orphan)?))), "no such organisation");
    assert_eq!(get_endpoint(store, &orphan.id), None);

    // Every mutable field changes; the others are tampered with and must stay as inserted.
    let rotated = Endpoint {
        url: "https://hooks.example.com/v2".into(),
        description: Some("Orders, v2".into()),
        events: EventFilter::Kinds(vec![COMPLETED.into()]),
        enabled: false,
        secret: b"new sealed secret".to_vec(),
        previous_secret: Some((plain.secret.clone(), at(86_400))),
        disabled_reason: Some("gone".into()),
        failing_since: Some(at(5)),
        deleted_at: Some(at(9)),
        updated_at: at(9),
        ..plain.clone()
    };
    let tampered = |e: &Endpoint| Endpoint { org_id: OrgId::new(), mode: Mode::Live, created_at: at(-99), ..e.clone() };
    commit(store, |tx| Ok(tx.update_endpoint(&tampered(&rotated))?));
    assert_eq!(get_endpoint(store, &plain.id), Some(rotated));
    // And back to `None` everywhere.
    let cleared = Endpoint {
        url: "https://hooks.example.com/restored".into(),
        description: Some("restored".into()),
        events: EventFilter::All,
        enabled: true,
        secret: b"s".to_vec(),
        previous_secret: None,
        disabled_reason: None,
        failing_since: None,
        deleted_at: None,
        updated_at: at(10),
        ..full.clone()
    };
    commit(store, |tx| Ok(tx.update_endpoint(&tampered(&cleared))?));
    assert_eq!(get_endpoint(store, &full.id), Some(cleared));
    assert_eq!(get_endpoint(store, &plain.id).map(|e| e.url), Some("https://hooks.example.com/v2".to_owned()), "only the named one");

    let missing = endpoint(&org, Mode::Test, at(4));
    assert!(is_other(&refused(store, |tx| Ok(tx.update_endpoint(&missing)?))), "no such endpoint");
    assert_eq!(get_endpoint(store, &missing.id), None);
}

/// Within one transaction, `list_endpoints` answers what the transaction has written: an
/// endpoint inserted after a first listing is listed, one updated is listed as updated, and one
/// whose insert rolled back with its savepoint is not. (An adapter may remember a listing for
/// the transaction's later events, never past its own writes.)
pub fn list_endpoints_sees_the_transactions_own_writes(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let first = insert_endpoint(store, endpoint(&org, Mode::Test, at(1)));
    let second = endpoint(&org, Mode::Test, at(2));
    let undone = endpoint(&org, Mode::Test, at(3));
    let mut disabled = first.clone();
    disabled.enabled = false;
    disabled.disabled_reason = Some("test".into());
    let seen = write(store, |tx| {
        let mut seen = vec![tx.list_endpoints(&org.id, Mode::Test)?];
        tx.insert_endpoint(&second)?;
        seen.push(tx.list_endpoints(&org.id, Mode::Test)?);
        tx.update_endpoint(&disabled)?;
        seen.push(tx.list_endpoints(&org.id, Mode::Test)?);
        let rolled_back = tx.savepoint(&mut |tx| {
            tx.insert_endpoint(&undone)?;
            assert_eq!(tx.list_endpoints(&org.id, Mode::Test)?.len(), 3, "inside its savepoint");
            Err(ServiceError::Internal("undone".into()))
        });
        assert!(rolled_back.is_err());
        seen.push(tx.list_endpoints(&org.id, Mode::Test)?);
        Ok(seen)
    })
    .unwrap();
    assert_eq!(seen[0], vec![first.clone()]);
    assert_eq!(seen[1], vec![first, second.clone()]);
    assert_eq!(seen[2], vec![disabled.clone(), second.clone()]);
    assert_eq!(seen[3], vec![disabled.clone(), second.clone()], "the savepoint's endpoint went with it");
    assert_eq!(query(store, |tx| Ok(tx.list_endpoints(&org.id, Mode::Test)?)), vec![disabled, second]);
}

/// `list_endpoints` returns an organisation's endpoints of a mode that are not deleted, oldest
/// first.
pub fn list_endpoints_skips_deleted_and_other_orgs(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    let e1 = endpoint(&a, Mode::Test, at(1));
    let e2 = endpoint(&a, Mode::Test, at(2));
    let e3 = Endpoint { deleted_at: Some(at(4)), ..endpoint(&a, Mode::Test, at(3)) };
    let e4 = endpoint(&a, Mode::Test, at(5));
    let live = endpoint(&a, Mode::Live, at(6));
    let theirs = endpoint(&b, Mode::Test, at(7));
    commit(store, |tx| {
        for e in [&e4, &theirs, &e2, &e3, &live, &e1] {
            tx.insert_endpoint(e)?;
        }
        Ok(())
    });
    let list = |org: &OrgId, mode: Mode| query(store, |tx| Ok(tx.list_endpoints(org, mode)?));
    assert_eq!(list(&a.id, Mode::Test), vec![e1.clone(), e2.clone(), e4.clone()], "oldest first, deleted ones left out");
    assert_eq!(list(&a.id, Mode::Live), vec![live]);
    assert_eq!(list(&b.id, Mode::Test), vec![theirs]);
    assert_eq!(list(&b.id, Mode::Live), vec![]);
    assert_eq!(list(&OrgId::new(), Mode::Test), vec![]);

    let deleted = Endpoint { deleted_at: Some(at(8)), updated_at: at(8), ..e2 };
    commit(store, |tx| Ok(tx.update_endpoint(&deleted)?));
    assert_eq!(list(&a.id, Mode::Test), vec![e1, e4]);
}

/// Events round trip with their exact `data` bytes and summary, within their organisation and
/// mode only; a duplicate id and an unknown organisation are refused.
pub fn events_round_trip_scoped_by_org_and_mode(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    let full = Event { data: b"{\"note\":\"\xc3\xa9\"}\n\x00\xff ".to_vec(), ..event(&a, Mode::Test, COMPLETED, at(1)) };
    let bare = Event {
        data: Vec::new(),
        summary: Summary::default(),
        created_at: Timestamp::from_micros(at(2).as_micros() + 1),
        ..event(&a, Mode::Live, "payout.completed", at(2))
    };
    let partial = Event {
        summary: Summary { amount: None, currency: Some("UGX".into()), state: None, reference: Some("R ✓".into()) },
        ..event(&a, Mode::Test, FAILED, at(3))
    };
    // Two written together (`insert_events`), one alone: the same events.
    commit(store, |tx| {
        tx.insert_events(&[full.clone(), bare.clone()])?;
        Ok(tx.insert_event(&partial)?)
    });
    for e in [&full, &bare, &partial] {
        assert_eq!(get_event(store, &a.id, e.mode, &e.id).as_ref(), Some(e), "event {} round trips", e.id);
    }
    assert_eq!(get_event(store, &b.id, Mode::Test, &full.id), None, "another organisation's");
    assert_eq!(get_event(store, &a.id, Mode::Live, &full.id), None, "another mode's");
    assert_eq!(get_event(store, &a.id, Mode::Test, &bare.id), None, "another mode's");
    assert_eq!(get_event(store, &a.id, Mode::Test, &EventId::new()), None);

    let again = Event { kind: FAILED.into(), ..full.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_event(&again)?)), duplicate());
    // Together with a new one, a duplicate refuses the call, and its transaction writes neither.
    let fresh = event(&a, Mode::Test, COMPLETED, at(5));
    assert_eq!(refused(store, |tx| Ok(tx.insert_events(&[fresh.clone(), again.clone()])?)), duplicate());
    assert_eq!(get_event(store, &a.id, Mode::Test, &fresh.id), None);
    assert_eq!(get_event(store, &a.id, Mode::Test, &full.id), Some(full));
    let orphan = Event { org_id: OrgId::new(), ..event(&a, Mode::Test, COMPLETED, at(4)) };
    assert!(is_other(&refused(store, |tx| Ok(tx.insert_event(&orphan)?))), "no such organisation");
}

/// `list_events` returns an organisation's events of a mode oldest first (by id), with ids
/// strictly above the `after` cursor, of one kind when asked, at most `limit`.
pub fn list_events_pages_oldest_first(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    // Built in creation order (ids are time-ordered).
    let mine: Vec<Event> = (1..=6).map(|t| event(&a, Mode::Test, if t % 2 == 0 { FAILED } else { COMPLETED }, at(t))).collect();
    let live = event(&a, Mode::Live, COMPLETED, at(7));
    let theirs = event(&b, Mode::Test, COMPLETED, at(8));
    commit(store, |tx| {
        for e in mine.iter().rev().chain([&theirs, &live]) {
            tx.insert_event(e)?;
        }
        Ok(())
    });
    let list = |org: &OrgId, mode: Mode, kind: Option<&str>, after: Option<&EventId>, limit: usize| {
        query(store, |tx| Ok(tx.list_events(org, mode, kind, EventsPage::After(after), limit)?))
    };

    assert_eq!(list(&a.id, Mode::Test, None, None, 100), mine, "every event, oldest first, whole");
    assert_eq!(event_ids(&list(&a.id, Mode::Test, None, None, 2)), event_ids(&mine[..2]));
    assert_eq!(event_ids(&list(&a.id, Mode::Test, None, Some(&mine[1].id), 3)), event_ids(&mine[2..5]), "after is exclusive");
    assert_eq!(event_ids(&list(&a.id, Mode::Test, None, Some(&mine[4].id), 3)), event_ids(&mine[5..]));
    assert_eq!(list(&a.id, Mode::Test, None, Some(&mine[5].id), 3), vec![]);
    assert_eq!(list(&a.id, Mode::Test, None, None, 0), vec![]);

    let failed: Vec<Event> = mine.iter().filter(|e| e.kind == FAILED).cloned().collect();
    assert_eq!(event_ids(&list(&a.id, Mode::Test, Some(FAILED), None, 100)), event_ids(&failed));
    assert_eq!(event_ids(&list(&a.id, Mode::Test, Some(FAILED), Some(&mine[1].id), 1)), event_ids(&failed[1..2]), "kind and cursor");
    assert_eq!(list(&a.id, Mode::Test, Some("charge.expired"), None, 100), vec![]);
    assert_eq!(list(&a.id, Mode::Test, Some("charge"), None, 100), vec![], "kinds match exactly");

    assert_eq!(list(&a.id, Mode::Live, None, None, 100), vec![live.clone()]);
    assert_eq!(list(&a.id, Mode::Live, Some(FAILED), None, 100), vec![]);
    assert_eq!(list(&b.id, Mode::Test, None, None, 100), vec![theirs]);
    assert_eq!(list(&b.id, Mode::Live, None, None, 100), vec![]);
}

/// Deliveries insert and read back through `lock_deliveries`; a duplicate id, an unknown event or
/// endpoint and a next attempt that does not match the state are refused; `update_delivery`
/// overwrites exactly the mutable fields and refuses a missing delivery or a wrong state.
pub fn deliveries_insert_lock_update(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let ep = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let other_ep = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let ev = insert_event(store, event(&org, Mode::Test, COMPLETED, at(1)));
    let other_ev = insert_event(store, event(&org, Mode::Test, COMPLETED, at(1)));
    let d = delivery(&ev, &ep, at(1));
    commit(store, |tx| Ok(tx.insert_delivery(&d)?));
    assert_eq!(get_delivery(store, &d.id), Some(d.clone()));
    assert_eq!(get_delivery(store, &delivery_id()), None);

    assert_eq!(refused(store, |tx| Ok(tx.insert_delivery(&Delivery { attempts: 3, ..d.clone() })?)), duplicate());
    let unknown_event = Delivery { event_id: EventId::new(), ..delivery(&ev, &ep, at(1)) };
    let unknown_endpoint = Delivery { endpoint_id: EndpointId::new(), ..delivery(&ev, &ep, at(1)) };
    let pending_without_time = Delivery { next_attempt_at: None, ..delivery(&ev, &ep, at(1)) };
    let settled_with_time = Delivery { state: DeliveryState::Succeeded, ..delivery(&ev, &ep, at(1)) };
    let failed_with_time = Delivery { state: DeliveryState::Failed, ..delivery(&ev, &ep, at(1)) };
    for bad in [&unknown_event, &unknown_endpoint, &pending_without_time, &settled_with_time, &failed_with_time] {
        assert!(is_other(&refused(store, |tx| Ok(tx.insert_delivery(bad)?))), "{bad:?}");
        assert_eq!(get_delivery(store, &bad.id), None);
    }
    let done = insert_delivery(store, settled(delivery(&other_ev, &ep, at(1)), DeliveryState::Failed, 12, at(2)));
    assert_eq!(get_delivery(store, &done.id), Some(done.clone()), "a settled delivery round trips");

    // The immutable fields are tampered with and must stay as inserted.
    let tampered =
        |x: &Delivery| Delivery { event_id: other_ev.id.clone(), endpoint_id: other_ep.id.clone(), created_at: at(-50), ..x.clone() };
    let retried = Delivery { attempts: 1, next_attempt_at: Some(at(61)), updated_at: at(2), ..d.clone() };
    commit(store, |tx| Ok(tx.update_delivery(&tampered(&retried))?));
    assert_eq!(get_delivery(store, &d.id), Some(retried.clone()));
    let succeeded = settled(retried.clone(), DeliveryState::Succeeded, 2, at(61));
    commit(store, |tx| Ok(tx.update_delivery(&tampered(&succeeded))?));
    assert_eq!(get_delivery(store, &d.id), Some(succeeded.clone()));
    assert_eq!(get_delivery(store, &done.id), Some(done), "only the named delivery changes");

    let wrong = Delivery { next_attempt_at: Some(at(100)), ..succeeded.clone() };
    assert!(is_other(&refused(store, |tx| Ok(tx.update_delivery(&wrong)?))), "a settled delivery has no next attempt");
    let wrong = Delivery { state: DeliveryState::Pending, ..succeeded.clone() };
    assert!(is_other(&refused(store, |tx| Ok(tx.update_delivery(&wrong)?))), "a pending delivery has a next attempt");
    assert_eq!(get_delivery(store, &d.id), Some(succeeded));
    let missing = delivery(&ev, &ep, at(1));
    assert!(is_other(&refused(store, |tx| Ok(tx.update_delivery(&missing)?))), "no such delivery");

    // Several at once, as each in turn: the immutable fields stay, a repeated delivery ends as its
    // last write, and a missing or refused one refuses the call (its transaction writes nothing).
    let batch: Vec<Delivery> = (0..3).map(|i| insert_delivery(store, delivery(&other_ev, &other_ep, at(i)))).collect();
    let moved: Vec<Delivery> = batch
        .iter()
        .enumerate()
        .map(|(i, x)| Delivery { attempts: 1, next_attempt_at: Some(at(70 + i as i64)), updated_at: at(3), ..x.clone() })
        .collect();
    commit(store, |tx| Ok(tx.update_deliveries(&moved.iter().map(&tampered).collect::<Vec<_>>())?));
    for x in &moved {
        assert_eq!(get_delivery(store, &x.id), Some(x.clone()));
    }
    let last = settled(moved[1].clone(), DeliveryState::Succeeded, 2, at(80));
    commit(store, |tx| Ok(tx.update_deliveries(&[settled(moved[1].clone(), DeliveryState::Failed, 2, at(79)), last.clone()])?));
    assert_eq!(get_delivery(store, &moved[1].id), Some(last), "a repeated delivery ends as its last write");
    let wrong = Delivery { next_attempt_at: None, ..moved[2].clone() };
    for bad in
        [vec![Delivery { attempts: 9, ..moved[0].clone() }, missing.clone()], vec![Delivery { attempts: 9, ..moved[0].clone() }, wrong]]
    {
        assert!(is_other(&refused(store, |tx| Ok(tx.update_deliveries(&bad)?))), "{bad:?}");
        assert_eq!(get_delivery(store, &moved[0].id), Some(moved[0].clone()), "nothing of a refused call is written");
    }
}

/// `claim_due_deliveries` claims pending deliveries whose `next_attempt_at <= now` (any
/// organisation or mode), oldest due first, at most `limit`, moving their `next_attempt_at` to
/// the lease; a claimed delivery is not claimed again until its lease passes; settled
/// deliveries are never claimed.
pub fn claim_due_deliveries_leases(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    let ep_a = insert_endpoint(store, endpoint(&a, Mode::Test, at(0)));
    let ep_b = insert_endpoint(store, endpoint(&b, Mode::Live, at(0)));
    let ev_a = insert_event(store, event(&a, Mode::Test, COMPLETED, at(0)));
    let ev_b = insert_event(store, event(&b, Mode::Live, COMPLETED, at(0)));
    let due_at = |ev: &Event, ep: &Endpoint, t: i64| delivery(ev, ep, at(t));
    let d1 = due_at(&ev_a, &ep_a, 10);
    let d2 = due_at(&ev_a, &ep_a, 5);
    let d3 = due_at(&ev_a, &ep_a, 20);
    let d_other = due_at(&ev_b, &ep_b, 15);
    let later = due_at(&ev_a, &ep_a, 100);
    let succeeded = settled(due_at(&ev_a, &ep_a, 1), DeliveryState::Succeeded, 1, at(1));
    let failed = settled(due_at(&ev_b, &ep_b, 1), DeliveryState::Failed, 9, at(1));
    commit(store, |tx| {
        for d in [&d1, &d2, &d3, &d_other, &later, &succeeded, &failed] {
            tx.insert_delivery(d)?;
        }
        Ok(())
    });
    let claim = |now: i64, lease: i64, limit: usize| commit(store, |tx| Ok(tx.claim_due_deliveries(at(now), at(lease), limit)?));
    let next_attempt = |d: &Delivery| get_delivery(store, &d.id).and_then(|d| d.next_attempt_at);

    assert_eq!(claim(20, 80, 0), Vec::<String>::new(), "limit 0 claims nothing");
    assert_eq!(claim(20, 80, 2), vec![d2.id.clone(), d1.id.clone()], "oldest due first, at most limit");
    assert_eq!(next_attempt(&d2), Some(at(80)), "leased");
    assert_eq!(next_attempt(&d1), Some(at(80)));
    assert_eq!(next_attempt(&d3), Some(at(20)), "not claimed yet");
    assert_eq!(get_delivery(store, &d1.id), Some(Delivery { next_attempt_at: Some(at(80)), ..d1.clone() }), "only the lease changes");
    assert_eq!(claim(20, 80, 10), vec![d_other.id.clone(), d3.id.clone()], "every organisation and mode");
    assert_eq!(claim(20, 80, 10), Vec::<String>::new(), "claimed deliveries are not claimed again");
    assert_eq!(claim(79, 140, 10), Vec::<String>::new(), "before the lease passes");
    assert_eq!(next_attempt(&later), Some(at(100)));

    let again: BTreeSet<String> = claim(80, 140, 10).into_iter().collect();
    let expected: BTreeSet<String> = [&d1, &d2, &d3, &d_other].into_iter().map(|d| d.id.clone()).collect();
    assert_eq!(again, expected, "a lease that passed makes the delivery due again");
    assert_eq!(next_attempt(&d1), Some(at(140)));
    assert_eq!(claim(100, 200, 10), vec![later.id.clone()]);
    assert_eq!(claim(10_000, 20_000, 100).len(), 5, "every pending delivery, never a settled one");
    assert_eq!(get_delivery(store, &succeeded.id), Some(succeeded));
    assert_eq!(get_delivery(store, &failed.id), Some(failed));
}

/// `deliveries_of_event` returns an event's deliveries (any state) oldest first;
/// `pending_deliveries_of_endpoint` an endpoint's pending ones.
pub fn deliveries_of_event_and_pending_of_endpoint(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let (ep_a, ep_b, ep_c) = (
        insert_endpoint(store, endpoint(&org, Mode::Test, at(0))),
        insert_endpoint(store, endpoint(&org, Mode::Test, at(0))),
        insert_endpoint(store, endpoint(&org, Mode::Test, at(0))),
    );
    let ev1 = insert_event(store, event(&org, Mode::Test, COMPLETED, at(1)));
    let ev2 = insert_event(store, event(&org, Mode::Test, FAILED, at(2)));
    let created = |d: Delivery, t: i64| Delivery { created_at: at(t), updated_at: at(t), ..d };
    let e1_a = created(delivery(&ev1, &ep_a, at(10)), 1);
    let e1_b = settled(created(delivery(&ev1, &ep_b, at(10)), 2), DeliveryState::Succeeded, 1, at(3));
    let e1_c = settled(created(delivery(&ev1, &ep_c, at(10)), 3), DeliveryState::Failed, 12, at(4));
    let e2_a = created(delivery(&ev2, &ep_a, at(10)), 4);
    let e2_b = created(delivery(&ev2, &ep_b, at(10)), 5);
    commit(store, |tx| {
        for d in [&e2_b, &e1_c, &e2_a, &e1_a, &e1_b] {
            tx.insert_delivery(d)?;
        }
        Ok(())
    });
    let of_event = |id: &EventId| query(store, |tx| Ok(tx.deliveries_of_event(id)?));
    let pending = |id: &EndpointId| -> BTreeSet<String> {
        query(store, |tx| Ok(tx.pending_deliveries_of_endpoint(id)?)).into_iter().map(|d| d.id).collect()
    };
    assert_eq!(of_event(&ev1.id), vec![e1_a.clone(), e1_b.clone(), e1_c.clone()], "whole, oldest first");
    assert_eq!(delivery_ids(&of_event(&ev2.id)), delivery_ids(&[e2_a.clone(), e2_b.clone()]));
    assert_eq!(of_event(&EventId::new()), vec![]);

    assert_eq!(query(store, |tx| Ok(tx.pending_deliveries_of_endpoint(&ep_b.id)?)), vec![e2_b.clone()], "whole");
    assert_eq!(pending(&ep_a.id), [e1_a.id.clone(), e2_a.id.clone()].into_iter().collect());
    assert_eq!(pending(&ep_c.id), BTreeSet::new(), "failed deliveries are not pending");
    assert_eq!(pending(&EndpointId::new()), BTreeSet::new());

    let done = settled(e2_a.clone(), DeliveryState::Succeeded, 1, at(11));
    commit(store, |tx| Ok(tx.update_delivery(&done)?));
    assert_eq!(pending(&ep_a.id), [e1_a.id.clone()].into_iter().collect());
}

/// `attempts_of_event` returns every attempt at any delivery of the event, oldest first, with
/// every field (an answer without an error, an error without an answer, both); an attempt of an
/// unknown delivery is refused.
pub fn attempts_of_event_oldest_first(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let ep_a = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let ep_b = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let ev1 = insert_event(store, event(&org, Mode::Test, COMPLETED, at(1)));
    let ev2 = insert_event(store, event(&org, Mode::Test, COMPLETED, at(2)));
    let to_a = insert_delivery(store, delivery(&ev1, &ep_a, at(1)));
    let to_b = insert_delivery(store, delivery(&ev1, &ep_b, at(1)));
    let other = insert_delivery(store, delivery(&ev2, &ep_a, at(2)));

    let timeout = insert_attempt(store, attempt(&to_a, at(1), None, Some("timeout after 10 s"), 10_000));
    let ok = insert_attempt(store, attempt(&to_b, Timestamp::from_micros(at(1).as_micros() + 250_001), Some(200), None, 0));
    let theirs = insert_attempt(store, attempt(&other, at(2), Some(410), None, 35));
    let both = insert_attempt(store, attempt(&to_a, at(61), Some(500), Some("Internal Server Error, «body» cut"), 1_234));
    let of_event = |id: &EventId| query(store, |tx| Ok(tx.attempts_of_event(id)?));
    assert_eq!(of_event(&ev1.id), vec![timeout, ok, both], "oldest first, every field");
    assert_eq!(of_event(&ev2.id), vec![theirs]);
    assert_eq!(of_event(&EventId::new()), vec![]);

    let orphan = attempt(&delivery(&ev1, &ep_a, at(1)), at(3), Some(200), None, 5);
    assert!(is_other(&refused(store, |tx| Ok(tx.insert_attempts(std::slice::from_ref(&orphan))?))), "no such delivery");
    assert_eq!(of_event(&ev1.id).len(), 3);
}

/// The batch reads and writes of the delivery worker: `lock_deliveries` and `events_by_id` find
/// what exists (missing ids skipped, repeated ids once, any organisation: the caller checks),
/// deliveries in id order; `insert_attempts` appends in order, and a batch with one refused
/// attempt, even after a first full statement of them, stores none of them.
pub fn batch_reads_and_attempts(store: &dyn Store) {
    let a = insert_org(store, "Duka", at(0));
    let b = insert_org(store, "Soko", at(0));
    let ep_a = insert_endpoint(store, endpoint(&a, Mode::Test, at(0)));
    let ep_b = insert_endpoint(store, endpoint(&b, Mode::Live, at(0)));
    let ev_a = insert_event(store, event(&a, Mode::Test, COMPLETED, at(1)));
    let ev_b = insert_event(store, event(&b, Mode::Live, FAILED, at(2)));
    let mut made: Vec<Delivery> = (0..5).map(|i| insert_delivery(store, delivery(&ev_a, &ep_a, at(i)))).collect();
    made.push(insert_delivery(store, delivery(&ev_b, &ep_b, at(3))));
    let mut by_id = made.clone();
    by_id.sort_by(|x, y| x.id.cmp(&y.id));

    let asked: Vec<String> = made.iter().rev().map(|d| d.id.clone()).chain([delivery_id(), made[0].id.clone()]).collect();
    assert_eq!(commit(store, |tx| Ok(tx.lock_deliveries(&asked)?)), by_id, "every one that exists, once, in id order");
    assert_eq!(commit(store, |tx| Ok(tx.lock_deliveries(&[])?)), vec![]);
    assert_eq!(commit(store, |tx| Ok(tx.lock_deliveries(&[delivery_id()])?)), vec![]);

    let mut both = vec![ev_a.clone(), ev_b.clone()];
    both.sort_by(|x, y| x.id.cmp(&y.id));
    let asked = [ev_b.id.clone(), EventId::new(), ev_a.id.clone(), ev_b.id.clone()];
    assert_eq!(query(store, |tx| Ok(tx.events_by_id(&asked)?)), both, "both organisations' events, once each");
    assert_eq!(query(store, |tx| Ok(tx.events_by_id(&[EventId::new()])?)), vec![]);

    let attempts: Vec<_> =
        made[..5].iter().enumerate().map(|(i, d)| attempt(d, at(10 + i64::try_from(i).unwrap()), Some(200), None, 3)).collect();
    commit(store, |tx| Ok(tx.insert_attempts(&attempts)?));
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_event(&ev_a.id)?)), attempts, "in order, every field");
    commit(store, |tx| Ok(tx.insert_attempts(&[])?));

    // More attempts than one statement takes, the last of an unknown delivery: none is stored,
    // and the transaction goes on.
    let orphan = delivery(&ev_b, &ep_b, at(3));
    let mut many: Vec<_> = (0..300).map(|i| attempt(&made[5], at(100 + i), Some(500), None, 1)).collect();
    many.push(attempt(&orphan, at(400), Some(200), None, 1));
    let left = commit(store, |tx| {
        assert!(tx.insert_attempts(&many).is_err(), "an attempt of an unknown delivery refuses the batch");
        Ok(tx.attempts_of_event(&ev_b.id)?)
    });
    assert_eq!(left, vec![], "none of the batch in the transaction");
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_event(&ev_b.id)?)), vec![], "none stored");
    many.pop();
    commit(store, |tx| Ok(tx.insert_attempts(&many)?));
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_event(&ev_b.id)?)), many);
}

/// `purge_events` deletes the events created strictly before the instant with their deliveries
/// and attempts, counts the events, and leaves everything else (endpoints, newer events).
pub fn purge_events_removes_old_events_with_their_deliveries(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let ep = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let ep2 = insert_endpoint(store, endpoint(&org, Mode::Live, at(0)));
    let old = insert_event(store, event(&org, Mode::Test, COMPLETED, at(1)));
    let old_bare = insert_event(store, event(&org, Mode::Live, FAILED, at(2)));
    let at_cutoff = insert_event(store, event(&org, Mode::Test, COMPLETED, at(5)));
    let new = insert_event(store, event(&org, Mode::Test, COMPLETED, at(6)));
    let old_pending = insert_delivery(store, delivery(&old, &ep, at(100)));
    let old_done = insert_delivery(store, settled(delivery(&old, &ep2, at(1)), DeliveryState::Succeeded, 1, at(1)));
    let kept_cutoff = insert_delivery(store, delivery(&at_cutoff, &ep, at(100)));
    let kept_new = insert_delivery(store, delivery(&new, &ep, at(100)));
    insert_attempt(store, attempt(&old_pending, at(1), None, Some("connection refused"), 3));
    insert_attempt(store, attempt(&old_done, at(1), Some(204), None, 40));
    let kept_attempt = insert_attempt(store, attempt(&kept_new, at(6), Some(500), None, 41));

    assert_eq!(commit(store, |tx| Ok(tx.purge_events(at(1))?)), 0, "nothing older than the first event");
    assert_eq!(commit(store, |tx| Ok(tx.purge_events(at(5))?)), 2, "two events before the cut-off");

    assert_eq!(get_event(store, &org.id, Mode::Test, &old.id), None, "purged");
    assert_eq!(get_event(store, &org.id, Mode::Live, &old_bare.id), None, "purged");
    assert_eq!(query(store, |tx| Ok(tx.deliveries_of_event(&old.id)?)), vec![]);
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_event(&old.id)?)), vec![]);
    assert_eq!(get_delivery(store, &old_pending.id), None);
    assert_eq!(get_delivery(store, &old_done.id), None);

    assert_eq!(get_event(store, &org.id, Mode::Test, &at_cutoff.id), Some(at_cutoff.clone()), "created at the cut-off: kept");
    assert_eq!(get_event(store, &org.id, Mode::Test, &new.id), Some(new.clone()));
    assert_eq!(query(store, |tx| Ok(tx.deliveries_of_event(&at_cutoff.id)?)), vec![kept_cutoff.clone()]);
    assert_eq!(query(store, |tx| Ok(tx.deliveries_of_event(&new.id)?)), vec![kept_new.clone()]);
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_event(&new.id)?)), vec![kept_attempt]);
    assert_eq!(get_endpoint(store, &ep.id), Some(ep.clone()), "endpoints are kept");
    assert_eq!(get_endpoint(store, &ep2.id), Some(ep2));
    let pending: BTreeSet<String> = query(store, |tx| Ok(tx.pending_deliveries_of_endpoint(&ep.id)?)).into_iter().map(|d| d.id).collect();
    assert_eq!(pending, [kept_cutoff.id.clone(), kept_new.id.clone()].into_iter().collect());
    let claimed: BTreeSet<String> = commit(store, |tx| Ok(tx.claim_due_deliveries(at(1_000), at(2_000), 10)?)).into_iter().collect();
    assert_eq!(claimed, [kept_cutoff.id, kept_new.id].into_iter().collect(), "purged deliveries are never claimed");

    assert_eq!(commit(store, |tx| Ok(tx.purge_events(at(5))?)), 0, "already purged");
    let reused = insert_event(store, Event { created_at: at(3), ..old.clone() });
    assert_eq!(get_event(store, &org.id, Mode::Test, &old.id), Some(reused), "a purged id is free again");
    assert_eq!(commit(store, |tx| Ok(tx.purge_events(at(7))?)), 3);
    assert_eq!(query(store, |tx| Ok(tx.list_events(&org.id, Mode::Test, None, EventsPage::After(None), 100)?)), vec![]);
}

/// A closure that returns `Err` after every kind of webhook write leaves the store as it was.
pub fn failed_closure_rolls_back_webhook_writes(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let ep = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let ev = insert_event(store, event(&org, Mode::Test, COMPLETED, at(1)));
    let d = insert_delivery(store, delivery(&ev, &ep, at(10)));
    let first = insert_attempt(store, attempt(&d, at(1), Some(500), None, 12));

    let new_ep = endpoint(&org, Mode::Test, at(2));
    let new_ev = event(&org, Mode::Test, FAILED, at(2));
    let new_d = delivery(&new_ev, &new_ep, at(2));
    let new_attempt = attempt(&new_d, at(2), Some(200), None, 7);
    let disabled = Endpoint { enabled: false, disabled_reason: Some("gone".into()), updated_at: at(2), ..ep.clone() };
    let retried = Delivery { attempts: 1, next_attempt_at: Some(at(70)), updated_at: at(2), ..d.clone() };

    let err = refused(store, |tx| {
        tx.insert_endpoint(&new_ep)?;
        tx.update_endpoint(&disabled)?;
        tx.insert_event(&new_ev)?;
        tx.insert_delivery(&new_d)?;
        tx.update_delivery(&retried)?;
        tx.insert_attempts(std::slice::from_ref(&new_attempt))?;
        assert_eq!(tx.claim_due_deliveries(at(100), at(200), 10)?.len(), 2);
        // Every write is visible inside the transaction.
        assert_eq!(tx.endpoint(&ep.id)?, Some(disabled.clone()));
        assert_eq!(tx.attempts_of_event(&new_ev.id)?, vec![new_attempt.clone()]);
        assert_eq!(tx.purge_events(at(100))?, 2);
        assert_eq!(tx.event(&org.id, Mode::Test, &ev.id)?, None);
        Err::<(), _>(ServiceError::InvalidState("abort".into()))
    });
    assert_eq!(err, ServiceError::InvalidState("abort".into()));

    assert_eq!(get_endpoint(store, &ep.id), Some(ep.clone()));
    assert_eq!(get_endpoint(store, &new_ep.id), None);
    assert_eq!(query(store, |tx| Ok(tx.list_endpoints(&org.id, Mode::Test)?)), vec![ep.clone()]);
    assert_eq!(get_event(store, &org.id, Mode::Test, &ev.id), Some(ev.clone()));
    assert_eq!(get_event(store, &org.id, Mode::Test, &new_ev.id), None);
    assert_eq!(get_delivery(store, &d.id), Some(d.clone()), "neither updated nor leased");
    assert_eq!(get_delivery(store, &new_d.id), None);
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_event(&ev.id)?)), vec![first]);
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_event(&new_ev.id)?)), vec![]);

    // The store still works: the same writes now commit.
    commit(store, |tx| {
        tx.insert_endpoint(&new_ep)?;
        tx.insert_event(&new_ev)?;
        tx.insert_delivery(&new_d)?;
        tx.insert_attempts(std::slice::from_ref(&new_attempt))?;
        Ok(())
    });
    assert_eq!(query(store, |tx| Ok(tx.deliveries_of_event(&new_ev.id)?)), vec![new_d]);
}

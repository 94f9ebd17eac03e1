//! The console's reads of charges: Home's totals by day and state, and a charge's page (its
//! events, their deliveries and attempts).

use malipo_charges::{Charge, ChargeState};
use malipo_core::{EventId, MinorUnit, Mode, Timestamp};
use malipo_ledger::JournalKind;
use malipo_service::{ChargeDayTotal, Store, DAY_MICROS};
use malipo_webhooks::{DeliveryState, Event};

use crate::fixtures::*;

/// `T0 + days` days and `seconds` seconds.
fn day_at(days: i64, seconds: i64) -> Timestamp {
    Timestamp::from_micros(at(seconds).as_micros() + days * DAY_MICROS)
}

fn sorted(mut v: Vec<ChargeDayTotal>) -> Vec<ChargeDayTotal> {
    v.sort_by_key(|t| t.day);
    v
}

/// A day's total: `(count, amount)` created, `(count, amount)` of them completed.
fn total(day: u32, created: (u64, i64), completed: (u64, i64)) -> ChargeDayTotal {
    ChargeDayTotal {
        day,
        count: created.0,
        amount: MinorUnit::new(created.1),
        completed: completed.0,
        completed_amount: MinorUnit::new(completed.1),
    }
}

/// `charge_day_totals` counts and sums an organisation's charges of one mode by day (of
/// `DAY_MICROS` from `from`), with the completed ones among them: `from` inclusive, the last day's end exclusive; other
/// organisations, the other mode, cash-outs and charges outside the days are not counted.
pub fn charge_day_totals_count_by_day_and_state(store: &dyn Store) {
    insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let other = insert_merchant(store, "Soko", Mode::Test);
    let live = insert_account(store, org_account(&m.org, Mode::Live, malipo_ledger::AccountKind::Collection, at(0)));
    let float = insert_account(store, org_account(&m.org, Mode::Test, malipo_ledger::AccountKind::AgentFloat, at(0)));
    let payer = msisdn("254712000050");
    // Only its id is needed (a charge's transaction is no foreign key).
    let paid = journal(Mode::Test, KES, JournalKind::Charge, &[(&m.payout.id, -100), (&m.collection.id, 100)], at(0));
    let make = |account: &malipo_ledger::Account, amount: i64, when: Timestamp| charge(account, &payer, amount, when);
    let done = |c: Charge| {
        let when = c.created_at.plus_seconds(5);
        completed(c, &paid, when)
    };
    let charges = vec![
        // Before the run: not counted.
        make(&m.collection, 1, Timestamp::from_micros(day_at(0, 0).as_micros() - 1)),
        // Day 0: from inclusive.
        done(make(&m.collection, 1_000, day_at(0, 0))),
        done(make(&m.collection, 2_000, day_at(0, 3_600))),
        in_state(make(&m.collection, 400, day_at(0, 7_200)), ChargeState::Failed),
        // Day 1: nothing. Day 2: the day's last microsecond.
        make(&m.collection, 700, Timestamp::from_micros(day_at(3, 0).as_micros() - 1)),
        done(make(&m.collection, 5_000, day_at(2, 10))),
        // After the run (3 days): not counted.
        done(make(&m.collection, 9_000, day_at(3, 0))),
        // Another organisation, the live mode, a cash-out: not counted.
        done(make(&other.collection, 8_000, day_at(0, 10))),
        done(make(&live, 8_000, day_at(0, 10))),
        cash_out(&float, &payer, 8_000, day_at(0, 10)),
    ];
    commit(store, |tx| {
        for c in &charges {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let totals = |org: &malipo_core::OrgId, mode: Mode, from: Timestamp, days: u32| {
        sorted(query(store, |tx| Ok(tx.charge_day_totals(org, mode, from, days)?)))
    };
    assert_eq!(totals(&m.org.id, Mode::Test, day_at(0, 0), 3), vec![total(0, (3, 3_400), (2, 3_000)), total(2, (2, 5_700), (1, 5_000))]);
    assert_eq!(totals(&m.org.id, Mode::Test, day_at(1, 0), 1), vec![], "a day without charges has no totals");
    assert_eq!(totals(&m.org.id, Mode::Test, day_at(2, 0), 2), vec![total(0, (2, 5_700), (1, 5_000)), total(1, (1, 9_000), (1, 9_000))]);
    assert_eq!(totals(&m.org.id, Mode::Live, day_at(0, 0), 3), vec![total(0, (1, 8_000), (1, 8_000))]);
    assert_eq!(totals(&m.org.id, Mode::Test, day_at(0, 0), 0), vec![]);
}

/// `charge_day_totals` follows charges as they move: a charge counts as completed once it is,
/// whether it was inserted alone or with others and whichever transaction moved it; days that start on
/// the hour and days that start half past one (a country whose offset is not whole hours) agree
/// with the charges themselves.
pub fn charge_day_totals_follow_state_changes(store: &dyn Store) {
    insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payer = msisdn("254712000051");
    let paid = journal(Mode::Test, KES, JournalKind::Charge, &[(&m.payout.id, -100), (&m.collection.id, 100)], at(0));
    let alone = charge(&m.collection, &payer, 1_000, at(60));
    let grouped = vec![charge(&m.collection, &payer, 2_000, at(1_800)), charge(&m.collection, &payer, 3_000, at(5_400))];
    commit(store, |tx| tx.insert_charge(&alone).map_err(Into::into));
    commit(store, |tx| tx.insert_charges(&grouped).map_err(Into::into));
    let totals = |from: Timestamp, days: u32| sorted(query(store, |tx| Ok(tx.charge_day_totals(&m.org.id, Mode::Test, from, days)?)));
    let half_past = Timestamp::from_micros(at(-1_800).as_micros());
    assert_eq!(totals(at(0), 1), vec![total(0, (3, 6_000), (0, 0))]);
    assert_eq!(totals(half_past, 1), vec![total(0, (3, 6_000), (0, 0))]);

    // Each move in its own transaction: pending → completed, pending → failed, and an update
    // that leaves the state as it was.
    commit(store, |tx| tx.update_charge(&completed(alone.clone(), &paid, at(70))).map_err(Into::into));
    commit(store, |tx| tx.update_charge(&in_state(grouped[0].clone(), ChargeState::Failed)).map_err(Into::into));
    commit(store, |tx| tx.update_charge(&Charge { updated_at: at(90), ..grouped[1].clone() }).map_err(Into::into));
    let expected = vec![total(0, (3, 6_000), (1, 1_000))];
    assert_eq!(totals(at(0), 1), expected);
    assert_eq!(totals(half_past, 1), expected);
    // Only the charges of the days asked for: the one created at 00:01 is before 00:30's start
    // (a day read from the charges), and before 01:00's (one read from the hours).
    assert_eq!(totals(Timestamp::from_micros(at(1_800).as_micros()), 1), vec![total(0, (2, 5_000), (0, 0))]);
    assert_eq!(totals(at(3_600), 1), vec![total(0, (1, 3_000), (0, 0))]);
    assert_eq!(totals(day_at(1, 0), 1), vec![]);

    // Completed, then (were it ever) no longer: the count follows both ways.
    commit(store, |tx| tx.update_charge(&completed(grouped[1].clone(), &paid, at(100))).map_err(Into::into));
    assert_eq!(totals(at(0), 1), vec![total(0, (3, 6_000), (2, 4_000))]);
    assert_eq!(totals(half_past, 1), vec![total(0, (3, 6_000), (2, 4_000))]);
    commit(store, |tx| tx.update_charge(&grouped[1]).map_err(Into::into));
    assert_eq!(totals(at(0), 1), expected);

    // A move undone in a rolled-back transaction leaves the totals as they were.
    let undone: Result<(), malipo_service::ServiceError> = store.run(&mut |tx| {
        tx.update_charge(&completed(grouped[1].clone(), &paid, at(95)))?;
        Err(malipo_service::ServiceError::Internal("rolled back".into()))
    });
    assert!(undone.is_err());
    assert_eq!(totals(at(0), 1), expected);
}

/// `events_of_object` reads one object's events of an organisation and mode, oldest first, at
/// most `limit`: never another object's, organisation's or mode's.
pub fn events_of_object_oldest_first_in_scope(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let other = insert_org(store, "Soko", at(0));
    let first = insert_event(store, event(&org, Mode::Test, "charge.authorised", at(1)));
    let object = first.object_id.clone();
    let of = |e: Event| Event { object_id: object.clone(), ..e };
    let second = insert_event(store, of(event(&org, Mode::Test, "charge.completed", at(2))));
    let unrelated = insert_event(store, event(&org, Mode::Test, "charge.completed", at(2)));
    insert_event(store, of(event(&org, Mode::Live, "charge.completed", at(3))));
    insert_event(store, of(event(&other, Mode::Test, "charge.completed", at(3))));
    let read = |org: &malipo_core::OrgId, mode: Mode, object: &str, limit: usize| {
        query(store, |tx| Ok(tx.events_of_object(org, mode, object, limit)?))
    };
    assert_eq!(read(&org.id, Mode::Test, &object, 10), vec![first.clone(), second], "oldest first, every field");
    assert_eq!(read(&org.id, Mode::Test, &object, 1), vec![first]);
    assert_eq!(read(&org.id, Mode::Test, &unrelated.object_id, 10), vec![unrelated]);
    assert_eq!(read(&org.id, Mode::Test, "ch_nothing", 10), vec![]);
}

/// `deliveries_of_events` and `attempts_of_events` read several events' deliveries (oldest
/// first) and attempts (in the order recorded) at once: repeated and unknown ids change nothing,
/// other events' are not read.
pub fn deliveries_and_attempts_of_several_events(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let ep_a = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let ep_b = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let ev1 = insert_event(store, event(&org, Mode::Test, "charge.authorised", at(1)));
    let ev2 = insert_event(store, event(&org, Mode::Test, "charge.completed", at(2)));
    let ev3 = insert_event(store, event(&org, Mode::Test, "charge.completed", at(3)));
    let d2 = insert_delivery(store, delivery(&ev2, &ep_a, at(2)));
    let d1 = insert_delivery(store, delivery(&ev1, &ep_a, at(1)));
    let d1b = insert_delivery(store, delivery(&ev1, &ep_b, at(1)));
    let theirs = insert_delivery(store, delivery(&ev3, &ep_a, at(3)));
    let a1 = insert_attempt(store, attempt(&d2, at(2), Some(500), Some("Internal Server Error"), 120));
    let a2 = insert_attempt(store, attempt(&d1, at(4), None, Some("connection refused"), 3));
    insert_attempt(store, attempt(&theirs, at(4), Some(200), None, 9));
    let a3 = insert_attempt(store, attempt(&d2, at(5), Some(200), None, 40));
    commit(store, |tx| Ok(tx.update_delivery(&settled(d2.clone(), DeliveryState::Succeeded, 2, at(5)))?));

    let asked = [ev2.id.clone(), ev1.id.clone(), EventId::new(), ev2.id.clone()];
    let deliveries = query(store, |tx| Ok(tx.deliveries_of_events(&asked)?));
    let mut expected = vec![d1.clone(), d1b.clone(), settled(d2.clone(), DeliveryState::Succeeded, 2, at(5))];
    expected.sort_by(|x, y| (x.created_at, &x.id).cmp(&(y.created_at, &y.id)));
    assert_eq!(deliveries, expected, "oldest first, as stored now");
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_events(&asked)?)), vec![a1, a2, a3], "in the order recorded, every field");
    assert_eq!(query(store, |tx| Ok(tx.deliveries_of_events(&[])?)), vec![]);
    assert_eq!(query(store, |tx| Ok(tx.attempts_of_events(&[EventId::new()])?)), vec![]);
}

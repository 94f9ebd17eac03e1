//! The console's reads of charges: Home's day-by-day summary in the country's local days, and
//! a charge's state history from its events.

use malipo_auth::OrgKind;
use malipo_charges::ChargeState;
use malipo_core::{MinorUnit, Mode};
use malipo_service::{ServiceConfig, ServiceError};

use crate::support::{number, World};

fn settle(world: &World) {
    while world.platform.processing().process_due(100).unwrap() > 0 {}
}

#[test]
fn days_count_charges_by_the_countrys_local_day_today_last() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    // The world starts at 12:00 in Nairobi (UTC+3): 23:30 local is 11.5 hours on, 00:30 the next day 12.5.
    world.advance(41_400);
    let late = world.charge(&shop, &number("0000"), "100.00").unwrap();
    world.charge(&shop, &number("1003"), "7.00").unwrap();
    world.advance(5);
    settle(&world);
    world.advance(3_600 - 5);
    let early = world.charge(&shop, &number("0000"), "250.00").unwrap();
    world.advance(5);
    settle(&world);

    let days = world.platform.charges().days(&shop, 3).unwrap();
    let dates: Vec<String> = days.iter().map(|d| d.date.to_string()).collect();
    assert_eq!(dates, ["2026-11-23", "2026-11-24", "2026-11-25"], "the local dates, today last");
    assert_eq!((days[0].count, days[0].amount), (0, MinorUnit::ZERO));
    assert_eq!((days[1].count, days[1].amount), (2, MinorUnit::new(10_700)), "23:30 local is the 24th");
    assert_eq!((days[1].completed, days[1].completed_amount), (1, MinorUnit::new(10_000)), "the failed one is not completed");
    assert_eq!((days[2].count, days[2].completed, days[2].completed_amount), (1, 1, MinorUnit::new(25_000)), "00:30 is the 25th");
    assert_eq!(world.reload(&shop, &late).state, ChargeState::Completed);
    assert_eq!(world.reload(&shop, &early).state, ChargeState::Completed);
    assert_eq!(world.platform.charges().days(&shop, 14).unwrap().len(), 14);
    assert!(matches!(world.platform.charges().days(&shop, 367), Err(ServiceError::Validation(_))));
}

#[test]
fn activity_is_the_history_from_the_charges_events_in_its_organisation_and_mode_only() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let charge = world.charge(&shop, &number("0000"), "100.00").unwrap();
    let pending = world.platform.charges().activity(&shop, charge.id.as_str()).unwrap();
    assert_eq!(pending.history.iter().map(|s| s.state).collect::<Vec<_>>(), [ChargeState::Pending]);
    assert_eq!(pending.history[0].at, charge.created_at);
    assert!(pending.deliveries.is_empty());

    world.advance(3);
    settle(&world);
    let done = world.platform.charges().activity(&shop, charge.id.as_str()).unwrap();
    let states: Vec<ChargeState> = done.history.iter().map(|s| s.state).collect();
    assert_eq!(states, [ChargeState::Pending, ChargeState::Authorised, ChargeState::Completed]);
    assert_eq!(done.history[2].at, world.now());
    assert!(done.deliveries.is_empty(), "no endpoint, no deliveries");

    let other = world.org(OrgKind::Merchant, Mode::Test);
    assert!(matches!(world.platform.charges().activity(&other, charge.id.as_str()), Err(ServiceError::NotFound)));
    let live = world.org(OrgKind::Merchant, Mode::Live);
    assert!(matches!(world.platform.charges().activity(&live, charge.id.as_str()), Err(ServiceError::NotFound)));
    assert!(matches!(world.platform.charges().activity(&shop, "nonsense"), Err(ServiceError::NotFound)));
}

#[test]
fn a_finished_day_is_read_again_while_any_of_its_charges_can_still_move() {
    let world = World::with_config(ServiceConfig { charge_ttl_seconds: 3_600, ..ServiceConfig::default() });
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    // 23:58 in Nairobi: one charge completes, one waits for the customer.
    world.advance(43_080);
    world.charge(&shop, &number("0000"), "100.00").unwrap();
    let waiting = world.charge(&shop, &number("1009"), "40.00").unwrap();
    world.advance(5);
    settle(&world);
    // Ten minutes into the next day: yesterday has ended, with a charge still pending.
    world.advance(600);
    let seen = world.platform.charges().days(&shop, 2).unwrap();
    assert_eq!((seen[0].count, seen[0].completed), (2, 1));
    assert_eq!(world.platform.charges().days(&shop, 2).unwrap(), seen, "the same, read again");
    // The customer approves it now: yesterday is read again, not kept as it was.
    world.simulate(&shop, waiting.id.as_str(), "approve", "POST /sandbox").unwrap();
    settle(&world);
    assert_eq!(world.reload(&shop, &waiting).state, ChargeState::Completed);
    let later = world.platform.charges().days(&shop, 2).unwrap();
    assert_eq!((later[0].count, later[0].completed, later[0].completed_amount), (2, 2, MinorUnit::new(14_000)));
    assert_eq!(later, world.platform.charges().days(&shop, 2).unwrap(), "all final now: kept, and the same");
    // Today's charges are always read.
    world.charge(&shop, &number("0000"), "5.00").unwrap();
    assert_eq!(world.platform.charges().days(&shop, 2).unwrap()[1].count, 1);
}

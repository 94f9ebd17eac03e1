//! Webhook deliveries: what a receiver's answer does to the schedule (retry, `Retry-After`,
//! success, `410 Gone`). The sender is not needed here: these rules take its outcome as input
//! (the app's delivery worker is tested with a mock sender).

use std::time::Duration;

use malipo_auth::{OrgKind, Principal};
use malipo_core::Mode;
use malipo_service::{CreateEndpoint, DeliveryJob, NewEndpoint, SendOutcome};
use malipo_webhooks::DeliveryState;

use crate::support::{idem, number, World};

/// A test merchant with an endpoint for `charge.completed`, and one completed charge: one
/// delivery due now. Returns the endpoint's id.
fn one_due_delivery(world: &World) -> (Principal, String) {
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let new = NewEndpoint { url: "https://hooks.example.com/malipo".into(), events: vec!["charge.completed".into()], description: None };
    let endpoint: CreateEndpoint = world.platform.parse(&shop, &new).unwrap();
    let created = world.platform.webhooks().create_endpoint(&shop, &endpoint, &idem(&shop, "POST /webhooks")).unwrap();
    let endpoint = created.value.endpoint.id.to_string();
    let charge = world.charge(&shop, &number("0000"), "150.00").unwrap();
    world.simulate(&shop, charge.id.as_str(), "approve", "POST /sandbox").unwrap();
    (shop, endpoint)
}

fn claim(world: &World) -> Vec<DeliveryJob> {
    world.platform.deliveries().claim(10).unwrap()
}

fn answered(status: u16, retry_after: Option<u64>) -> SendOutcome {
    SendOutcome::Answered { status, retry_after: retry_after.map(Duration::from_secs) }
}

#[test]
fn a_job_is_prepared_and_claimed_once_until_its_lease_lapses() {
    let world = World::new();
    let (_, endpoint) = one_due_delivery(&world);
    let jobs = claim(&world);
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.url, "https://hooks.example.com/malipo");
    assert_eq!(job.endpoint_id.as_str(), endpoint);
    // What the sender signs with: the event (its id is the `webhook-id`), the time now and the
    // endpoint's secret (the HTTP channel renders and signs the request itself).
    assert_eq!(job.event.id, job.event_id);
    assert_eq!(job.event.kind, "charge.completed");
    assert_eq!(job.timestamp, world.now().as_unix_seconds());
    assert_eq!(job.previous_secret, None, "no rotation");
    assert!(claim(&world).is_empty(), "claimed: no one else gets it");
    // Nobody recorded an outcome (a crashed sender): after the send timeout (15 s) and the
    // lease margin (30 s), it is due again.
    world.advance(15 + 30);
    assert_eq!(claim(&world).len(), 1, "the lapsed lease is claimed again");
}

#[test]
fn a_failure_is_retried_on_the_schedule_or_after_retry_after_whichever_is_later() {
    let world = World::new();
    let (shop, _) = one_due_delivery(&world);
    let job = claim(&world).remove(0);
    world.platform.deliveries().record_attempt(&job, &answered(500, None), 12).unwrap();
    world.advance(4);
    assert!(claim(&world).is_empty(), "the schedule's second wait is 5 s (give or take 10%)");
    world.advance(2);
    let job = claim(&world).remove(0);
    // Third attempt: the schedule says 5 min (give or take 10%), the receiver asks for 20 min.
    world.platform.deliveries().record_attempt(&job, &answered(503, Some(1200)), 12).unwrap();
    world.advance(1199);
    assert!(claim(&world).is_empty(), "Retry-After is honoured when later than the schedule");
    world.advance(1);
    let job = claim(&world).remove(0);
    world.platform.deliveries().record_attempt(&job, &answered(204, None), 12).unwrap();
    world.advance(86_400);
    assert!(claim(&world).is_empty(), "a 2xx settles it");

    let detail = world.platform.webhooks().event(&shop, job.event_id.as_str()).unwrap();
    let statuses: Vec<_> = detail.attempts.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [Some(500), Some(503), Some(204)]);
    assert_eq!(detail.deliveries[0].state, DeliveryState::Succeeded);
    assert_eq!(detail.deliveries[0].attempts, 3);
}

#[test]
fn gone_disables_the_endpoint_and_ends_its_delivery() {
    let world = World::new();
    let (shop, endpoint) = one_due_delivery(&world);
    let job = claim(&world).remove(0);
    world.platform.deliveries().record_attempt(&job, &answered(410, None), 12).unwrap();
    let e = world.platform.webhooks().endpoint(&shop, &endpoint).unwrap();
    assert!(!e.enabled);
    assert_eq!(e.disabled_reason.as_deref(), Some("gone"));
    let detail = world.platform.webhooks().event(&shop, job.event_id.as_str()).unwrap();
    assert_eq!(detail.deliveries[0].state, DeliveryState::Failed);
    world.advance(86_400);
    assert!(claim(&world).is_empty());
}

#[test]
fn an_outcome_recorded_after_the_lease_lapsed_does_not_touch_the_new_owners_schedule() {
    let world = World::new();
    let (shop, _) = one_due_delivery(&world);
    let late = claim(&world).remove(0);
    world.advance(45);
    let current = claim(&world).remove(0);
    world.platform.deliveries().record_attempt(&late, &answered(500, None), 12).unwrap();
    assert!(claim(&world).is_empty(), "the late failure scheduled nothing");
    world.platform.deliveries().record_attempt(&current, &answered(200, None), 12).unwrap();
    let detail = world.platform.webhooks().event(&shop, current.event_id.as_str()).unwrap();
    assert_eq!(detail.attempts.len(), 2, "both attempts are on record");
    assert_eq!(detail.deliveries[0].state, DeliveryState::Succeeded);
    assert_eq!(detail.deliveries[0].attempts, 1, "only the owner's attempt counts");
}

/// What an attempt left behind, comparable across two worlds (the retry time has a random
/// jitter, so only whether one is set).
#[derive(Debug, PartialEq, Eq)]
struct Left {
    state: DeliveryState,
    attempts: u32,
    retry_set: bool,
    statuses: Vec<Option<u16>>,
    enabled: bool,
    disabled_reason: Option<String>,
    failing: bool,
}

fn left(world: &World, shop: &Principal, endpoint: &str, job: &DeliveryJob) -> Left {
    let detail = world.platform.webhooks().event(shop, job.event_id.as_str()).unwrap();
    let e = world.platform.webhooks().endpoint(shop, endpoint).unwrap();
    Left {
        state: detail.deliveries[0].state,
        attempts: detail.deliveries[0].attempts,
        retry_set: detail.deliveries[0].next_attempt_at.is_some(),
        statuses: detail.attempts.iter().map(|a| a.status).collect(),
        enabled: e.enabled,
        disabled_reason: e.disabled_reason,
        failing: e.failing_since.is_some(),
    }
}

fn outcome(pick: u8) -> SendOutcome {
    match pick % 7 {
        0 => answered(200, None),
        1 => answered(204, None),
        2 => answered(500, None),
        3 => answered(503, Some(600)),
        4 => answered(429, None),
        5 => answered(410, None),
        _ => SendOutcome::Failed("connection refused".into()),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..proptest::prelude::ProptestConfig::default() })]

    /// Attempts recorded together in one transaction (`record_attempts`, as the delivery worker
    /// does) leave every delivery and endpoint exactly as recording each alone does, whatever the
    /// outcomes and however they are cut into batches; an item recorded twice (its second record
    /// finds the lease already used) changes nothing in either.
    #[test]
    fn attempts_recorded_in_batches_end_as_each_recorded_alone(
        picks in proptest::collection::vec(0u8..7, 1..9),
        cuts in proptest::collection::vec(1usize..5, 1..9),
        twice in proptest::option::of(0usize..8),
    ) {
        let alone = World::new();
        let batched = World::new();
        // The same shops, endpoints and one due delivery each, in both worlds.
        let setup = |world: &World| -> Vec<(Principal, String, DeliveryJob)> {
            let shops: Vec<(Principal, String)> = picks.iter().map(|_| one_due_delivery(world)).collect();
            let jobs = world.platform.deliveries().claim(100).unwrap();
            shops
                .into_iter()
                .map(|(shop, endpoint)| {
                    let job = jobs.iter().find(|j| j.endpoint_id.as_str() == endpoint).unwrap().clone();
                    (shop, endpoint, job)
                })
                .collect()
        };
        let a = setup(&alone);
        let b = setup(&batched);
        let outcomes: Vec<SendOutcome> = picks.iter().map(|p| outcome(*p)).collect();
        let mut order: Vec<usize> = (0..picks.len()).collect();
        if let Some(i) = twice.filter(|i| *i < picks.len()) {
            order.push(i);
        }
        for &i in &order {
            alone.platform.deliveries().record_attempt(&a[i].2, &outcomes[i], 7).unwrap();
        }
        let mut rest = &order[..];
        for cut in cuts.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at((*cut).min(rest.len()));
            let items: Vec<(&DeliveryJob, &SendOutcome, u32)> = now.iter().map(|&i| (&b[i].2, &outcomes[i], 7)).collect();
            batched.platform.deliveries().record_attempts(&items).unwrap();
            rest = later;
        }
        for i in 0..picks.len() {
            proptest::prop_assert_eq!(left(&alone, &a[i].0, &a[i].1, &a[i].2), left(&batched, &b[i].0, &b[i].1, &b[i].2), "item {}", i);
        }
    }
}

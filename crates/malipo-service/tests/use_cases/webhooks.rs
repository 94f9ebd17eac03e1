//! Webhook deliveries: what a receiver's answer does to the schedule (retry, `Retry-After`,
//! success, `410 Gone`). The sender is not needed here: these rules take its outcome as input
//! (the app's delivery worker is tested with a mock sender).

use std::time::Duration;

use malipo_auth::{OrgKind, Principal};
use malipo_core::Mode;
use malipo_service::{DeliveryJob, EndpointWithSecret, SendOutcome, SimulateAction};
use malipo_webhooks::DeliveryState;

use crate::support::{id_body, idem, ignored, number, World};

/// A test merchant with an endpoint for `charge.completed`, and one completed charge: one
/// delivery due now. Returns the endpoint's id.
fn one_due_delivery(world: &World) -> (Principal, String) {
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let events = ["charge.completed".to_owned()];
    let created = world
        .platform
        .webhooks()
        .create_endpoint(
            &shop,
            "https://hooks.example.com/malipo",
            &events,
            None,
            &idem(&shop, "POST /webhooks"),
            &id_body(|e: &EndpointWithSecret| e.endpoint.id.to_string()),
        )
        .unwrap();
    let endpoint = String::from_utf8(created.response.body).unwrap();
    let charge = world.charge(&shop, &number("0000"), "150.00").unwrap();
    world.platform.sandbox().simulate(&shop, charge.id.as_str(), SimulateAction::Approve, &idem(&shop, "POST /sandbox"), &ignored).unwrap();
    (shop, endpoint)
}

fn claim(world: &World) -> Vec<DeliveryJob> {
    world.platform.deliveries().claim(10).unwrap()
}

fn answered(status: u16, retry_after: Option<u64>) -> SendOutcome {
    SendOutcome::Answered { status, retry_after: retry_after.map(Duration::from_secs) }
}

#[test]
fn a_job_is_signed_and_claimed_once_until_its_lease_lapses() {
    let world = World::new();
    let (_, endpoint) = one_due_delivery(&world);
    let jobs = claim(&world);
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.url, "https://hooks.example.com/malipo");
    assert_eq!(job.endpoint_id.as_str(), endpoint);
    let header = |name: &str| job.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    assert_eq!(header("webhook-id"), Some(job.event_id.as_str()));
    assert_eq!(header("webhook-timestamp"), Some(world.now().as_unix_seconds().to_string().as_str()));
    assert!(header("webhook-signature").is_some_and(|s| s.starts_with("v1,")), "{:?}", job.headers);
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

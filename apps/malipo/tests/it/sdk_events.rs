//! Real deliveries of several kinds read through the client: each verifies by its headers and,
//! parsed, by its body `signature` member (whose amount text differs by kind), and yields the
//! typed object its kind names.

use std::time::Duration;

use malipo_client::{
    AccountKind, Client, EventKind, EventObject, NewCharge, NewEndpoint, NewPayout, NewReversal, Original, PayoutState, WebhookError,
    Webhooks,
};
use rust_decimal::Decimal;

use crate::harness::{Db, TestApp};
use crate::webhooks_delivery::Receiver;

crate::on_both!(a_charge_a_payout_and_a_reversal_are_delivered_as_typed_events_that_verify_both_ways);

async fn a_charge_a_payout_and_a_reversal_are_delivered_as_typed_events_that_verify_both_ways(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    app.fund(&c.org_id, malipo_core::Mode::Test, "1000").await;
    let client = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    let receiver = Receiver::answering(200).await;
    let kinds = [EventKind::ChargeCompleted, EventKind::PayoutCompleted, EventKind::ReversalCompleted];
    let endpoint = client.webhooks().create(&NewEndpoint::for_kinds(receiver.url(), &kinds)).await.unwrap();
    let hooks = Webhooks::new(endpoint.secret.as_deref().unwrap()).unwrap();

    let charge = client.charges().create(&NewCharge::new("254712345678", Decimal::new(31_050, 2), "EV-CH")).await.unwrap();
    let payout = client.payouts().create(&NewPayout::new("254712345678", Decimal::new(12_000, 2), "EV-PO")).await.unwrap();
    let hits = receiver.wait("the charge and payout events", Duration::from_secs(20), |h| h.len() >= 2).await;
    assert!(client.payouts().get(&payout.payout_ref).await.unwrap().state == PayoutState::Completed);
    let reversal = client
        .reversals()
        .create(&NewReversal::new(Original::Payout(payout.payout_ref.clone()), "sent twice").amount(Decimal::new(2_000, 2)))
        .await
        .unwrap();
    let hits = receiver.wait("the reversal event", Duration::from_secs(20), |h| h.len() > hits.len()).await;
    assert_eq!(hits.len(), 3, "one delivery per event");

    let mut seen = Vec::new();
    for hit in &hits {
        let headers = |name: &str| Some(hit.header(name).to_owned()).filter(|v| !v.is_empty());
        let event = hooks.check(&headers, &hit.body).unwrap();
        // The same delivery, parsed, verifies by its body signature alone; a changed state does not.
        let parsed: serde_json::Value = serde_json::from_slice(&hit.body).unwrap();
        assert_eq!(hooks.check_parsed(&parsed).unwrap(), event, "{}", event.kind.as_str());
        let mut changed = parsed.clone();
        let state = if event.kind == EventKind::ChargeCompleted { &mut changed["state"] } else { &mut changed["data"]["state"] };
        *state = serde_json::json!("failed");
        assert_eq!(hooks.check_parsed(&changed).unwrap_err(), WebhookError::Signature, "{}", event.kind.as_str());
        match event.object().unwrap() {
            EventObject::Charge(ch) => {
                assert_eq!((ch.charge_ref.as_str(), ch.amount), (charge.charge_ref.as_str(), Decimal::new(31_050, 2)));
                assert_eq!(event.charge().as_ref(), Some(&*ch));
            }
            EventObject::Payout { payout: po, payout_account_available } => {
                assert_eq!((po.payout_ref.as_str(), po.state), (payout.payout_ref.as_str(), PayoutState::Completed));
                assert_eq!(payout_account_available, Some(Decimal::new(100_000, 2) - po.amount - po.fee), "the balance right after it");
                assert_eq!(event.charge(), None);
            }
            EventObject::Reversal(rv) => {
                assert_eq!(*rv, reversal);
            }
            other => panic!("unexpected {other:?}"),
        }
        seen.push(event.kind.clone());
    }
    seen.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(seen, [EventKind::ChargeCompleted, EventKind::PayoutCompleted, EventKind::ReversalCompleted]);
    // The payout's balance figure agrees with the account after everything settled.
    let now = client.accounts().balance(AccountKind::Payout).await.unwrap();
    assert_eq!(
        now.available,
        Decimal::new(100_000 - 12_000 + 2_000, 2) - client.payouts().get(&payout.payout_ref).await.unwrap().fee + reversal.fee_reversed
    );
}

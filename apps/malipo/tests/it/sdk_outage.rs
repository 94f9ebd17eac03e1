//! The Rust client through a 20 s outage: the server is stopped, calls are made (with a token
//! already held, by a client that has none yet, and halfway through), the server comes back on
//! the same address and database 20 s later, and every call settles, once, within the client's
//! retry budget (60 s by default), as `docs/sdk.md` promises.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use malipo_client::{AccountKind, ChargeFilter, Client, Error, NewCharge, NewPayout, PayoutFilter};
use rust_decimal::Decimal;

use crate::harness::{Db, TestApp};

crate::on_both!(calls_made_while_the_server_is_down_for_20_s_settle_once_within_the_budget);

/// How long the server stays down.
const OUTAGE: Duration = Duration::from_secs(20);

/// The client's default retry budget (`RetryPolicy::default().max_elapsed`).
const BUDGET: Duration = Duration::from_secs(60);

/// A call's outcome and how long it took, from the moment it was made.
type Settled<T> = (Result<T, Error>, Duration);

fn timed<T: Send + 'static>(
    call: impl std::future::Future<Output = Result<T, Error>> + Send + 'static,
) -> tokio::task::JoinHandle<Settled<T>> {
    tokio::spawn(async move {
        let started = Instant::now();
        let outcome = call.await;
        (outcome, started.elapsed())
    })
}

async fn calls_made_while_the_server_is_down_for_20_s_settle_once_within_the_budget(db: Db) {
    let app = TestApp::spawn(db).await;
    let c = app.merchant().await;
    app.fund(&c.org_id, malipo_core::Mode::Test, "1000").await;
    let warm = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    warm.accounts().balance(AccountKind::Collection).await.unwrap(); // a token held before the outage
    let cold = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap(); // none yet
    let (database, settings, addr) = app.stop_keeping_database().await;
    let down = Instant::now();

    let mut charges = Vec::new();
    for n in 0..4 {
        let client = warm.clone();
        charges.push((
            format!("OUT-{n}"),
            timed(
                async move { client.charges().create(&NewCharge::new("254712345678", Decimal::new(100 + n, 2), format!("OUT-{n}"))).await },
            ),
        ));
    }
    let client = cold.clone();
    charges.push((
        "OUT-COLD".to_owned(),
        timed(async move { client.charges().create(&NewCharge::new("254712345678", Decimal::new(300, 2), "OUT-COLD")).await }),
    ));
    let client = warm.clone();
    let payout = timed(async move { client.payouts().create(&NewPayout::new("254712345678", Decimal::new(5_000, 2), "OUT-PO")).await });
    // Halfway through the outage, more calls.
    tokio::time::sleep(OUTAGE / 2).await;
    for n in 0..2 {
        let client = warm.clone();
        charges.push((
            format!("OUT-MID-{n}"),
            timed(async move {
                client.charges().create(&NewCharge::new("254712345678", Decimal::new(200 + n, 2), format!("OUT-MID-{n}"))).await
            }),
        ));
    }
    // The outage is the scenario: the server comes back on the same address and database.
    tokio::time::sleep(OUTAGE.saturating_sub(down.elapsed())).await;
    let app = TestApp::on_addr(database, settings, addr).await;
    let back = down.elapsed();

    // Every call settles within its budget (and so by the deadline, or the test fails here).
    let deadline = down + BUDGET + Duration::from_secs(5);
    let mut made = Vec::new();
    for (reference, task) in charges {
        let (outcome, took) = tokio::time::timeout_at(deadline.into(), task).await.expect("a call still running past its budget").unwrap();
        let charge = outcome.unwrap_or_else(|e| panic!("{reference} failed after {took:?} (the server was back after {back:?}): {e:?}"));
        assert!(took <= BUDGET, "{reference} took {took:?}, more than the budget");
        assert_eq!(charge.reference, reference);
        made.push(charge);
    }
    let (outcome, took) =
        tokio::time::timeout_at(deadline.into(), payout).await.expect("the payout still running past its budget").unwrap();
    let payout = outcome.unwrap_or_else(|e| panic!("the payout failed after {took:?}: {e:?}"));
    assert!(took <= BUDGET, "the payout took {took:?}");

    // Exactly once each: one charge per reference, the one its call answered, and one payout.
    let direct = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    let listed: Vec<_> = direct.charges().list(ChargeFilter::default()).stream().try_collect().await.unwrap();
    assert_eq!(listed.len(), made.len(), "one charge per call: {:?}", listed.iter().map(|c| &c.reference).collect::<Vec<_>>());
    for charge in &made {
        let same: Vec<_> = listed.iter().filter(|l| l.reference == charge.reference).collect();
        assert_eq!(same.len(), 1, "{}: {same:?}", charge.reference);
        assert_eq!(same[0].charge_ref, charge.charge_ref, "the call answered the charge that exists");
    }
    let payouts: Vec<_> = direct.payouts().list(PayoutFilter::default()).stream().try_collect().await.unwrap();
    assert_eq!(payouts.iter().map(|p| p.payout_ref.as_str()).collect::<Vec<_>>(), [payout.payout_ref.as_str()]);
    app.assert_ledger_ok().await;
    app.stop().await;
}

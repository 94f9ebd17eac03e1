//! Contract section 6: bulk payouts with maker/checker, JSON and CSV, over HTTP on both backends.

use std::time::Duration;

use malipo_core::Mode;
use serde_json::{json, Value};

use crate::harness::{key, msisdn, ok, problem_strict, strict, Answer, Creds, Db, Options, TestApp};

crate::on_both!(
    a_batch_is_approved_by_a_checker_and_each_item_settles_alone,
    every_bad_item_of_an_upload_is_reported_and_nothing_is_stored,
    a_csv_file_becomes_a_batch,
    a_rejected_batch_pays_nothing,
);

const WAIT: Duration = Duration::from_secs(30);

/// A funded corporate maker and a checker credential of the same organisation.
async fn maker_and_checker(app: &TestApp, funds: &str) -> (Creds, String, String) {
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, Mode::Test, funds).await;
    let maker = app.token(&c).await;
    let checker_token = app.token(&app.credential(&c.org_id, Mode::Test, Some("bulk:approve payouts")).await).await;
    (c, maker, checker_token)
}

fn item(payee: &str, amount: impl Into<Value>, reference: &str) -> Value {
    let amount: Value = amount.into();
    json!({"payee_msisdn": payee, "amount": amount, "reference": reference})
}

async fn upload(app: &TestApp, maker: &str, items: Vec<Value>) -> Answer {
    Answer::of(app.post(maker, "/bulk-payouts", &json!({"reference": "PAYROLL-NOV", "items": items}), Some(&key())).await).await
}

async fn wait_batch(app: &TestApp, token: &str, id: &str, state: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let v = app.get_json(token, &format!("/bulk-payouts/{id}")).await;
        if v["state"] == state {
            return v;
        }
        assert!(started.elapsed() < WAIT, "batch still {} after {WAIT:?}: {v}", v["state"]);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_batch_is_approved_by_a_checker_and_each_item_settles_alone(db: Db) {
    let app = TestApp::shared(db);
    let (c, maker, checker) = maker_and_checker(app, "10000").await;
    let items = vec![item(&msisdn("0000"), "100.00", "EMP-1"), item(&msisdn("1007"), "200", "EMP-2"), item(&msisdn("0000"), 300, "EMP-3")];
    let a = ok(upload(app, &maker, items).await, "POST /bulk-payouts");
    let b = &a.json;
    let id = b["batch_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("bp_"), "{}", a.text);
    assert_eq!(
        (b["state"].as_str(), b["item_count"].as_u64(), b["created_by"].as_str()),
        (Some("awaiting_approval"), Some(3), Some(c.client_id.as_str()))
    );
    assert_eq!((a.raw("total_amount"), a.raw("total_fees")), ("600.00".into(), "15.00".into()));
    assert_eq!(b["counts"], json!({"pending": 3, "completed": 0, "failed": 0}));
    assert!(b["approved_by"].is_null() && b["approved_at"].is_null() && b["completed_at"].is_null());
    // The maker cannot approve (no scope), nor can a checker credential that is the maker.
    problem_strict(app.post(&maker, &format!("/bulk-payouts/{id}/approve"), &json!({}), Some(&key())).await, 403, "insufficient_scope")
        .await;
    let approve = |token: String| {
        let path = format!("/bulk-payouts/{id}/approve");
        async move { Answer::of(app.post(&token, &path, &json!({}), Some(&key())).await).await }
    };
    let approved = ok(approve(checker.clone()).await, "approve");
    assert_eq!(approved.json["state"], "processing", "{}", approved.text);
    assert!(approved.json["approved_by"].as_str().unwrap().starts_with("ck_test_"));
    let twice = approve(checker.clone()).await;
    assert_eq!((twice.status, twice.json["code"].as_str()), (409, Some("invalid_state")), "{}", twice.text);

    let done = wait_batch(app, &maker, &id, "completed").await;
    assert_eq!(done["counts"], json!({"pending": 0, "completed": 2, "failed": 1}), "{done}");
    let failed = ok(app.get_answer(&maker, &format!("/bulk-payouts/{id}/items?state=failed")).await, "items");
    let failed = failed.json["data"].as_array().unwrap().clone();
    assert_eq!(failed.len(), 1);
    assert_eq!((failed[0]["reference"].as_str(), failed[0]["failure_reason"].as_str()), (Some("EMP-2"), Some("payee_not_found")));
    assert_eq!(failed[0]["bulk_payout_id"], id.as_str());
    let all = ok(app.get_answer(&checker, &format!("/bulk-payouts/{id}/items?limit=2")).await, "items page");
    let refs: Vec<&str> = all.json["data"].as_array().unwrap().iter().map(|p| p["reference"].as_str().unwrap()).collect();
    assert_eq!(refs, vec!["EMP-1", "EMP-2"], "the batch's order");
    let cursor = all.json["next_cursor"].as_str().unwrap();
    let rest = ok(app.get_answer(&checker, &format!("/bulk-payouts/{id}/items?limit=2&cursor={cursor}")).await, "next page");
    assert_eq!(rest.json["data"][0]["reference"], "EMP-3");
    let by_batch = ok(app.get_answer(&maker, &format!("/payouts?bulk_payout_id={id}&limit=100")).await, "payouts of the batch");
    assert_eq!(by_batch.json["data"].as_array().unwrap().len(), 3);
    let b = ok(app.get_answer(&maker, "/partner/balance?account=payout").await, "balance");
    assert_eq!(b.raw("available"), "9590.00", "two items paid with their fees: {}", b.text);
    app.assert_ledger_ok().await;
}

async fn every_bad_item_of_an_upload_is_reported_and_nothing_is_stored(db: Db) {
    let app = TestApp::shared(db);
    let (_, maker, _) = maker_and_checker(app, "100").await;
    let items = vec![
        item(&msisdn("0000"), "1", "OK"),
        item("25471", "1", "BAD-MSISDN"),
        item(&msisdn("0000"), "1.001", "BAD-AMOUNT"),
        item(&msisdn("0000"), "1", ""),
    ];
    let a = strict(
        app.post(&maker, "/bulk-payouts", &json!({"reference": "R", "items": items}), Some(&key())).await,
        422,
        "validation_failed",
        false,
    )
    .await;
    let fields: Vec<(&str, &str)> =
        a.json["errors"].as_array().unwrap().iter().map(|e| (e["field"].as_str().unwrap(), e["code"].as_str().unwrap())).collect();
    assert_eq!(
        fields,
        vec![("items[1].payee_msisdn", "invalid_msisdn"), ("items[2].amount", "invalid_amount"), ("items[3].reference", "missing_field")]
    );
    let none = strict(
        app.post(&maker, "/bulk-payouts", &json!({"reference": "R", "items": []}), Some(&key())).await,
        422,
        "validation_failed",
        false,
    )
    .await;
    assert_eq!(none.json["errors"][0]["field"], "items", "{}", none.text);
    let payee = msisdn("0000");
    let many: Vec<Value> = (0..10_001).map(|i| item(&payee, "1", &format!("R{i}"))).collect();
    let over = strict(
        app.post(&maker, "/bulk-payouts", &json!({"reference": "R", "items": many}), Some(&key())).await,
        422,
        "validation_failed",
        false,
    )
    .await;
    assert_eq!(
        (over.json["errors"][0]["field"].as_str(), over.json["errors"][0]["code"].as_str()),
        (Some("items"), Some("too_many_items")),
        "{}",
        over.text
    );
    let list = ok(app.get_answer(&maker, "/bulk-payouts").await, "list");
    assert_eq!(list.json["data"].as_array().unwrap().len(), 0, "{}", list.text);
}

async fn a_csv_file_becomes_a_batch(db: Db) {
    let app = TestApp::shared(db);
    let (_, maker, checker) = maker_and_checker(app, "1000").await;
    let (a, b) = (msisdn("0000"), msisdn("0000"));
    let keyed = Answer::of(
        app.http
            .post(app.url("/bulk-payouts?reference=PAYROLL-CSV"))
            .bearer_auth(&maker)
            .header("Content-Type", "text/csv; charset=utf-8")
            .header("Idempotency-Key", key())
            .body(format!("\u{feff}payee_msisdn,amount,reference,narration\r\n{a},10.50,EMP-1,\"Salary, November\"\r\n{b},20,EMP-2,\r\n"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let batch = ok(keyed, "CSV upload");
    assert_eq!((batch.json["reference"].as_str(), batch.json["item_count"].as_u64()), (Some("PAYROLL-CSV"), Some(2)));
    assert_eq!(batch.raw("total_amount"), "30.50");
    let items = ok(app.get_answer(&maker, &format!("/bulk-payouts/{}/items", batch.json["batch_id"].as_str().unwrap())).await, "items");
    assert_eq!(items.json["data"][0]["narration"], "Salary, November", "{}", items.text);
    let id = batch.json["batch_id"].as_str().unwrap().to_owned();
    ok(Answer::of(app.post(&checker, &format!("/bulk-payouts/{id}/approve"), &json!({}), Some(&key())).await).await, "approve");
    wait_batch(app, &maker, &id, "completed").await;
    // A malformed line is reported against its row.
    let bad = app
        .http
        .post(app.url("/bulk-payouts?reference=BAD"))
        .bearer_auth(&maker)
        .header("Content-Type", "text/csv")
        .header("Idempotency-Key", key())
        .body(format!("payee_msisdn,amount,reference,narration\n{a},1,OK,\n{a},1,\"broken,\n"))
        .send()
        .await
        .unwrap();
    let bad = strict(bad, 422, "validation_failed", false).await;
    assert_eq!(bad.json["errors"][0]["field"], "items[1]", "{}", bad.text);
    app.assert_ledger_ok().await;
}

async fn a_rejected_batch_pays_nothing(db: Db) {
    let app = TestApp::shared(db);
    let (_, maker, checker) = maker_and_checker(app, "100").await;
    let a = ok(upload(app, &maker, vec![item(&msisdn("0000"), "60", "A"), item(&msisdn("0000"), "60", "B")]).await, "upload");
    let id = a.json["batch_id"].as_str().unwrap().to_owned();
    // 120.00 + fees is more than the account holds: refused, and still awaiting approval.
    let short = Answer::of(app.post(&checker, &format!("/bulk-payouts/{id}/approve"), &json!({}), Some(&key())).await).await;
    assert_eq!((short.status, short.json["code"].as_str()), (422, Some("insufficient_funds")), "{}", short.text);
    let r = ok(
        Answer::of(app.post(&checker, &format!("/bulk-payouts/{id}/reject"), &json!({"reason": "wrong month"}), Some(&key())).await).await,
        "reject",
    );
    assert_eq!((r.json["state"].as_str(), r.json["rejection_reason"].as_str()), (Some("rejected"), Some("wrong month")));
    assert!(r.json["rejected_by"].as_str().unwrap().starts_with("ck_test_"));
    let again = Answer::of(app.post(&checker, &format!("/bulk-payouts/{id}/approve"), &json!({}), Some(&key())).await).await;
    assert_eq!((again.status, again.json["code"].as_str()), (409, Some("invalid_state")), "{}", again.text);
    let items = ok(app.get_answer(&maker, &format!("/bulk-payouts/{id}/items")).await, "items");
    assert!(items.json["data"].as_array().unwrap().iter().all(|p| p["state"] == "failed" && p["failure_reason"] == "bulk_payout_rejected"));
    let b = ok(app.get_answer(&maker, "/partner/balance?account=payout").await, "balance");
    assert_eq!(b.raw("available"), "100.00");
}

/// The backend's process id of a connection.
fn backend_pid(c: &mut diesel::PgConnection) -> i32 {
    use diesel::RunQueryDsl;
    diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>("pg_backend_pid()")).get_result(c).unwrap()
}

/// Waits until some backend waits for a lock that the backend `holder` holds (sleeping on the
/// runtime, whose tasks include the server's worker loops).
async fn wait_until_blocked_by(probe: &mut diesel::PgConnection, holder: i32) {
    use diesel::RunQueryDsl;
    let started = std::time::Instant::now();
    loop {
        let waiting: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(&format!(
            "(SELECT count(*) FROM pg_stat_activity WHERE {holder} = ANY (pg_blocking_pids(pid)))"
        )))
        .get_result(probe)
        .unwrap();
        if waiting > 0 {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "nothing waited for backend {holder}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A chunk of a batch's items (PostgreSQL, where rows are locked one by one) decides each item on
/// its own rows first and takes the rows every item shares, the batch's and the payout account's,
/// only at its end: while the chunk waits for its second payee's wallet, another transaction
/// can still lock both (a payout being created reserves on that account; before, the chunk held
/// them from its first item on, and every item of the batch and every payout of the organisation
/// queued behind its whole chunk).
#[actix_web::test]
async fn a_chunk_of_items_takes_the_batch_and_the_payout_account_only_at_its_end() {
    use diesel::connection::SimpleConnection;
    use diesel::Connection;

    let database = malipo_store_diesel::testing::TestDatabase::postgres();
    let mut settings = crate::harness::settings(&database.url, &Options::default());
    (settings.workers, settings.payout_settle_chunk) = (0, Some(8));
    let app = TestApp::on(database, settings).await;
    let (c, maker, checker) = maker_and_checker(&app, "1000").await;
    let payees = [msisdn("0000"), msisdn("0000"), msisdn("0000")];
    for payee in &payees {
        let w = app.sandbox_wallet(&maker, &json!({"msisdn": payee, "balance": "0"})).await;
        assert_eq!(w.status(), 200, "{:?}", w.text().await);
    }
    let items = payees.iter().enumerate().map(|(i, p)| item(p, "10.00", &format!("EMP-{i}"))).collect();
    let id = ok(upload(&app, &maker, items).await, "upload").json["batch_id"].as_str().unwrap().to_owned();
    ok(Answer::of(app.post(&checker, &format!("/bulk-payouts/{id}/approve"), &json!({}), Some(&key())).await).await, "approve");
    // The worker takes the items in id order (all due at the approval): the payees in that order.
    let listed = ok(app.get_answer(&maker, &format!("/bulk-payouts/{id}/items")).await, "items").json;
    let mut order: Vec<(String, String)> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["payout_ref"].as_str().unwrap().to_owned(), p["payee_msisdn"].as_str().unwrap().to_owned()))
        .collect();
    order.sort();

    // Each payee's wallet held by a transaction of its own.
    let url = app.db.url.clone();
    let mut holders: Vec<(diesel::PgConnection, i32)> = order
        .iter()
        .map(|(_, payee)| {
            let mut conn = diesel::PgConnection::establish(&url).unwrap();
            conn.batch_execute(&format!("BEGIN; SELECT 1 FROM wallets WHERE mode = 'test' AND msisdn = '{payee}' FOR UPDATE")).unwrap();
            let pid = backend_pid(&mut conn);
            (conn, pid)
        })
        .collect();
    let p = app.platform.clone();
    let worker = tokio::task::spawn_blocking(move || p.payout_processing().process_due(100).unwrap());
    let mut probe = diesel::PgConnection::establish(&url).unwrap();
    // The chunk waits for the first payee; let it have that one, so it settles the first item
    // and then waits for the second payee.
    wait_until_blocked_by(&mut probe, holders[0].1).await;
    holders[0].0.batch_execute("COMMIT").unwrap();
    wait_until_blocked_by(&mut probe, holders[1].1).await;
    let shared = probe.batch_execute(&format!(
        "BEGIN; \
         SELECT 1 FROM bulk_payouts WHERE id = '{id}' FOR UPDATE NOWAIT; \
         SELECT 1 FROM accounts WHERE org_id = '{org}' AND mode = 'test' AND kind = 'payout' FOR UPDATE NOWAIT; \
         ROLLBACK",
        org = c.org_id
    ));
    for (conn, _) in &mut holders[1..] {
        conn.batch_execute("COMMIT").unwrap();
    }
    assert_eq!(worker.await.unwrap(), 3, "the three items claimed");
    assert!(shared.is_ok(), "the batch or the payout account was held by the chunk before its end: {shared:?}");
    let done = app.get_json(&maker, &format!("/bulk-payouts/{id}")).await;
    assert_eq!((done["state"].as_str(), &done["counts"]), (Some("completed"), &json!({"pending": 0, "completed": 3, "failed": 0})));
    app.assert_ledger_ok().await;
}

/// At most `MALIPO_PAYOUT_LANES` worker loops settle payouts at a time (one here, of four loops):
/// while the lane's first chunk waits for a payee's wallet, the other loops settle none of the
/// batch's other items, though more are due than the lane claimed (64 of 100).
#[actix_web::test]
async fn one_payout_lane_settles_payouts_while_the_other_loops_do_not() {
    use diesel::connection::SimpleConnection;
    use diesel::Connection;

    let database = malipo_store_diesel::testing::TestDatabase::postgres();
    let mut settings = crate::harness::settings(&database.url, &Options::default());
    (settings.workers, settings.payout_lanes) = (4, 1);
    let app = TestApp::on(database, settings).await;
    let (_, maker, checker) = maker_and_checker(&app, "10000").await;
    let payees: Vec<String> = (0..100).map(|_| msisdn("0000")).collect();
    let items = payees.iter().enumerate().map(|(i, p)| item(p, "10.00", &format!("EMP-{i}"))).collect();
    let id = ok(upload(&app, &maker, items).await, "upload").json["batch_id"].as_str().unwrap().to_owned();
    let mut all = vec![];
    let mut cursor = String::new();
    loop {
        let page = ok(app.get_answer(&maker, &format!("/bulk-payouts/{id}/items?limit=100{cursor}")).await, "items").json;
        all.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p["payout_ref"].as_str().unwrap().to_owned(), p["payee_msisdn"].as_str().unwrap().to_owned())),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => break,
        }
    }
    all.sort();
    // The first item the lane takes (ids in order, all due at the approval) waits for its payee.
    let first = &all[0].1;
    let w = app.sandbox_wallet(&maker, &json!({"msisdn": first, "balance": "0"})).await;
    assert_eq!(w.status(), 200);
    let mut holder = diesel::PgConnection::establish(&app.db.url).unwrap();
    holder.batch_execute(&format!("BEGIN; SELECT 1 FROM wallets WHERE mode = 'test' AND msisdn = '{first}' FOR UPDATE")).unwrap();
    let pid = backend_pid(&mut holder);
    ok(Answer::of(app.post(&checker, &format!("/bulk-payouts/{id}/approve"), &json!({}), Some(&key())).await).await, "approve");
    let mut probe = diesel::PgConnection::establish(&app.db.url).unwrap();
    wait_until_blocked_by(&mut probe, pid).await;
    // Time for the other loops to claim and settle the 36 items the lane did not claim, if they could.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let meanwhile = app.get_json(&maker, &format!("/bulk-payouts/{id}")).await;
    holder.batch_execute("COMMIT").unwrap();
    assert_eq!(meanwhile["counts"], json!({"pending": 100, "completed": 0, "failed": 0}), "settled outside the one lane");
    let done = wait_batch(&app, &maker, &id, "completed").await;
    assert_eq!(done["counts"], json!({"pending": 0, "completed": 100, "failed": 0}));
    app.assert_ledger_ok().await;
}

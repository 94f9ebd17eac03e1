//! The seed's core flow and the charge endpoints.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{is_utc_timestamp, problem, problem_strict, raw_member, stk, Answer, Db, TestApp};

crate::on_both!(
    sandbox_charge_completes_and_pays_the_merchant_net_of_fee,
    same_idem_replays_byte_for_byte,
    status_by_charge_ref,
    status_by_reference_answers_the_most_recent,
    status_needs_exactly_one_parameter,
    status_of_unknown_charge_is_not_found,
    list_paginates_newest_first_without_duplicates,
    list_cursor_is_stable_under_inserts,
    list_filters_by_state,
    list_filters_by_time,
    list_refuses_bad_limit_and_cursor,
    get_unknown_charge_is_not_found,
    charge_object_has_exactly_the_contract_fields,
    fee_follows_the_kenya_charge_band,
    balance_shows_pending_and_available,
    balance_of_the_payout_account,
    accounts_lists_collection_and_payout_with_balances,
);

async fn sandbox_charge_completes_and_pays_the_merchant_net_of_fee(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let (c, text) = app.charge_raw(&token, "254712345678", "250").await;
    assert_eq!(c["state"], "pending");
    assert_eq!(raw_member(&text, "amount"), "250.00", "amounts are written with two decimals");
    let done = app.wait_for(&token, c["charge_ref"].as_str().unwrap(), "completed", Duration::from_secs(10)).await;
    assert!(done["transaction_id"].as_str().unwrap().starts_with("tx_"));
    let fee = done["fee"].as_f64().unwrap();
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    let b: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(b["available"].as_f64().unwrap(), 250.0 - fee);
    assert_eq!(raw_member(&text, "pending"), "0.00");
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn same_idem_replays_byte_for_byte(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let body = json!({"payer_msisdn": "254700001009", "amount": 10, "reference": "R1", "idem": "k-1"});
    let first = app.post(&token, "/partner/stk", &body, None).await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = first.bytes().await.unwrap();
    let again = app.post(&token, "/partner/stk", &body, None).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.bytes().await.unwrap(), first);
    let other = json!({"payer_msisdn": "254700001009", "amount": 11, "reference": "R1", "idem": "k-1"});
    problem(app.post(&token, "/partner/stk", &other, None).await, 422, "idempotency_key_reused").await;
    app.stop().await;
}

const CHARGE_KEYS: [&str; 16] = [
    "amount",
    "amount_reversed",
    "charge_ref",
    "completed_at",
    "created_at",
    "currency",
    "description",
    "expires_at",
    "failure_reason",
    "fee",
    "mode",
    "payer_msisdn",
    "reference",
    "state",
    "transaction_id",
    "updated_at",
];

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn refs(page: &Value) -> Vec<String> {
    page["data"].as_array().unwrap().iter().map(|c| c["charge_ref"].as_str().unwrap().to_owned()).collect()
}

/// Pushes a charge with a given reference (to a number that stays pending).
async fn charge_with_reference(app: &TestApp, token: &str, reference: &str) -> Value {
    let mut body = stk("254700001009", json!("10"));
    body["reference"] = json!(reference);
    let a = Answer::of(app.post(token, "/partner/stk", &body, None).await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    a.json
}

async fn status_by_charge_ref(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let c = app.charge(&token, "254700001009", "75.5").await;
    let r = c["charge_ref"].as_str().unwrap();
    let a = Answer::of(app.get(&token, &format!("/partner/status?charge_ref={r}")).await).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json, c, "status answers the charge object");
    assert_eq!(a.raw("amount"), "75.50");
    let by_path = app.get_json(&token, &format!("/partner/charges/{r}")).await;
    assert_eq!(by_path, c);
}

async fn status_by_reference_answers_the_most_recent(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let first = charge_with_reference(app, &token, "ORDER 1042/a").await;
    let second = charge_with_reference(app, &token, "ORDER 1042/a").await;
    let _other = charge_with_reference(app, &token, "ORDER-9").await;
    assert_ne!(first["charge_ref"], second["charge_ref"]);
    let q = "/partner/status?reference=ORDER%201042%2Fa";
    let v = app.get_json(&token, q).await;
    assert_eq!(v["charge_ref"], second["charge_ref"], "the most recent charge with the reference");
    // Still the most recent after the older one changes.
    let r = app.simulate(&token, first["charge_ref"].as_str().unwrap(), "decline").await;
    assert_eq!(r.status(), 200);
    assert_eq!(app.get_json(&token, q).await["charge_ref"], second["charge_ref"]);
}

async fn status_needs_exactly_one_parameter(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let c = charge_with_reference(app, &token, "R-1").await;
    let r = c["charge_ref"].as_str().unwrap();
    problem_strict(app.get(&token, "/partner/status").await, 400, "invalid_request").await;
    problem_strict(app.get(&token, &format!("/partner/status?charge_ref={r}&reference=R-1")).await, 400, "invalid_request").await;
}

async fn status_of_unknown_charge_is_not_found(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    charge_with_reference(app, &token, "R-1").await;
    problem_strict(app.get(&token, "/partner/status?charge_ref=ch_doesnotexist").await, 404, "not_found").await;
    problem_strict(app.get(&token, "/partner/status?charge_ref=not-even-an-id").await, 404, "not_found").await;
    problem_strict(app.get(&token, "/partner/status?reference=R-2").await, 404, "not_found").await;
    problem_strict(app.get(&token, "/partner/status?reference=r-1").await, 404, "not_found").await;
}

async fn list_paginates_newest_first_without_duplicates(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut created = vec![];
    for i in 0..5 {
        created.push(charge_with_reference(app, &token, &format!("R-{i}")).await["charge_ref"].as_str().unwrap().to_owned());
    }
    let mut seen = vec![];
    let mut path = "/partner/charges?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let page = app.get_json(&token, &path).await;
        let mut k: Vec<&str> = page.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort_unstable();
        assert_eq!(k, ["data", "has_more", "next_cursor"]);
        pages += 1;
        let data = refs(&page);
        assert!(data.len() <= 2);
        seen.extend(data);
        if page["has_more"] == true {
            let cursor = page["next_cursor"].as_str().expect("next_cursor with has_more");
            path = format!("/partner/charges?limit=2&cursor={cursor}");
        } else {
            assert_eq!(page["next_cursor"], Value::Null);
            break;
        }
        assert!(pages < 10);
    }
    assert_eq!(pages, 3, "5 charges, 2 per page");
    created.reverse();
    assert_eq!(seen, created, "newest first, each once");
    // The default page holds them all.
    let all = app.get_json(&token, "/partner/charges").await;
    assert_eq!(refs(&all), created);
    assert_eq!(all["has_more"], false);
    let exact = app.get_json(&token, "/partner/charges?limit=5").await;
    assert_eq!(exact["has_more"], false, "no phantom next page");
}

async fn list_cursor_is_stable_under_inserts(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut created = vec![];
    for i in 0..4 {
        created.push(charge_with_reference(app, &token, &format!("R-{i}")).await["charge_ref"].as_str().unwrap().to_owned());
    }
    let first = app.get_json(&token, "/partner/charges?limit=2").await;
    assert_eq!(refs(&first), [created[3].clone(), created[2].clone()]);
    // A charge created between pages does not shift the next page.
    charge_with_reference(app, &token, "R-new").await;
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = app.get_json(&token, &format!("/partner/charges?limit=2&cursor={cursor}")).await;
    assert_eq!(refs(&second), [created[1].clone(), created[0].clone()]);
    assert_eq!(second["has_more"], false);
}

async fn list_filters_by_state(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let a = charge_with_reference(app, &token, "A").await;
    let b = charge_with_reference(app, &token, "B").await;
    let c = charge_with_reference(app, &token, "C").await;
    assert_eq!(app.simulate(&token, b["charge_ref"].as_str().unwrap(), "decline").await.status(), 200);
    assert_eq!(app.simulate(&token, c["charge_ref"].as_str().unwrap(), "approve").await.status(), 200);
    let pending = app.get_json(&token, "/partner/charges?state=pending").await;
    assert_eq!(refs(&pending), [a["charge_ref"].as_str().unwrap()]);
    let declined = app.get_json(&token, "/partner/charges?state=declined").await;
    assert_eq!(refs(&declined), [b["charge_ref"].as_str().unwrap()]);
    assert_eq!(declined["data"][0]["failure_reason"], "declined_by_customer");
    let completed = app.get_json(&token, "/partner/charges?state=completed").await;
    assert_eq!(refs(&completed), [c["charge_ref"].as_str().unwrap()]);
    let expired = app.get_json(&token, "/partner/charges?state=expired").await;
    assert_eq!(expired["data"], json!([]));
}

async fn list_filters_by_time(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let early = charge_with_reference(app, &token, "early").await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    let late = charge_with_reference(app, &token, "late").await;
    let early_at = early["created_at"].as_str().unwrap();
    let late_at = late["created_at"].as_str().unwrap();
    assert!(early_at < late_at);
    let enc = |s: &str| s.replace(':', "%3A").replace('+', "%2B");
    let from = app.get_json(&token, &format!("/partner/charges?from={}", enc(late_at))).await;
    assert_eq!(refs(&from), [late["charge_ref"].as_str().unwrap()], "from is inclusive");
    let to = app.get_json(&token, &format!("/partner/charges?to={}", enc(late_at))).await;
    assert_eq!(refs(&to), [early["charge_ref"].as_str().unwrap()], "to is exclusive");
    let both = app.get_json(&token, &format!("/partner/charges?from={}&to={}", enc(early_at), enc(late_at))).await;
    assert_eq!(refs(&both), [early["charge_ref"].as_str().unwrap()]);
    // Any offset is accepted.
    let future = app.get_json(&token, &format!("/partner/charges?from={}", enc("2999-01-01T03:00:00+03:00"))).await;
    assert_eq!(future["data"], json!([]));
    let past = app.get_json(&token, &format!("/partner/charges?to={}", enc("2000-01-01T00:00:00Z"))).await;
    assert_eq!(past["data"], json!([]));
    problem_strict(app.get(&token, "/partner/charges?from=2024-13-01").await, 400, "invalid_request").await;
}

async fn list_refuses_bad_limit_and_cursor(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    charge_with_reference(app, &token, "A").await;
    for q in ["limit=0", "limit=101", "limit=-1", "limit=2.5", "cursor=garbage", "cursor="] {
        problem_strict(app.get(&token, &format!("/partner/charges?{q}")).await, 400, "invalid_request").await;
    }
    assert_eq!(app.get_json(&token, "/partner/charges?limit=100").await["data"].as_array().unwrap().len(), 1);
    assert_eq!(app.get_json(&token, "/partner/charges?limit=1").await["data"].as_array().unwrap().len(), 1);
}

async fn get_unknown_charge_is_not_found(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let c = charge_with_reference(app, &token, "A").await;
    let r = c["charge_ref"].as_str().unwrap();
    problem_strict(app.get(&token, "/partner/charges/ch_0000000000000000000000").await, 404, "not_found").await;
    problem_strict(app.get(&token, "/partner/charges/nonsense").await, 404, "not_found").await;
    problem_strict(app.get(&token, &format!("/partner/charges/{}", r.to_uppercase())).await, 404, "not_found").await;
}

async fn charge_object_has_exactly_the_contract_fields(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let (c, text) = app.charge_raw(&token, "254712345678", "250").await;
    let want: Vec<String> = CHARGE_KEYS.iter().map(|k| (*k).to_owned()).collect();
    assert_eq!(keys(&c), want);
    assert!(c["charge_ref"].as_str().unwrap().starts_with("ch_"));
    assert!(c["charge_ref"].as_str().unwrap().bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "URL-safe");
    assert_eq!(c["state"], "pending");
    assert_eq!(c["mode"], "test");
    assert_eq!(c["payer_msisdn"], "254712345678");
    assert_eq!(c["currency"], "KES");
    assert_eq!(raw_member(&text, "amount"), "250.00");
    assert_eq!(raw_member(&text, "fee"), "2.00", "Kenya band 200.01-500: fee 2");
    assert_eq!(raw_member(&text, "amount_reversed"), "0.00");
    assert_eq!(c["description"], Value::Null);
    assert_eq!(c["failure_reason"], Value::Null);
    assert_eq!(c["transaction_id"], Value::Null);
    assert_eq!(c["completed_at"], Value::Null);
    for k in ["created_at", "updated_at", "expires_at"] {
        assert!(is_utc_timestamp(c[k].as_str().unwrap()), "{k}: {}", c[k]);
    }
    let created = malipo_core::Timestamp::parse_rfc3339(c["created_at"].as_str().unwrap()).unwrap();
    let expires = malipo_core::Timestamp::parse_rfc3339(c["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!(expires, created.plus_seconds(90), "default time-to-live 90 s");
    let r = c["charge_ref"].as_str().unwrap();
    let done = app.wait_for(&token, r, "completed", Duration::from_secs(10)).await;
    let text = app.get(&token, &format!("/partner/charges/{r}")).await.text().await.unwrap();
    assert_eq!(keys(&done), want);
    assert!(is_utc_timestamp(done["completed_at"].as_str().unwrap()));
    assert!(done["updated_at"].as_str().unwrap() >= done["created_at"].as_str().unwrap());
    assert!(done["transaction_id"].as_str().unwrap().starts_with("tx_"));
    assert_eq!(done["failure_reason"], Value::Null);
    assert_eq!(raw_member(&text, "fee"), "2.00");
    assert_eq!(raw_member(&text, "amount_reversed"), "0.00");
}

async fn fee_follows_the_kenya_charge_band(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    // config/countries.toml, KE fees.charge (paid by the merchant).
    let bands = [
        ("1", "0.00"),
        ("200", "0.00"),
        ("200.01", "2.00"),
        ("500", "2.00"),
        ("500.01", "4.00"),
        ("2500", "10.00"),
        ("2500.01", "20.00"),
        ("10000.01", "75.00"),
        ("40000.01", "200.00"),
        ("250000", "200.00"),
    ];
    for (amount, fee) in bands {
        let (_, text) = {
            let r = app.post(&token, "/partner/stk", &stk("254700001009", json!(amount)), None).await;
            assert_eq!(r.status(), 200);
            ((), r.text().await.unwrap())
        };
        assert_eq!(raw_member(&text, "fee"), fee, "fee of {amount}");
    }
    // The merchant receives amount - fee once completed.
    let c = app.charge(&token, "254712345678", "2500.01").await;
    app.wait_for(&token, c["charge_ref"].as_str().unwrap(), "completed", Duration::from_secs(10)).await;
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    assert_eq!(raw_member(&text, "available"), "2480.01");
    app.assert_ledger_ok().await;
}

/// Puts a pending charge into `authorised` directly in the store (as a customer's approval
/// would, without the worker completing it), so that `pending` is observable.
async fn authorise_in_store(app: &TestApp, charge_ref: &str) {
    let p = app.platform.clone();
    let id = malipo_core::ChargeRef::parse(charge_ref).unwrap();
    tokio::task::spawn_blocking(move || {
        malipo_service::write(p.store(), |tx| {
            let mut c = tx.lock_charge(&id)?.unwrap();
            c.state = malipo_charges::ChargeState::Authorised;
            c.next_action_at = Some(malipo_core::Timestamp::now().plus_seconds(3600));
            tx.update_charge(&c)?;
            Ok(())
        })
    })
    .await
    .unwrap()
    .unwrap();
}

async fn balance_shows_pending_and_available(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let a = Answer::of(app.get(&token, "/partner/balance").await).await;
    assert_eq!(a.status, 200);
    let mut k: Vec<&str> = a.json.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    assert_eq!(k, ["account", "account_id", "as_of", "available", "country", "currency", "pending", "time_zone"]);
    assert_eq!(a.json["account"], "collection");
    assert!(a.json["account_id"].as_str().unwrap().starts_with("acc_"));
    assert_eq!(a.json["currency"], "KES");
    assert_eq!(a.raw("available"), "0.00");
    assert_eq!(a.raw("pending"), "0.00");
    assert!(is_utc_timestamp(a.json["as_of"].as_str().unwrap()));
    assert_eq!(app.get_json(&token, "/partner/balance?account=collection").await["account_id"], a.json["account_id"]);
    // A pending (unanswered) charge is not money on its way yet.
    let waiting = app.charge_ref(&token, &crate::harness::msisdn("1009"), "250").await;
    assert_eq!(Answer::of(app.get(&token, "/partner/balance").await).await.raw("pending"), "0.00");
    // Authorised: amount - fee is pending, nothing available yet.
    authorise_in_store(app, &waiting).await;
    let b = Answer::of(app.get(&token, "/partner/balance").await).await;
    assert_eq!(b.raw("pending"), "248.00");
    assert_eq!(b.raw("available"), "0.00");
    // A completed charge is available.
    let done = app.charge_ref(&token, "254712345678", "100.5").await;
    app.wait_for(&token, &done, "completed", Duration::from_secs(10)).await;
    let b = Answer::of(app.get(&token, "/partner/balance").await).await;
    assert_eq!(b.raw("available"), "100.50");
    assert_eq!(b.raw("pending"), "248.00");
}

async fn balance_of_the_payout_account(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let collection = app.get_json(&token, "/partner/balance").await;
    let a = Answer::of(app.get(&token, "/partner/balance?account=payout").await).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json["account"], "payout");
    assert_ne!(a.json["account_id"], collection["account_id"]);
    assert_eq!(a.raw("available"), "0.00");
    assert_eq!(a.raw("pending"), "0.00");
    for bad in ["savings", "COLLECTION", ""] {
        problem_strict(app.get(&token, &format!("/partner/balance?account={bad}")).await, 400, "invalid_request").await;
    }
}

async fn accounts_lists_collection_and_payout_with_balances(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254712345678", "1000").await;
    app.wait_for(&token, &r, "completed", Duration::from_secs(10)).await;
    let a = Answer::of(app.get(&token, "/accounts").await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let data = a.json["data"].as_array().unwrap();
    assert_eq!(data.len(), 2, "{}", a.text);
    let mut kinds: Vec<&str> = data.iter().map(|x| x["type"].as_str().unwrap()).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["collection", "payout"]);
    let balance = app.get_json(&token, "/partner/balance").await;
    let payout = app.get_json(&token, "/partner/balance?account=payout").await;
    // Exact textual amounts of each account.
    let raw: Vec<std::collections::HashMap<String, Box<serde_json::value::RawValue>>> = {
        let top: std::collections::HashMap<String, Box<serde_json::value::RawValue>> = serde_json::from_str(&a.text).unwrap();
        serde_json::from_str(top["data"].get()).unwrap()
    };
    for (acc, raw) in data.iter().zip(&raw) {
        assert!(acc["account_id"].as_str().unwrap().starts_with("acc_"));
        assert_eq!(acc["mode"], "test");
        assert_eq!(acc["currency"], "KES");
        assert!(is_utc_timestamp(acc["created_at"].as_str().unwrap()));
        let (balance_text, available, pending) = (raw["balance"].get(), raw["available"].get(), raw["pending"].get());
        if acc["type"] == "collection" {
            assert_eq!(acc["account_id"], balance["account_id"]);
            assert_eq!(balance_text, "996.00", "1000 less the 4.00 fee");
            assert_eq!(available, "996.00");
            assert_eq!(pending, "0.00");
        } else {
            assert_eq!(acc["account_id"], payout["account_id"]);
            assert_eq!(balance_text, "0.00");
            assert_eq!(available, "0.00");
        }
    }
    app.assert_ledger_ok().await;
}

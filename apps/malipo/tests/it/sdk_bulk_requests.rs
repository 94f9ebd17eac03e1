//! The Rust client's bulk payouts and payment requests against the real server on both
//! backends: a maker's key pair (scope `bulk:create`) uploads a CSV file from an in-memory
//! reader and a JSON batch, a checker's key pair (`bulk:approve`) of the same organisation
//! approves or rejects them, `wait` follows a batch to its end and its items stream in order;
//! the maker/checker rule and bad rows come back as typed errors. A merchant's live key pair
//! asks to be paid, a customer pays the pay code over USSD, another request is cancelled.

use std::io::Cursor;
use std::time::Duration;

use futures_util::TryStreamExt;
use malipo_client::{
    AccountKind, BulkPayoutCounts, BulkPayoutItem, BulkPayoutState, Client, Error, ErrorCode, Mode, NewBulkPayout, NewPaymentRequest,
    PaymentRequestFilter, PaymentRequestState, PayoutState,
};
use rust_decimal::Decimal;

use crate::harness::{key, msisdn, Cast, Creds, Db, TestApp};

crate::on_both!(
    a_csv_batch_is_approved_by_the_checker_and_followed_to_completion,
    a_csv_upload_is_replayed_under_its_key_and_refused_with_other_bytes,
    every_bad_row_of_a_csv_upload_is_a_typed_field_error,
    a_json_batch_is_rejected_with_its_reason_and_pays_nothing,
    a_checker_acting_for_the_person_who_made_the_batch_is_refused,
    a_payment_request_is_created_listed_read_paid_over_ussd_and_another_cancelled,
);

/// How long a batch may take to settle.
const WAIT: Duration = Duration::from_secs(30);
const PIN: &str = "4826";
const HEADER: &str = "payee_msisdn,amount,reference,narration\n";

fn amount(minor: i64) -> Decimal {
    Decimal::new(minor, 2)
}

/// A corporate organisation with `funds` on its payout account; clients for its maker (the
/// organisation's first key pair: `payments payouts bulk:create reversals`) and for a checker
/// key pair of the same organisation (`bulk:approve payouts`); the two credentials.
async fn maker_and_checker(app: &TestApp, funds: &str) -> (Client, Client, Creds, Creds) {
    let maker = app.org("corporate", "KE").await;
    app.fund(&maker.org_id, malipo_core::Mode::Test, funds).await;
    let checker = app.credential(&maker.org_id, malipo_core::Mode::Test, Some("bulk:approve payouts")).await;
    let client = |c: &Creds| Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    (client(&maker), client(&checker), maker, checker)
}

/// (pending, completed, failed).
fn counts(c: BulkPayoutCounts) -> (u32, u32, u32) {
    (c.pending, c.completed, c.failed)
}

fn api(e: &Error) -> &malipo_client::ApiError {
    match e {
        Error::Api(problem) => problem,
        other => panic!("expected the API's problem, got {other:?}"),
    }
}

async fn a_csv_batch_is_approved_by_the_checker_and_followed_to_completion(db: Db) {
    let app = TestApp::shared(db);
    let (maker, checker, maker_creds, checker_creds) = maker_and_checker(app, "10000").await;
    let before = maker.accounts().balance(AccountKind::Payout).await.unwrap().available;
    let payees = [msisdn("0000"), msisdn("0000"), msisdn("0000")];
    let csv = format!(
        "{HEADER}{},100.50,EMP-1,\"Salary, November\"\r\n{},200,EMP-2,\r\n{},300.25,EMP-3,Bonus\r\n",
        payees[0], payees[1], payees[2]
    );
    // From an in-memory reader: a byte slice.
    let batch = maker.bulk_payouts().upload_csv("PAYROLL-CSV", csv.as_bytes()).await.unwrap();
    assert!(batch.batch_id.starts_with("bp_"), "{batch:?}");
    assert_eq!(
        (batch.state, batch.mode, batch.reference.as_str(), batch.currency.as_str()),
        (BulkPayoutState::AwaitingApproval, Mode::Test, "PAYROLL-CSV", "KES")
    );
    assert_eq!((batch.item_count, batch.total_amount), (3, amount(60_075)));
    assert_eq!(batch.created_by, maker_creds.client_id);
    assert_eq!(counts(batch.counts), (3, 0, 0));
    assert_eq!((&batch.approved_by, &batch.approved_at, &batch.completed_at), (&None, &None, &None));
    let id = batch.batch_id.clone();
    assert_eq!(checker.bulk_payouts().get(&id).await.unwrap(), batch, "the checker reads the same batch");
    assert_eq!(maker.accounts().balance(AccountKind::Payout).await.unwrap().available, before, "nothing reserved before approval");

    // The maker's key pair cannot approve its own batch: it has no `bulk:approve` (a key pair
    // never has both scopes); see the last bulk test for `maker_checker_violation` itself.
    let own = maker.bulk_payouts().approve(&id).await.unwrap_err();
    assert_eq!((api(&own).status, own.code()), (403, Some(&ErrorCode::InsufficientScope)), "{own}");

    let approved = checker.bulk_payouts().approve(&id).await.unwrap();
    assert_eq!(approved.state, BulkPayoutState::Processing);
    assert_eq!(approved.approved_by.as_deref(), Some(checker_creds.client_id.as_str()));
    assert!(approved.approved_at.is_some());
    let twice = checker.bulk_payouts().approve(&id).await.unwrap_err();
    assert_eq!((api(&twice).status, twice.code()), (409, Some(&ErrorCode::InvalidState)), "{twice}");

    let done = maker.bulk_payouts().wait(&id, WAIT).await.unwrap();
    assert_eq!(done.state, BulkPayoutState::Completed, "not done within {WAIT:?}: {done:?}");
    assert_eq!(counts(done.counts), (0, 3, 0));
    assert!(done.completed_at.is_some());
    assert_eq!((done.item_count, done.total_amount), (3, amount(60_075)), "fixed at creation");
    assert_eq!(maker.bulk_payouts().wait(&id, Duration::ZERO).await.unwrap(), done, "a final batch is answered at once");

    // The items, a stream over pages of two, in the batch's order.
    let items: Vec<_> = maker.bulk_payouts().items(&id, None).limit(2).stream().try_collect().await.unwrap();
    let got: Vec<(&str, &str, Decimal, PayoutState)> =
        items.iter().map(|p| (p.reference.as_str(), p.payee_msisdn.as_str(), p.amount, p.state)).collect();
    assert_eq!(
        got,
        [
            ("EMP-1", payees[0].as_str(), amount(10_050), PayoutState::Completed),
            ("EMP-2", payees[1].as_str(), amount(20_000), PayoutState::Completed),
            ("EMP-3", payees[2].as_str(), amount(30_025), PayoutState::Completed),
        ]
    );
    assert_eq!(items.iter().map(|p| p.narration.as_deref()).collect::<Vec<_>>(), [Some("Salary, November"), None, Some("Bonus")]);
    assert!(items.iter().all(|p| p.bulk_payout_id.as_deref() == Some(id.as_str()) && p.payout_ref.starts_with("po_")));
    let fees: Decimal = items.iter().map(|p| p.fee).sum();
    assert_eq!(done.total_fees, fees, "the batch's fees are its items'");
    let failed: Vec<_> = checker.bulk_payouts().items(&id, Some(PayoutState::Failed)).stream().try_collect().await.unwrap();
    assert!(failed.is_empty(), "{failed:?}");
    let completed = checker.bulk_payouts().items(&id, Some(PayoutState::Completed)).page(None).await.unwrap();
    assert_eq!((completed.data.len(), completed.has_more), (3, false));

    let listed: Vec<_> = maker.bulk_payouts().list().stream().try_collect().await.unwrap();
    assert_eq!(listed, std::slice::from_ref(&done), "the organisation's one batch");
    let after = maker.accounts().balance(AccountKind::Payout).await.unwrap().available;
    assert_eq!(after, before - done.total_amount - done.total_fees, "every item paid with its fee");
    app.assert_ledger_ok().await;
}

async fn a_csv_upload_is_replayed_under_its_key_and_refused_with_other_bytes(db: Db) {
    let app = TestApp::shared(db);
    let (maker, _, _, _) = maker_and_checker(app, "100").await;
    let csv = format!("{HEADER}{},10,A,\n{},20.5,B,\n", msisdn("0000"), msisdn("0000"));
    let k = key();
    // From another kind of in-memory reader: a cursor over owned bytes.
    let first = maker.bulk_payouts().upload_csv_with_key("PAYROLL-KEY", Cursor::new(csv.clone().into_bytes()), &k).await.unwrap();
    assert_eq!((first.item_count, first.total_amount), (2, amount(3_050)));
    let again = maker.bulk_payouts().upload_csv_with_key("PAYROLL-KEY", Cursor::new(csv.clone().into_bytes()), &k).await.unwrap();
    assert_eq!(again, first, "the same key and bytes: the first answer");
    let other = format!("{csv}{},1,C,\n", msisdn("0000"));
    let reused = maker.bulk_payouts().upload_csv_with_key("PAYROLL-KEY", other.as_bytes(), &k).await.unwrap_err();
    assert_eq!((api(&reused).status, reused.code()), (422, Some(&ErrorCode::IdempotencyKeyReused)), "{reused}");
    let moved = maker.bulk_payouts().upload_csv_with_key("PAYROLL-OTHER", csv.as_bytes(), &k).await.unwrap_err();
    assert_eq!(moved.code(), Some(&ErrorCode::IdempotencyKeyReused), "the key covers the reference too");
    let listed: Vec<_> = maker.bulk_payouts().list().stream().try_collect().await.unwrap();
    assert_eq!(listed.iter().map(|b| b.batch_id.as_str()).collect::<Vec<_>>(), [first.batch_id.as_str()], "one batch");
}

async fn every_bad_row_of_a_csv_upload_is_a_typed_field_error(db: Db) {
    let app = TestApp::shared(db);
    let (maker, _, _, _) = maker_and_checker(app, "100").await;
    let good = msisdn("0000");
    let csv = format!("{HEADER}{good},1,OK,\n25471,1,BAD-MSISDN,\n{good},1.001,BAD-AMOUNT,\n{good},2,ALSO-OK,\n");
    let refused = maker.bulk_payouts().upload_csv("BAD", csv.as_bytes()).await.unwrap_err();
    let problem = api(&refused);
    assert_eq!((problem.status, &problem.code), (422, &ErrorCode::ValidationFailed), "{refused}");
    let fields: Vec<(&str, &str)> = problem.errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect();
    assert_eq!(fields, [("items[1].payee_msisdn", "invalid_msisdn"), ("items[2].amount", "invalid_amount")], "{refused}");
    // A malformed line is named by its data row alone.
    let broken = format!("{HEADER}{good},1,OK,\n{good},1,\"broken,\n");
    let refused = maker.bulk_payouts().upload_csv("BROKEN", broken.as_bytes()).await.unwrap_err();
    assert_eq!(refused.code(), Some(&ErrorCode::ValidationFailed));
    assert_eq!(api(&refused).errors[0].field, "items[1]", "{refused}");
    // No reference for the batch: a field error too.
    let unnamed = maker.bulk_payouts().upload_csv("", format!("{HEADER}{good},1,OK,\n").as_bytes()).await.unwrap_err();
    assert_eq!(unnamed.code(), Some(&ErrorCode::ValidationFailed), "{unnamed}");
    assert!(api(&unnamed).errors.iter().any(|e| e.field == "reference"), "{unnamed}");
    let listed: Vec<_> = maker.bulk_payouts().list().stream().try_collect().await.unwrap();
    assert!(listed.is_empty(), "nothing stored: {listed:?}");
}

async fn a_json_batch_is_rejected_with_its_reason_and_pays_nothing(db: Db) {
    let app = TestApp::shared(db);
    let (maker, checker, _, checker_creds) = maker_and_checker(app, "1000").await;
    let before = maker.accounts().balance(AccountKind::Payout).await.unwrap().available;
    let batch = NewBulkPayout::new("PAYROLL-JSON")
        .item(BulkPayoutItem::new(msisdn("0000"), amount(6_000), "A").narration("December"))
        .item(BulkPayoutItem::new(msisdn("0000"), amount(4_001), "B"));
    let made = maker.bulk_payouts().create(&batch).await.unwrap();
    assert_eq!((made.state, made.item_count, made.total_amount), (BulkPayoutState::AwaitingApproval, 2, amount(10_001)));
    let id = made.batch_id.clone();
    let items: Vec<_> = maker.bulk_payouts().items(&id, None).stream().try_collect().await.unwrap();
    assert_eq!(
        items.iter().map(|p| (p.reference.as_str(), p.narration.as_deref())).collect::<Vec<_>>(),
        [("A", Some("December")), ("B", None)]
    );
    assert!(items.iter().all(|p| p.state == PayoutState::Pending));

    // A reason is required, and the maker may not reject either.
    let no_reason = checker.bulk_payouts().reject(&id, "").await.unwrap_err();
    assert_eq!(no_reason.code(), Some(&ErrorCode::ValidationFailed), "{no_reason}");
    assert_eq!(api(&no_reason).errors[0].field, "reason");
    let own = maker.bulk_payouts().reject(&id, "mine").await.unwrap_err();
    assert_eq!(own.code(), Some(&ErrorCode::InsufficientScope), "{own}");

    let k = key();
    let rejected = checker.bulk_payouts().reject_with_key(&id, "wrong month", &k).await.unwrap();
    assert_eq!((rejected.state, rejected.rejection_reason.as_deref()), (BulkPayoutState::Rejected, Some("wrong month")));
    assert_eq!(rejected.rejected_by.as_deref(), Some(checker_creds.client_id.as_str()));
    assert_eq!((rejected.approved_by.as_deref(), counts(rejected.counts)), (None, (0, 0, 2)));
    assert!(rejected.completed_at.is_some());
    assert_eq!(checker.bulk_payouts().reject_with_key(&id, "wrong month", &k).await.unwrap(), rejected, "replayed under its key");
    assert_eq!(maker.bulk_payouts().wait(&id, WAIT).await.unwrap(), rejected, "final: answered at once");
    let late = checker.bulk_payouts().approve(&id).await.unwrap_err();
    assert_eq!((api(&late).status, late.code()), (409, Some(&ErrorCode::InvalidState)), "{late}");
    let again = checker.bulk_payouts().reject(&id, "twice").await.unwrap_err();
    assert_eq!(again.code(), Some(&ErrorCode::InvalidState), "{again}");

    let items: Vec<_> = maker.bulk_payouts().items(&id, Some(PayoutState::Failed)).stream().try_collect().await.unwrap();
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|p| p.failure_reason == Some(malipo_client::PayoutFailure::BulkPayoutRejected)), "{items:?}");
    assert_eq!(maker.accounts().balance(AccountKind::Payout).await.unwrap().available, before, "nothing paid or held");
    let missing = checker.bulk_payouts().get("bp_doesnotexist").await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));
}

/// A key pair a person created in the console acts as that person for the maker/checker rule.
/// The console gives such key pairs the organisation kind's default scopes, never
/// `bulk:approve`, so the test makes the situation by hand: a person is invited, and both key
/// pairs are recorded as created by them (the row `created_by` a console-made key pair has).
async fn a_checker_acting_for_the_person_who_made_the_batch_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (maker, checker, maker_creds, checker_creds) = maker_and_checker(app, "1000").await;
    let p = app.platform.clone();
    let org = malipo_core::OrgId::parse(&maker_creds.org_id).unwrap();
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let invited = tokio::task::spawn_blocking(move || {
        p.people().invite(malipo_service::Inviter::Operator, &org, &malipo_service::Invitee { email, role: "maker".into(), name: None })
    })
    .await
    .unwrap()
    .unwrap();
    let sql = format!(
        "UPDATE credentials SET created_by = '{}' WHERE client_id IN ('{}', '{}')",
        invited.user_id.as_str(),
        maker_creds.client_id,
        checker_creds.client_id
    );
    let changed = tokio::task::spawn_blocking(move || app.db.run(&sql)).await.unwrap();
    assert_eq!(changed, 2);
    let before = maker.accounts().balance(AccountKind::Payout).await.unwrap().available;
    let made = maker
        .bulk_payouts()
        .create(&NewBulkPayout::new("OWN").item(BulkPayoutItem::new(msisdn("0000"), amount(1_000), "A")))
        .await
        .unwrap();
    let id = made.batch_id;
    let approve = checker.bulk_payouts().approve(&id).await.unwrap_err();
    assert_eq!((api(&approve).status, approve.code()), (403, Some(&ErrorCode::MakerCheckerViolation)), "{approve}");
    let reject = checker.bulk_payouts().reject(&id, "mine").await.unwrap_err();
    assert_eq!(reject.code(), Some(&ErrorCode::MakerCheckerViolation), "{reject}");
    let untouched = checker.bulk_payouts().get(&id).await.unwrap();
    assert_eq!((untouched.state, untouched.approved_by, untouched.rejected_by), (BulkPayoutState::AwaitingApproval, None, None));
    assert_eq!(maker.accounts().balance(AccountKind::Payout).await.unwrap().available, before, "nothing reserved");
}

async fn a_payment_request_is_created_listed_read_paid_over_ussd_and_another_cancelled(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let client = Client::new(&app.base, &cast.merchant.client_id, &cast.merchant.client_secret).unwrap();
    let customer = cast.customer(app, "6201", PIN, "1000").await;
    let before = client.accounts().balance(AccountKind::Collection).await.unwrap().available;

    let k = key();
    let ask = NewPaymentRequest::new(amount(50_000), "INV-SDK-1").description("Table 12").expires_in(3600);
    let made = client.payment_requests().create_with_key(&ask, &k).await.unwrap();
    assert!(made.request_id.starts_with("pr_"), "{made:?}");
    assert!(made.pay_code.len() == 6 && made.pay_code.bytes().all(|b| b.is_ascii_digit()), "{made:?}");
    assert_eq!((made.state, made.mode, made.currency.as_str()), (PaymentRequestState::Open, Mode::Live, "KES"));
    assert_eq!((made.amount, made.fee, made.reference.as_str()), (amount(50_000), amount(200), "INV-SDK-1"));
    assert_eq!((made.description.as_deref(), &made.payer_msisdn, &made.paid_by_msisdn), (Some("Table 12"), &None, &None));
    assert_eq!((&made.transaction_id, &made.paid_at), (&None, &None));
    assert_eq!((made.expires_at - made.created_at).whole_seconds(), 3600);
    assert_eq!(client.payment_requests().create_with_key(&ask, &k).await.unwrap(), made, "replayed under its key");
    let reused = client.payment_requests().create_with_key(&NewPaymentRequest::new(amount(100), "INV-SDK-1"), &k).await.unwrap_err();
    assert_eq!(reused.code(), Some(&ErrorCode::IdempotencyKeyReused), "{reused}");
    let too_soon = client.payment_requests().create(&NewPaymentRequest::new(amount(100), "INV-X").expires_in(59)).await.unwrap_err();
    assert_eq!(too_soon.code(), Some(&ErrorCode::ValidationFailed));
    assert_eq!((api(&too_soon).errors[0].field.as_str(), api(&too_soon).errors[0].code.as_str()), ("expires_in", "invalid_value"));

    let other =
        client.payment_requests().create(&NewPaymentRequest::new(amount(7_550), "INV-SDK-2").payer_msisdn(&customer)).await.unwrap();
    assert_eq!((other.payer_msisdn.as_deref(), other.amount), (Some(customer.as_str()), amount(7_550)));
    assert_ne!(other.pay_code, made.pay_code, "open pay codes differ");
    assert_eq!(client.payment_requests().get(&made.request_id).await.unwrap(), made);
    let all: Vec<_> = client.payment_requests().list(PaymentRequestFilter::default()).limit(1).stream().try_collect().await.unwrap();
    assert_eq!(all, [other.clone(), made.clone()], "newest first, over pages of one");

    // The customer pays the pay code: "Pay merchant", the code, the PIN.
    let screens = cast.dial(app, &customer, &["2", &made.pay_code, PIN]).await;
    assert!(screens[3].starts_with("END Paid KES 500.00"), "{screens:?}");
    let paid = client.payment_requests().get(&made.request_id).await.unwrap();
    assert_eq!((paid.state, paid.paid_by_msisdn.as_deref()), (PaymentRequestState::Paid, Some(customer.as_str())));
    assert!(paid.transaction_id.as_deref().is_some_and(|t| t.starts_with("tx_")) && paid.paid_at.is_some(), "{paid:?}");
    let after = client.accounts().balance(AccountKind::Collection).await.unwrap().available;
    assert_eq!(after, before + paid.amount - paid.fee, "the merchant got the amount less the fee");
    assert_eq!(cast.wallet(app, &customer).await.raw("balance"), "500.00", "the customer paid the amount");

    // Cancelled: once (a replay under its key answers the same), never a paid one.
    let ck = key();
    let cancelled = client.payment_requests().cancel_with_key(&other.request_id, &ck).await.unwrap();
    assert_eq!((cancelled.state, &cancelled.paid_at), (PaymentRequestState::Cancelled, &None));
    assert_eq!(client.payment_requests().cancel_with_key(&other.request_id, &ck).await.unwrap(), cancelled);
    let twice = client.payment_requests().cancel(&other.request_id).await.unwrap_err();
    assert_eq!((api(&twice).status, twice.code()), (409, Some(&ErrorCode::InvalidState)), "{twice}");
    let too_late = client.payment_requests().cancel(&made.request_id).await.unwrap_err();
    assert_eq!((api(&too_late).status, too_late.code()), (409, Some(&ErrorCode::InvalidState)), "{too_late}");
    assert_eq!(client.payment_requests().get(&made.request_id).await.unwrap(), paid, "still paid");
    let missing = client.payment_requests().cancel("pr_doesnotexist").await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));

    let only = |state| client.payment_requests().list(PaymentRequestFilter::default().state(state)).stream().try_collect::<Vec<_>>();
    assert_eq!(only(PaymentRequestState::Paid).await.unwrap(), [paid]);
    assert_eq!(only(PaymentRequestState::Cancelled).await.unwrap(), [cancelled]);
    assert!(only(PaymentRequestState::Open).await.unwrap().is_empty());
    app.assert_ledger_ok().await;
}

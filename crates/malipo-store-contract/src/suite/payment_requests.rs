//! Merchant payment requests: storage, scoping, the open pay code unique per mode, guarded
//! updates and what the database refuses, lookups by pay code and payer, listing, the expiry
//! claim, and a request paid by one journal only.

use malipo_core::{MinorUnit, Mode, Msisdn, OrgId, PaymentRequestId, TransactionId};
use malipo_ledger::{AccountKind, JournalKind};
use malipo_requests::{PayCode, PaymentRequest, RequestFilter, RequestState};
use malipo_service::{ServiceError, Store, StoreError};

use crate::fixtures::*;

/// An open request of `m` for `amount` (fee 1% of it) with pay code `code`, expiring an hour
/// after `created_at`.
fn request(m: &Merchant, mode: Mode, code: &str, amount: i64, created_at: malipo_core::Timestamp) -> PaymentRequest {
    PaymentRequest {
        id: PaymentRequestId::new(),
        org_id: m.org.id.clone(),
        mode,
        pay_code: PayCode::parse(code).unwrap(),
        state: RequestState::Open,
        amount: MinorUnit::new(amount),
        fee: MinorUnit::new(amount / 100),
        currency: KES,
        reference: format!("INV-{code}"),
        description: None,
        payer_msisdn: None,
        paid_by_msisdn: None,
        transaction_id: None,
        merchant_account: m.collection.id.clone(),
        expires_at: created_at.plus_seconds(3600),
        created_at,
        updated_at: created_at,
        paid_at: None,
    }
}

/// The request paid by `payer` with `tx` at `when`.
fn paid(r: PaymentRequest, payer: &Msisdn, tx: &TransactionId, when: malipo_core::Timestamp) -> PaymentRequest {
    PaymentRequest {
        state: RequestState::Paid,
        paid_by_msisdn: Some(payer.clone()),
        transaction_id: Some(tx.clone()),
        paid_at: Some(when),
        updated_at: when,
        ..r
    }
}

fn closed(r: PaymentRequest, state: RequestState, when: malipo_core::Timestamp) -> PaymentRequest {
    PaymentRequest { state, updated_at: when, ..r }
}

fn insert(store: &dyn Store, r: &PaymentRequest) {
    commit(store, |tx| Ok(tx.insert_payment_request(r)?));
}

fn get(store: &dyn Store, org: &OrgId, mode: Mode, id: &PaymentRequestId) -> Option<PaymentRequest> {
    query(store, |tx| Ok(tx.payment_request(org, mode, id)?))
}

fn is_other(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Other(_)))
}

/// Requests round trip (every field, optional ones set and unset, every state) within their
/// organisation and mode only; `lock_payment_request` finds one by id alone; an existing id or
/// transaction is refused as a duplicate.
pub fn payment_requests_round_trip_scoped_by_org_and_mode(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live =
        Merchant { collection: insert_account(store, org_account(&a.org, Mode::Live, AccountKind::Collection, at(0))), ..a.clone() };
    let payer = msisdn("254712000070");
    let tx_id = TransactionId::new();
    let plain = request(&a, Mode::Test, "000001", 50_000, at(1));
    let full = PaymentRequest {
        description: Some("Table 12, «lunch» ✓".into()),
        payer_msisdn: Some(payer.clone()),
        ..paid(request(&a, Mode::Test, "000002", 120_050, at(2)), &payer, &tx_id, at(3))
    };
    let cancelled = closed(request(&a, Mode::Test, "000003", 99, at(4)), RequestState::Cancelled, at(5));
    let expired = closed(request(&a, Mode::Test, "000004", 1, at(4)), RequestState::Expired, at(3605));
    let live = request(&a_live, Mode::Live, "000001", 700, at(6));
    let all = [&plain, &full, &cancelled, &expired, &live];
    for r in all {
        insert(store, r);
    }
    for r in all {
        assert_eq!(get(store, &a.org.id, r.mode, &r.id).as_ref(), Some(r), "request {} round trips", r.id);
        assert_eq!(commit(store, |tx| Ok(tx.lock_payment_request(&r.id)?)).as_ref(), Some(r));
    }
    assert_eq!(get(store, &b.org.id, Mode::Test, &plain.id), None, "another organisation's");
    assert_eq!(get(store, &a.org.id, Mode::Live, &plain.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &live.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &PaymentRequestId::new()), None);
    assert_eq!(commit(store, |tx| Ok(tx.lock_payment_request(&PaymentRequestId::new())?)), None);

    let same_id = PaymentRequest { pay_code: PayCode::parse("999999").unwrap(), ..plain.clone() };
    let same_tx = paid(request(&a, Mode::Test, "000009", 500, at(7)), &payer, &tx_id, at(8));
    for dup in [&same_id, &same_tx] {
        assert_eq!(refused(store, |tx| Ok(tx.insert_payment_request(dup)?)), duplicate(), "{dup:?}");
    }
    let fresh = request(&b, Mode::Test, "000010", 500, at(9));
    commit(store, |tx| {
        assert_eq!(tx.insert_payment_request(&same_id), Err(StoreError::Duplicate));
        tx.insert_payment_request(&fresh)?;
        Ok(())
    });
    assert_eq!(get(store, &b.org.id, Mode::Test, &fresh.id), Some(fresh), "the transaction stays usable after a duplicate");
}

/// An open pay code names one request of its mode: a second open request with it is refused as
/// a duplicate (the transaction stays usable, so another code can be drawn); the same code is
/// free in the other mode, for closed requests, and again once its request closes.
pub fn an_open_pay_code_is_unique_per_mode(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let b_live =
        Merchant { collection: insert_account(store, org_account(&b.org, Mode::Live, AccountKind::Collection, at(0))), ..b.clone() };
    let first = request(&a, Mode::Test, "482913", 1_000, at(1));
    insert(store, &first);
    let taken = request(&b, Mode::Test, "482913", 2_000, at(2));
    let other_code = request(&b, Mode::Test, "482914", 2_000, at(2));
    commit(store, |tx| {
        assert_eq!(tx.insert_payment_request(&taken), Err(StoreError::Duplicate), "another merchant, same mode");
        tx.insert_payment_request(&other_code)?;
        Ok(())
    });
    assert_eq!(get(store, &b.org.id, Mode::Test, &taken.id), None);
    insert(store, &request(&b_live, Mode::Live, "482913", 3_000, at(3)));
    insert(store, &closed(request(&b, Mode::Test, "482913", 4_000, at(4)), RequestState::Expired, at(3604)));
    insert(store, &closed(request(&b, Mode::Test, "482913", 4_000, at(5)), RequestState::Cancelled, at(6)));

    commit(store, |tx| Ok(tx.update_payment_request(&closed(first.clone(), RequestState::Cancelled, at(7)))?));
    let reused = request(&b, Mode::Test, "482913", 5_000, at(8));
    insert(store, &reused);
    assert_eq!(refused(store, |tx| Ok(tx.insert_payment_request(&request(&a, Mode::Test, "482913", 1, at(9)))?)), duplicate());
}

/// An update persists the fields that move (state, payer, transaction, times) and nothing else,
/// only while the stored request is open; the database refuses impossible requests.
pub fn payment_request_updates_are_guarded_and_states_checked(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let payer = msisdn("254712000071");
    let r = request(&a, Mode::Test, "100001", 10_000, at(1));
    insert(store, &r);
    let tx_id = TransactionId::new();
    let moved = PaymentRequest { amount: MinorUnit::new(1), reference: "CHANGED".into(), ..paid(r.clone(), &payer, &tx_id, at(2)) };
    commit(store, |tx| Ok(tx.update_payment_request(&moved)?));
    let stored = get(store, &a.org.id, Mode::Test, &r.id).unwrap();
    assert_eq!(stored, paid(r.clone(), &payer, &tx_id, at(2)), "only the moving fields change");
    // Paid is final: a second update (say, a second payment) is refused.
    let again = paid(r.clone(), &msisdn("254712000072"), &TransactionId::new(), at(3));
    assert!(is_other(&refused(store, |tx| Ok(tx.update_payment_request(&again)?))));
    assert!(is_other(&refused(store, |tx| Ok(tx.update_payment_request(&request(&a, Mode::Test, "100002", 1, at(1)))?))));
    assert_eq!(get(store, &a.org.id, Mode::Test, &r.id), Some(stored), "unchanged");

    let open = request(&a, Mode::Test, "100003", 10_000, at(1));
    insert(store, &open);
    let half_paid = [
        PaymentRequest { transaction_id: None, ..paid(open.clone(), &payer, &TransactionId::new(), at(2)) },
        PaymentRequest { paid_at: None, ..paid(open.clone(), &payer, &TransactionId::new(), at(2)) },
        PaymentRequest { paid_by_msisdn: None, ..paid(open.clone(), &payer, &TransactionId::new(), at(2)) },
        PaymentRequest { state: RequestState::Cancelled, ..paid(open.clone(), &payer, &TransactionId::new(), at(2)) },
    ];
    for bad in &half_paid {
        assert!(is_other(&refused(store, |tx| Ok(tx.update_payment_request(bad)?))), "{bad:?}");
    }
    let same_tx = paid(open.clone(), &payer, &tx_id, at(2));
    assert_eq!(refused(store, |tx| Ok(tx.update_payment_request(&same_tx)?)), duplicate(), "another request's transaction");

    let unknown_org = PaymentRequest { org_id: OrgId::new(), ..request(&a, Mode::Test, "100004", 1, at(1)) };
    let impossible = [
        PaymentRequest { amount: MinorUnit::ZERO, fee: MinorUnit::ZERO, ..request(&a, Mode::Test, "100005", 1, at(1)) },
        PaymentRequest { fee: MinorUnit::new(-1), ..request(&a, Mode::Test, "100006", 100, at(1)) },
        PaymentRequest { fee: MinorUnit::new(101), ..request(&a, Mode::Test, "100007", 100, at(1)) },
        PaymentRequest { expires_at: at(1), ..request(&a, Mode::Test, "100008", 100, at(1)) },
        PaymentRequest { paid_at: Some(at(2)), ..request(&a, Mode::Test, "100009", 100, at(1)) },
        PaymentRequest { state: RequestState::Paid, ..request(&a, Mode::Test, "100010", 100, at(1)) },
        unknown_org,
    ];
    for bad in &impossible {
        assert!(is_other(&refused(store, |tx| Ok(tx.insert_payment_request(bad)?))), "{bad:?}");
    }
    let fee_is_amount = PaymentRequest { fee: MinorUnit::new(100), ..request(&a, Mode::Test, "100011", 100, at(1)) };
    insert(store, &fee_is_amount);
}

/// A pay code finds the open request of its mode; when none is open, the one that used it last
/// (so the customer hears why it cannot be paid); nothing for an unused code.
pub fn payment_request_by_code_prefers_the_open_one(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let code = PayCode::parse("777001").unwrap();
    let by_code = |mode: Mode| query(store, |tx| Ok(tx.payment_request_by_code(mode, &code)?));
    assert_eq!(by_code(Mode::Test), None);
    let older = closed(request(&a, Mode::Test, "777001", 1_000, at(1)), RequestState::Expired, at(3601));
    let newer = closed(request(&a, Mode::Test, "777001", 2_000, at(2)), RequestState::Cancelled, at(3700));
    let oldest_change = closed(request(&a, Mode::Test, "777001", 3_000, at(3)), RequestState::Cancelled, at(4));
    for r in [&older, &newer, &oldest_change] {
        insert(store, r);
    }
    assert_eq!(by_code(Mode::Test), Some(newer), "the one changed last");
    let open = request(&a, Mode::Test, "777001", 4_000, at(5));
    insert(store, &open);
    assert_eq!(by_code(Mode::Test), Some(open), "the open one first");
    assert_eq!(by_code(Mode::Live), None, "another mode's codes are not seen");
}

/// Requests list newest first in pages, within the organisation and mode, filtered by state;
/// the open requests addressed to a number list oldest first.
pub fn list_payment_requests_pages_and_filters(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let payer = msisdn("254712000073");
    let mine: Vec<PaymentRequest> = (1..=5).map(|t| request(&a, Mode::Test, &format!("20000{t}"), 1_000 * t, at(t))).collect();
    for r in &mine {
        insert(store, r);
    }
    let theirs = PaymentRequest { payer_msisdn: Some(payer.clone()), ..request(&b, Mode::Test, "200009", 100, at(7)) };
    insert(store, &theirs);
    let mut newest_first = mine.clone();
    newest_first.reverse();
    let list = |org: &OrgId, filter: &RequestFilter, before: Option<&PaymentRequestId>, limit: usize| {
        query(store, |tx| Ok(tx.list_payment_requests(org, Mode::Test, filter, before, limit)?))
    };
    let all = RequestFilter::default();
    assert_eq!(list(&a.org.id, &all, None, 100), newest_first);
    assert_eq!(list(&a.org.id, &all, None, 2), newest_first[..2].to_vec());
    assert_eq!(list(&a.org.id, &all, Some(&newest_first[1].id), 2), newest_first[2..4].to_vec());
    assert_eq!(list(&a.org.id, &all, Some(&newest_first[4].id), 2), vec![]);
    assert_eq!(list(&b.org.id, &all, None, 100), vec![theirs.clone()]);
    assert_eq!(query(store, |tx| Ok(tx.list_payment_requests(&a.org.id, Mode::Live, &all, None, 100)?)), vec![]);

    let cancelled = closed(mine[1].clone(), RequestState::Cancelled, at(10));
    commit(store, |tx| Ok(tx.update_payment_request(&cancelled)?));
    let only = |state| RequestFilter { state: Some(state) };
    assert_eq!(list(&a.org.id, &only(RequestState::Cancelled), None, 100), vec![cancelled]);
    assert_eq!(list(&a.org.id, &only(RequestState::Open), None, 100).len(), 4);
    assert_eq!(list(&a.org.id, &only(RequestState::Paid), None, 100), vec![]);

    let second = PaymentRequest { payer_msisdn: Some(payer.clone()), ..request(&a, Mode::Test, "200010", 100, at(8)) };
    let closed_one = closed(
        PaymentRequest { payer_msisdn: Some(payer.clone()), ..request(&a, Mode::Test, "200011", 100, at(8)) },
        RequestState::Expired,
        at(3608),
    );
    for r in [&second, &closed_one] {
        insert(store, r);
    }
    let addressed = |mode| query(store, |tx| Ok(tx.open_payment_requests_for_payer(mode, &payer)?));
    assert_eq!(addressed(Mode::Test), vec![theirs, second], "open ones, oldest first");
    assert_eq!(addressed(Mode::Live), vec![]);
    assert_eq!(query(store, |tx| Ok(tx.open_payment_requests_for_payer(Mode::Test, &msisdn("254712000074"))?)), vec![]);
}

/// The expiry claim takes open requests whose expiry has come, soonest first, at most `limit`.
pub fn lock_due_payment_requests_takes_the_open_expired_ones(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let due_late = PaymentRequest { expires_at: at(50), ..request(&a, Mode::Test, "300001", 100, at(1)) };
    let due_early = PaymentRequest { expires_at: at(20), ..request(&a, Mode::Test, "300002", 100, at(2)) };
    let not_yet = PaymentRequest { expires_at: at(500), ..request(&a, Mode::Test, "300003", 100, at(3)) };
    let cancelled =
        closed(PaymentRequest { expires_at: at(10), ..request(&a, Mode::Test, "300004", 100, at(4)) }, RequestState::Cancelled, at(5));
    for r in [&due_late, &due_early, &not_yet, &cancelled] {
        insert(store, r);
    }
    let due = |now, limit| commit(store, |tx| Ok(tx.lock_due_payment_requests(now, limit)?));
    assert_eq!(due(at(100), 10), vec![due_early.clone(), due_late.clone()]);
    assert_eq!(due(at(100), 1), vec![due_early.clone()]);
    assert_eq!(due(at(50), 10), vec![due_early.clone(), due_late.clone()], "due at its expiry");
    assert_eq!(due(at(19), 10), vec![]);
    assert_eq!(due(at(100), 0), vec![]);
    commit(store, |tx| Ok(tx.update_payment_request(&closed(due_early.clone(), RequestState::Expired, at(100)))?));
    assert_eq!(due(at(1000), 10), vec![due_late, not_yet]);
}

/// A payment request is paid by one `payment_request` journal: a second one naming it is refused.
pub fn a_payment_request_is_paid_once(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payer = msisdn("254712000075");
    let (w, _) = insert_wallet(store, Mode::Test, KES, &payer);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 100_000, at(1)));
    let r = request(&m, Mode::Test, "400001", 10_000, at(2));
    insert(store, &r);
    let pay = |t| malipo_ledger::Journal {
        source_ref: r.id.to_string(),
        ..journal(
            Mode::Test,
            KES,
            JournalKind::PaymentRequest,
            &[(&w.id, -10_000), (&m.collection.id, 9_900), (&kes.revenue.id, 100)],
            at(t),
        )
    };
    post(store, pay(3));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&pay(4))?)), duplicate());
    assert_eq!(balance(store, &w.id), 90_000, "paid once");
    assert_eq!(balance(store, &m.collection.id), 9_900);
    assert_ledger_sound(store);
}

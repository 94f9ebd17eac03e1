//! The console's people: users, recovery codes, invitations, organisations' settings, sessions,
//! sign-in failure counts and the audit log. Every guarded change answers whether it happened,
//! and a change that is refused leaves the row as it was.

use malipo_auth::{ConsoleSession, Failures, Role, User};
use malipo_core::{AuditId, Mode, OrgId, UserId};
use malipo_service::{AuditEntry, AuditFilter, Invitation, ServiceError, Store, StoreError};

use crate::fixtures::*;
use crate::people_fixtures::*;

fn get_user(store: &dyn Store, id: &UserId) -> Option<User> {
    query(store, |tx| Ok(tx.user(id)?))
}

/// A refusal by a constraint or foreign key: any store error but `Duplicate`.
fn is_constraint(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Other(_)))
}

/// Users round trip by id, by email as compared and by organisation (oldest first, removed ones
/// too); a second user with the same id, or with the same email in other capitals or with spaces
/// around it, is a duplicate and changes nothing.
pub fn users_round_trip_by_id_email_and_organisation(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    let newer = user(&a, "Zawadi@Duka.example", Role::Finance, at(20));
    let older = User {
        totp_secret: Some(vec![0, 1, 2, 255]),
        totp_enabled_at: Some(at(12)),
        totp_last_step: 59_000_000,
        demo: true,
        removed_at: Some(at(15)),
        ..active(user(&a, "amina@duka.example", Role::Admin, at(10)), at(11))
    };
    let other = user(&b, "baraka@b.example", Role::Viewer, at(5));
    // Inserted newest first, so that insertion order is not the answer.
    commit(store, |tx| {
        tx.insert_user(&newer)?;
        tx.insert_user(&other)?;
        tx.insert_user(&older)?;
        Ok(())
    });
    assert_eq!(get_user(store, &older.id), Some(older.clone()), "every field round trips");
    assert_eq!(get_user(store, &newer.id), Some(newer.clone()));
    assert_eq!(get_user(store, &UserId::new()), None);
    assert_eq!(query(store, |tx| Ok(tx.user_by_email("zawadi@duka.example")?)), Some(newer.clone()), "by the email as compared");
    assert_eq!(query(store, |tx| Ok(tx.user_by_email(&User::email_key(" AMINA@duka.EXAMPLE"))?)), Some(older.clone()));
    assert_eq!(query(store, |tx| Ok(tx.user_by_email("nobody@duka.example")?)), None);
    assert_eq!(query(store, |tx| Ok(tx.users_of_org(&a.id)?)), vec![older.clone(), newer.clone()], "oldest first");
    assert_eq!(query(store, |tx| Ok(tx.users_of_org(&b.id)?)), vec![other]);
    assert_eq!(query(store, |tx| Ok(tx.users_of_org(&OrgId::new())?)), vec![]);

    let same_email = user(&a, " ZAWADI@duka.example ", Role::Viewer, at(30));
    assert_eq!(refused(store, |tx| Ok(tx.insert_user(&same_email)?)), duplicate(), "an email differing only in case, in one organisation");
    let same_id = User { email: "else@duka.example".into(), ..newer.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_user(&same_id)?)), duplicate());
    assert_eq!(get_user(store, &same_email.id), None);
    assert_eq!(get_user(store, &newer.id), Some(newer.clone()));
    // An email someone accepted is theirs: not even invited elsewhere as an active person.
    let taken = active(user(&b, "AMINA@duka.example", Role::Viewer, at(31)), at(32));
    assert_eq!(refused(store, |tx| Ok(tx.insert_user(&taken)?)), duplicate(), "accepted elsewhere");
}

/// Until someone accepts, invitations to one email may wait in several organisations; the first
/// to accept takes the email, and the others can then no longer be accepted (the store refuses
/// with `Duplicate` and changes nothing). By email, the person who accepted is found, else the
/// oldest invitation waiting.
pub fn an_email_waits_in_several_organisations_until_one_accepts_it(store: &dyn Store) {
    let (a, b, c) = (insert_org(store, "A", at(0)), insert_org(store, "B", at(0)), insert_org(store, "C", at(0)));
    let first = user(&a, "wanjiru@shop.example", Role::Viewer, at(10));
    let second = user(&b, "Wanjiru@Shop.example", Role::Admin, at(11));
    commit(store, |tx| {
        tx.insert_user(&second)?;
        tx.insert_user(&first)?;
        Ok(())
    });
    let key = User::email_key(&first.email);
    assert_eq!(query(store, |tx| Ok(tx.user_by_email(&key)?)), Some(first.clone()), "the oldest waiting");
    assert!(commit(store, |tx| Ok(tx.activate_user(&second.id, "Wanjiru", "$argon2id$x", at(20))?)));
    let joined = get_user(store, &second.id).unwrap_or_else(|| panic!("the person"));
    assert_eq!(query(store, |tx| Ok(tx.user_by_email(&key)?)), Some(joined), "the person who accepted");
    assert_eq!(refused(store, |tx| Ok(tx.activate_user(&first.id, "Wanjiru", "$argon2id$x", at(21))?)), duplicate());
    assert_eq!(get_user(store, &first.id).and_then(|u| u.activated_at), None, "unchanged");
    // A new invitation elsewhere may still wait (it can never be accepted either).
    let third = user(&c, "wanjiru@shop.example", Role::Viewer, at(30));
    commit(store, |tx| Ok(tx.insert_user(&third)?));
    assert_eq!(refused(store, |tx| Ok(tx.activate_user(&third.id, "W", "$argon2id$x", at(31))?)), duplicate());
}

/// The store refuses a user whose second factor is on without a secret, one active without a
/// password, and one of an unknown organisation.
pub fn users_refuse_impossible_states(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let base = user(&org, "a@duka.example", Role::Admin, at(1));
    let no_secret = User { totp_enabled_at: Some(at(2)), ..base.clone() };
    let no_password = User { activated_at: Some(at(2)), ..base.clone() };
    let no_org = User { org_id: OrgId::new(), ..base.clone() };
    for bad in [no_secret, no_password, no_org] {
        let e = refused(store, |tx| Ok(tx.insert_user(&bad)?));
        assert!(is_constraint(&e), "{bad:?}: {e:?}");
    }
    assert_eq!(query(store, |tx| Ok(tx.users_of_org(&org.id)?)), vec![]);
    insert_user(store, base);
}

/// Activation sets the name, password hash and time once: a second activation, one of an
/// unknown user and one of a user removed before accepting answer `false` and change nothing.
pub fn activating_a_user_happens_once(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let invited = insert_user(store, user(&org, "a@duka.example", Role::Viewer, at(1)));
    let gone = insert_user(store, user(&org, "b@duka.example", Role::Viewer, at(1)));
    assert!(commit(store, |tx| Ok(tx.remove_user(&gone.id, at(2))?)));

    assert!(commit(store, |tx| Ok(tx.activate_user(&invited.id, "Amina", "$argon2id$first", at(5))?)));
    let activated =
        User { name: "Amina".into(), password_hash: Some("$argon2id$first".into()), activated_at: Some(at(5)), ..invited.clone() };
    assert_eq!(get_user(store, &invited.id), Some(activated.clone()));
    assert!(activated.is_active());
    assert!(!commit(store, |tx| Ok(tx.activate_user(&invited.id, "Mallory", "$argon2id$second", at(6))?)), "activated once");
    assert_eq!(get_user(store, &invited.id), Some(activated));
    assert!(!commit(store, |tx| Ok(tx.activate_user(&UserId::new(), "X", "$argon2id$x", at(6))?)));
    assert!(!commit(store, |tx| Ok(tx.activate_user(&gone.id, "B", "$argon2id$b", at(6))?)), "removed before accepting");
    assert_eq!(get_user(store, &gone.id).and_then(|u| u.activated_at), None);
}

/// A password is replaced, a role changed, and a person removed once (the first removal's time
/// stays); each answers `false` for an unknown user.
pub fn passwords_roles_and_removal(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let u = insert_user(store, active(user(&org, "a@duka.example", Role::Viewer, at(1)), at(2)));
    assert!(commit(store, |tx| Ok(tx.set_password(&u.id, "$argon2id$new")?)));
    assert!(commit(store, |tx| Ok(tx.set_role(&u.id, Role::Finance)?)));
    let stored = get_user(store, &u.id).expect("stored");
    assert_eq!((stored.password_hash.as_deref(), stored.role), (Some("$argon2id$new"), Role::Finance));
    let nobody = UserId::new();
    assert!(!commit(store, |tx| Ok(tx.set_password(&nobody, "$argon2id$x")?)));
    assert!(!commit(store, |tx| Ok(tx.set_role(&nobody, Role::Admin)?)));
    assert!(!commit(store, |tx| Ok(tx.remove_user(&nobody, at(3))?)));

    assert!(commit(store, |tx| Ok(tx.remove_user(&u.id, at(3))?)));
    assert!(!commit(store, |tx| Ok(tx.remove_user(&u.id, at(4))?)), "removed once");
    let removed = get_user(store, &u.id).expect("a removed person is still stored");
    assert_eq!(removed.removed_at, Some(at(3)));
    assert!(!removed.is_active());
    assert_eq!(query(store, |tx| Ok(tx.users_of_org(&org.id)?)), vec![removed]);
}

/// The second factor: no turning on without a secret; a secret set (and replaced) only while it
/// is off; turned on once, with the confirming code's step; then a code's step is accepted only
/// when later than the stored one (a replay, or the same step twice, answers `false`).
pub fn totp_enrolment_and_steps_are_guarded(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let u = insert_user(store, active(user(&org, "a@duka.example", Role::Admin, at(1)), at(2)));
    assert!(!commit(store, |tx| Ok(tx.enable_totp(&u.id, 100, at(3))?)), "no secret yet");
    assert!(commit(store, |tx| Ok(tx.set_totp_secret(&u.id, b"sealed one")?)));
    assert!(commit(store, |tx| Ok(tx.set_totp_secret(&u.id, b"sealed two")?)), "replaced while off");
    assert!(commit(store, |tx| Ok(tx.enable_totp(&u.id, 100, at(3))?)));
    let on = get_user(store, &u.id).expect("stored");
    assert_eq!((on.totp_secret.as_deref(), on.totp_enabled_at, on.totp_last_step), (Some(&b"sealed two"[..]), Some(at(3)), 100));
    assert!(on.has_second_factor());
    assert!(!commit(store, |tx| Ok(tx.enable_totp(&u.id, 200, at(4))?)), "already on");
    assert!(!commit(store, |tx| Ok(tx.set_totp_secret(&u.id, b"sealed three")?)), "no new secret while on");

    assert!(!commit(store, |tx| Ok(tx.advance_totp_step(&u.id, 100)?)), "the confirming code again");
    assert!(!commit(store, |tx| Ok(tx.advance_totp_step(&u.id, 99)?)), "an earlier step");
    assert!(commit(store, |tx| Ok(tx.advance_totp_step(&u.id, 101)?)));
    assert!(!commit(store, |tx| Ok(tx.advance_totp_step(&u.id, 101)?)), "the same code twice");
    assert!(commit(store, |tx| Ok(tx.advance_totp_step(&u.id, 105)?)));
    assert!(!commit(store, |tx| Ok(tx.advance_totp_step(&UserId::new(), 1_000)?)));
    let stored = get_user(store, &u.id).expect("stored");
    assert_eq!(
        (stored.totp_secret.as_deref(), stored.totp_enabled_at, stored.totp_last_step),
        (Some(&b"sealed two"[..]), Some(at(3)), 105)
    );
}

/// Recovery codes: each works once, for its own person only; replacing them makes every old
/// one unusable; a list naming one digest twice is a duplicate and keeps the codes there were.
pub fn recovery_codes_are_used_once_and_replaced(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let u = insert_user(store, active(user(&org, "a@duka.example", Role::Admin, at(1)), at(2)));
    let v = insert_user(store, active(user(&org, "b@duka.example", Role::Admin, at(1)), at(2)));
    let first: Vec<String> = (0..10).map(|i| digest(&format!("first {i}"))).collect();
    let second: Vec<String> = (0..10).map(|i| digest(&format!("second {i}"))).collect();
    let left = |store: &dyn Store, id: &UserId| query(store, |tx| Ok(tx.recovery_codes_left(id)?));
    assert_eq!(left(store, &u.id), 0);
    commit(store, |tx| Ok(tx.replace_recovery_codes(&u.id, &first, at(3))?));
    assert_eq!(left(store, &u.id), 10);

    assert!(commit(store, |tx| Ok(tx.use_recovery_code(&u.id, &first[4], at(4))?)));
    assert!(!commit(store, |tx| Ok(tx.use_recovery_code(&u.id, &first[4], at(5))?)), "used twice");
    assert!(!commit(store, |tx| Ok(tx.use_recovery_code(&v.id, &first[5], at(5))?)), "another person's code");
    assert!(!commit(store, |tx| Ok(tx.use_recovery_code(&u.id, &digest("never issued"), at(5))?)));
    assert_eq!((left(store, &u.id), left(store, &v.id)), (9, 0));

    commit(store, |tx| Ok(tx.replace_recovery_codes(&u.id, &second, at(6))?));
    assert_eq!(left(store, &u.id), 10, "all new, all unused");
    assert!(!commit(store, |tx| Ok(tx.use_recovery_code(&u.id, &first[0], at(7))?)), "an old code");
    assert!(commit(store, |tx| Ok(tx.use_recovery_code(&u.id, &second[0], at(7))?)));

    let twice = vec![digest("twice"), digest("twice")];
    assert_eq!(refused(store, |tx| Ok(tx.replace_recovery_codes(&u.id, &twice, at(8))?)), duplicate());
    assert_eq!(left(store, &u.id), 9, "the codes there were");
    commit(store, |tx| Ok(tx.replace_recovery_codes(&u.id, &[], at(9))?));
    assert_eq!(left(store, &u.id), 0);
}

/// Invitations round trip by digest; a duplicate digest is refused; one that expires no later
/// than it was sent is refused; accepting works once and only before the expiry (at the expiry
/// itself it no longer does).
pub fn invitations_are_accepted_once_before_expiry(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let admin = insert_user(store, active(user(&org, "admin@duka.example", Role::Admin, at(0)), at(0)));
    let a = insert_user(store, user(&org, "a@duka.example", Role::Viewer, at(10)));
    let b = insert_user(store, user(&org, "b@duka.example", Role::Viewer, at(10)));
    let by_admin = invitation(&a, Some(&admin.id), "token a", at(10));
    let by_operator = invitation(&b, None, "token b", at(10));
    commit(store, |tx| {
        tx.insert_invitation(&by_admin)?;
        tx.insert_invitation(&by_operator)?;
        Ok(())
    });
    assert_eq!(query(store, |tx| Ok(tx.invitation(&by_admin.digest)?)), Some(by_admin.clone()));
    assert_eq!(query(store, |tx| Ok(tx.invitation(&by_operator.digest)?)), Some(by_operator.clone()));
    assert_eq!(query(store, |tx| Ok(tx.invitation(&digest("token c"))?)), None);
    let again = Invitation { user_id: b.id.clone(), ..by_admin.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_invitation(&again)?)), duplicate());
    let backwards = Invitation { expires_at: at(10), ..invitation(&b, None, "token d", at(10)) };
    assert!(is_constraint(&refused(store, |tx| Ok(tx.insert_invitation(&backwards)?))));
    let nobody = invitation(&user(&org, "x@duka.example", Role::Viewer, at(10)), None, "token e", at(10));
    assert!(is_constraint(&refused(store, |tx| Ok(tx.insert_invitation(&nobody)?))), "an unknown user");

    let expiry = by_admin.expires_at;
    assert!(!commit(store, |tx| Ok(tx.accept_invitation(&by_operator.digest, expiry)?)), "at the expiry");
    assert!(!commit(store, |tx| Ok(tx.accept_invitation(&by_operator.digest, expiry.plus_seconds(1))?)), "after it");
    let before = expiry.plus_seconds(-1);
    assert!(commit(store, |tx| Ok(tx.accept_invitation(&by_admin.digest, before)?)));
    assert!(!commit(store, |tx| Ok(tx.accept_invitation(&by_admin.digest, before)?)), "accepted twice");
    assert!(!commit(store, |tx| Ok(tx.accept_invitation(&digest("token c"), at(11))?)));
    assert_eq!(query(store, |tx| Ok(tx.invitation(&by_admin.digest)?)).and_then(|i| i.accepted_at), Some(before));
    assert_eq!(query(store, |tx| Ok(tx.invitation(&by_operator.digest)?)).and_then(|i| i.accepted_at), None);
}

/// An organisation requires two-factor of everyone only once set (and no longer once unset),
/// independently of the others; an unknown organisation's setting is refused.
pub fn organisations_require_two_factor_once_set(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    let requires = |store: &dyn Store, org: &OrgId| query(store, |tx| Ok(tx.org_requires_two_factor(org)?));
    assert!(!requires(store, &a.id), "not by default");
    commit(store, |tx| Ok(tx.set_org_requires_two_factor(&a.id, true)?));
    assert!(requires(store, &a.id) && !requires(store, &b.id));
    commit(store, |tx| Ok(tx.set_org_requires_two_factor(&a.id, true)?));
    commit(store, |tx| Ok(tx.set_org_requires_two_factor(&b.id, false)?));
    assert!(requires(store, &a.id) && !requires(store, &b.id));
    commit(store, |tx| Ok(tx.set_org_requires_two_factor(&a.id, false)?));
    assert!(!requires(store, &a.id));
    assert!(is_constraint(&refused(store, |tx| Ok(tx.set_org_requires_two_factor(&OrgId::new(), true)?))));
}

/// Sessions round trip by digest; a duplicate digest is refused; a touch moves the last request
/// forward, never back; the mode is set; a session ends alone, or with every one of its person's.
pub fn sessions_round_trip_touch_and_end(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let u = insert_user(store, active(user(&org, "a@duka.example", Role::Admin, at(0)), at(0)));
    let v = insert_user(store, active(user(&org, "b@duka.example", Role::Admin, at(0)), at(0)));
    let (s1, s2, s3) = (session(&u, "one", at(10)), session(&u, "two", at(11)), session(&v, "three", at(12)));
    commit(store, |tx| {
        for s in [&s1, &s2, &s3] {
            tx.insert_session(s)?;
        }
        Ok(())
    });
    let get = |store: &dyn Store, digest: &str| query(store, |tx| Ok(tx.session(digest)?));
    assert_eq!(get(store, &s1.digest), Some(s1.clone()));
    assert_eq!(get(store, &digest("nobody")), None);
    assert_eq!(refused(store, |tx| Ok(tx.insert_session(&ConsoleSession { user_id: v.id.clone(), ..s1.clone() })?)), duplicate());
    let orphan = session(&user(&org, "x@duka.example", Role::Admin, at(0)), "orphan", at(10));
    assert!(is_constraint(&refused(store, |tx| Ok(tx.insert_session(&orphan)?))), "an unknown user");

    commit(store, |tx| Ok(tx.touch_session(&s1.digest, at(100))?));
    commit(store, |tx| Ok(tx.touch_session(&s1.digest, at(50))?));
    commit(store, |tx| Ok(tx.touch_session(&digest("nobody"), at(100))?));
    assert!(commit(store, |tx| Ok(tx.set_session_mode(&s1.digest, Mode::Live)?)));
    assert!(!commit(store, |tx| Ok(tx.set_session_mode(&digest("nobody"), Mode::Live)?)));
    assert_eq!(get(store, &s1.digest), Some(ConsoleSession { last_seen_at: at(100), mode: Mode::Live, ..s1.clone() }));

    assert!(commit(store, |tx| Ok(tx.delete_session(&s2.digest)?)));
    assert!(!commit(store, |tx| Ok(tx.delete_session(&s2.digest)?)), "ended once");
    commit(store, |tx| Ok(tx.insert_session(&s2)?));
    assert_eq!(commit(store, |tx| Ok(tx.delete_user_sessions(&u.id)?)), 2, "everywhere at once");
    assert_eq!((get(store, &s1.digest), get(store, &s2.digest)), (None, None));
    assert_eq!(get(store, &s3.digest), Some(s3), "another person's stays");
    assert_eq!(commit(store, |tx| Ok(tx.delete_user_sessions(&u.id)?)), 0);
}

/// The purge deletes the sessions that ended before its times: by their end (expired before
/// `ended_before`) or by idleness (last request before `idle_before`); a session ending exactly
/// at either time stays.
pub fn purge_sessions_by_end_and_by_idle(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let u = insert_user(store, active(user(&org, "a@duka.example", Role::Admin, at(0)), at(0)));
    let base = session(&u, "base", at(0));
    let make = |token: &str, last_seen: i64, expires: i64| ConsoleSession {
        digest: digest(token),
        last_seen_at: at(last_seen),
        expires_at: at(expires),
        ..base.clone()
    };
    let expired = make("expired", 900, 999);
    let at_the_end = make("at the end", 900, 1_000);
    let idle = make("idle", 499, 5_000);
    let idle_at_the_limit = make("idle at the limit", 500, 5_000);
    let live = make("live", 950, 5_000);
    commit(store, |tx| {
        for s in [&expired, &at_the_end, &idle, &idle_at_the_limit, &live] {
            tx.insert_session(s)?;
        }
        Ok(())
    });
    assert_eq!(commit(store, |tx| Ok(tx.purge_sessions(at(1_000), at(500))?)), 2);
    let kept: Vec<bool> = [&expired, &at_the_end, &idle, &idle_at_the_limit, &live]
        .iter()
        .map(|s| query(store, |tx| Ok(tx.session(&s.digest)?)).is_some())
        .collect();
    assert_eq!(kept, vec![false, true, false, true, true]);
    assert_eq!(commit(store, |tx| Ok(tx.purge_sessions(at(1_000), at(500))?)), 0);
}

/// A subject's failures: locking an absent one creates it with no failures and a window from
/// now (locked again later, it is the same row); what is put is locked back as put (a lock set
/// and cleared again) and read back without a lock; a cleared subject starts afresh; subjects
/// are independent.
pub fn failure_counts_lock_put_and_clear(store: &dyn Store) {
    let (account, address) = ("account:a@duka.example", "address:203.0.113.7");
    let fresh = Failures { window_start: at(10), count: 0, locked_until: None };
    assert_eq!(query(store, |tx| Ok(tx.failures(account)?)), None, "none before the first lock");
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures(account, at(10))?)), fresh);
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures(account, at(20))?)), fresh, "created by the first lock");

    let counted = Failures { window_start: at(10), count: 10, locked_until: Some(at(910)) };
    commit(store, |tx| Ok(tx.put_failures(account, &counted)?));
    assert_eq!(query(store, |tx| Ok(tx.failures(account)?)), Some(counted), "read without a lock");
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures(account, at(30))?)), counted);
    let unlocked = Failures { count: 9, locked_until: None, ..counted };
    commit(store, |tx| Ok(tx.put_failures(account, &unlocked)?));
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures(account, at(40))?)), unlocked, "the lock cleared");

    let elsewhere = Failures { window_start: at(5), count: 3, locked_until: None };
    commit(store, |tx| Ok(tx.put_failures(address, &elsewhere)?));
    commit(store, |tx| Ok(tx.clear_failures(account)?));
    commit(store, |tx| Ok(tx.clear_failures("account:nobody@duka.example")?));
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures(account, at(50))?)), Failures { window_start: at(50), ..fresh }, "afresh");
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures(address, at(50))?)), elsewhere);

    // Within one transaction: locked, counted, locked again.
    let seen = commit(store, |tx| {
        let first = tx.lock_failures("address:198.51.100.1", at(60))?;
        tx.put_failures("address:198.51.100.1", &Failures { count: first.count + 1, ..first })?;
        Ok(tx.lock_failures("address:198.51.100.1", at(61))?)
    });
    assert_eq!(seen, Failures { window_start: at(60), count: 1, locked_until: None });
}

/// Failure counts that no longer count (their window began before the bound and they are not
/// locked now) are purged; a count still in its window, or still locked, is kept.
pub fn stale_failure_counts_are_purged(store: &dyn Store) {
    let old = Failures { window_start: at(100), count: 4, locked_until: None };
    let locked = Failures { window_start: at(100), count: 10, locked_until: Some(at(2_000)) };
    let lapsed = Failures { window_start: at(100), count: 10, locked_until: Some(at(900)) };
    let recent = Failures { window_start: at(1_500), count: 2, locked_until: None };
    for (subject, f) in [("account:old", old), ("account:locked", locked), ("account:lapsed", lapsed), ("address:recent", recent)] {
        commit(store, |tx| Ok(tx.put_failures(subject, &f)?));
    }
    assert_eq!(commit(store, |tx| Ok(tx.purge_failures(at(1_000), at(1_000))?)), 2, "the old and the lapsed");
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures("account:locked", at(1_000))?)), locked);
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures("address:recent", at(1_000))?)), recent);
    let again = commit(store, |tx| Ok(tx.lock_failures("account:old", at(1_000))?));
    assert_eq!(again.count, 0, "purged, so afresh");
}

fn entries(store: &dyn Store, filter: &AuditFilter, before: Option<&AuditId>, limit: usize) -> Vec<AuditEntry> {
    query(store, |tx| Ok(tx.audit_entries(filter, before, limit)?))
}

/// The audit log: entries round trip whole and are listed newest first (by their time-ordered
/// ids); filtered by organisation, person, action prefix (compared exactly: `_` is no wildcard
/// and case counts) and time (`from` inclusive, `to` exclusive), together; paged by `before`
/// and `limit`; a duplicate id is refused; every organisation's and none's for operators.
pub fn audit_log_filters_orders_and_pages(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    let amina = insert_user(store, active(user(&a, "amina@a.example", Role::Admin, at(0)), at(0)));
    let baraka = insert_user(store, active(user(&a, "baraka@a.example", Role::Finance, at(0)), at(0)));
    let chebet = insert_user(store, active(user(&b, "chebet@b.example", Role::Admin, at(0)), at(0)));
    // In id order (the order they are made), with times that are not.
    let log = [
        audit_entry(Some(&a.id), Some(&amina), "sign_in", at(10)),
        audit_entry(Some(&a.id), Some(&baraka), "sign_in.failed", at(20)),
        audit_entry(Some(&b.id), Some(&chebet), "sign_in", at(15)),
        audit_entry(Some(&a.id), Some(&amina), "reversal.created", at(30)),
        audit_entry(None, None, "sign_in.failed", at(40)),
        audit_entry(Some(&a.id), None, "user.invited", at(50)),
        audit_entry(Some(&a.id), Some(&baraka), "signXin", at(60)),
        audit_entry(Some(&a.id), Some(&amina), "Sign_in", at(70)),
    ];
    commit(store, |tx| {
        // Appended out of order: the order listed is the ids'.
        for e in log.iter().rev() {
            tx.append_audit(e)?;
        }
        Ok(())
    });
    let newest_first = |picked: &[usize]| -> Vec<AuditEntry> { picked.iter().rev().map(|&i| log[i].clone()).collect() };
    let all = AuditFilter::default();
    assert_eq!(entries(store, &all, None, 100), newest_first(&[0, 1, 2, 3, 4, 5, 6, 7]), "every one, whole");

    let of_a = AuditFilter { org_id: Some(a.id.clone()), ..all.clone() };
    assert_eq!(entries(store, &of_a, None, 100), newest_first(&[0, 1, 3, 5, 6, 7]));
    let of_baraka = AuditFilter { user_id: Some(baraka.id.clone()), ..all.clone() };
    assert_eq!(entries(store, &of_baraka, None, 100), newest_first(&[1, 6]));
    let sign_ins = AuditFilter { action: Some("sign_in".into()), ..all.clone() };
    assert_eq!(entries(store, &sign_ins, None, 100), newest_first(&[0, 1, 2, 4]), "a prefix, exactly");
    let failed = AuditFilter { action: Some("sign_in.failed".into()), ..all.clone() };
    assert_eq!(entries(store, &failed, None, 100), newest_first(&[1, 4]));
    let window = AuditFilter { from: Some(at(15)), to: Some(at(40)), ..all.clone() };
    assert_eq!(entries(store, &window, None, 100), newest_first(&[1, 2, 3]), "from inclusive, to exclusive");
    let together = AuditFilter { org_id: Some(a.id.clone()), action: Some("sign_in".into()), from: Some(at(11)), ..all.clone() };
    assert_eq!(entries(store, &together, None, 100), newest_first(&[1]));
    let none = AuditFilter { org_id: Some(OrgId::new()), ..all.clone() };
    assert_eq!(entries(store, &none, None, 100), vec![]);

    // Paging: `before` an entry's id, at most `limit`.
    let page1 = entries(store, &of_a, None, 4);
    assert_eq!(page1, newest_first(&[3, 5, 6, 7]));
    let page2 = entries(store, &of_a, page1.last().map(|e| &e.id), 4);
    assert_eq!(page2, newest_first(&[0, 1]));
    assert_eq!(entries(store, &of_a, Some(&log[0].id), 4), vec![]);
    assert_eq!(entries(store, &all, Some(&log[3].id), 2), newest_first(&[1, 2]), "before an entry of any filter");
    assert_eq!(entries(store, &all, None, 0), vec![]);

    let again = AuditEntry { detail: "changed".into(), ..log[2].clone() };
    assert_eq!(refused(store, |tx| Ok(tx.append_audit(&again)?)), duplicate());
    let elsewhere = AuditEntry { org_id: Some(OrgId::new()), ..audit_entry(None, None, "x", at(80)) };
    assert!(is_constraint(&refused(store, |tx| Ok(tx.append_audit(&elsewhere)?))), "an unknown organisation");
    assert_eq!(entries(store, &all, None, 100), newest_first(&[0, 1, 2, 3, 4, 5, 6, 7]), "nothing changed");
}

/// Whatever a failed closure or a failed savepoint wrote of people (a user, a session, a count,
/// an audit entry, a code used, an invitation accepted) is gone; what the transaction wrote
/// outside the failed savepoint stays.
pub fn failed_closures_and_savepoints_roll_back_people(store: &dyn Store) {
    let org = insert_org(store, "A", at(0));
    let u = insert_user(store, active(user(&org, "a@duka.example", Role::Admin, at(0)), at(0)));
    let invited = insert_user(store, user(&org, "b@duka.example", Role::Viewer, at(0)));
    let link = invitation(&invited, Some(&u.id), "link", at(0));
    let codes = vec![digest("code")];
    commit(store, |tx| {
        tx.insert_invitation(&link)?;
        tx.replace_recovery_codes(&u.id, &codes, at(0))?;
        Ok(())
    });
    let (other, s, entry) = (
        user(&org, "c@duka.example", Role::Viewer, at(1)),
        session(&u, "s", at(1)),
        audit_entry(Some(&org.id), Some(&u), "sign_in", at(1)),
    );
    let undo = |tx: &mut dyn malipo_service::Tx| -> Result<(), ServiceError> {
        tx.insert_user(&other)?;
        tx.insert_session(&s)?;
        tx.append_audit(&entry)?;
        tx.lock_failures("account:a@duka.example", at(1))?;
        assert!(tx.use_recovery_code(&u.id, &codes[0], at(1))?);
        assert!(tx.accept_invitation(&link.digest, at(1))?);
        assert!(tx.advance_totp_step(&u.id, 7)?);
        Err(ServiceError::Internal("undone".into()))
    };
    let nothing_written = |store: &dyn Store| {
        assert_eq!(get_user(store, &other.id), None);
        assert_eq!(query(store, |tx| Ok(tx.session(&s.digest)?)), None);
        assert_eq!(entries(store, &AuditFilter::default(), None, 10), vec![]);
        assert_eq!(query(store, |tx| Ok(tx.recovery_codes_left(&u.id)?)), 1);
        assert_eq!(query(store, |tx| Ok(tx.invitation(&link.digest)?)), Some(link.clone()));
        assert_eq!(get_user(store, &u.id).map(|u| u.totp_last_step), Some(0));
    };
    let _ = refused(store, |tx| undo(tx));
    nothing_written(store);

    let kept = audit_entry(Some(&org.id), Some(&u), "kept", at(2));
    commit(store, |tx| {
        assert!(tx.savepoint(&mut |tx| undo(tx)).is_err());
        tx.append_audit(&kept)?;
        Ok(())
    });
    assert_eq!(entries(store, &AuditFilter::default(), None, 10), vec![kept]);
    assert_eq!(get_user(store, &other.id), None);
    assert_eq!(query(store, |tx| Ok(tx.session(&s.digest)?)), None);
    assert_eq!(query(store, |tx| Ok(tx.recovery_codes_left(&u.id)?)), 1);
    assert_eq!(commit(store, |tx| Ok(tx.lock_failures("account:a@duka.example", at(3))?)).window_start, at(3), "no count was kept");
}

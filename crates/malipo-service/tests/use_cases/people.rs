//! People: invitations, sign-in and its failure limits, the second factor, sessions, the team
//! and the audit log, on the in-memory store with a clock the test moves.

use std::net::IpAddr;

use malipo_auth::{OrgKind, TotpSecret};
use malipo_core::{Mode, OrgId};
use malipo_service::{AuditFilter, Invitee, Inviter, ServiceError, SignIn, SignedIn};

use crate::support::World;

const PASSWORD: &str = "a long enough passphrase";

fn ip(last: u8) -> IpAddr {
    IpAddr::from([203, 0, 113, last])
}

fn org(world: &World) -> OrgId {
    world.platform.access().create_org("Duka Letu", OrgKind::Merchant, "KE").unwrap().org_id
}

/// Invites and accepts: the person's email and session.
fn join(world: &World, org: &OrgId, role: &str) -> (String, SignedIn) {
    let (email, _, who) = join_with_token(world, org, role);
    (email, who)
}

/// [`join`], with the session's token.
fn join_with_token(world: &World, org: &OrgId, role: &str) -> (String, String, SignedIn) {
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let people = world.platform.people();
    let invited = people.invite(Inviter::Operator, org, &Invitee { email: email.clone(), role: role.into(), name: None }).unwrap();
    let token = people.accept_invitation(&invited.token, "Amina", PASSWORD, PASSWORD, ip(1)).unwrap();
    let who = people.session(&token).unwrap().unwrap();
    (email, token, who)
}

/// Turns the second factor on at the current step; returns the secret and recovery codes.
fn enrol(world: &World, who: &SignedIn) -> (TotpSecret, Vec<String>, SignedIn) {
    let people = world.platform.people();
    let enrolment = people.begin_enrolment(who).unwrap();
    let secret = TotpSecret::from_setup_key(&enrolment.setup_key).unwrap();
    let code = secret.code_at(world.now().as_micros() / 1_000_000).unwrap();
    let (token, codes) = people.confirm_enrolment(who, &code, ip(1)).unwrap();
    (secret, codes, people.session(&token).unwrap().unwrap())
}

fn code(world: &World, secret: &TotpSecret) -> String {
    secret.code_at(world.now().as_micros() / 1_000_000).unwrap()
}

#[test]
fn ten_failures_lock_an_account_at_their_address_for_fifteen_minutes_and_a_success_gives_its_attempt_back() {
    let world = World::new();
    let org = org(&world);
    let (email, _) = join(&world, &org, "viewer");
    let people = world.platform.people();
    for _ in 0..9 {
        assert_eq!(people.sign_in(&email, "wrong password!", ip(2), None).unwrap(), SignIn::Refused);
    }
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(2), None).unwrap(), SignIn::SignedIn { .. }), "the tenth attempt is judged");
    for _ in 0..10 {
        assert_eq!(people.sign_in(&email.to_uppercase(), "wrong password!", ip(3), None).unwrap(), SignIn::Refused);
    }
    let locked = people.sign_in(&email, PASSWORD, ip(3), None).unwrap();
    assert_eq!(locked, SignIn::Locked { until: world.now().plus_seconds(15 * 60) }, "the email compared case-insensitively");
    // The lock is where the guessing is: the person signs in from their own address.
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(4), None).unwrap(), SignIn::SignedIn { .. }), "another address");
    world.advance(15 * 60);
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(3), None).unwrap(), SignIn::SignedIn { .. }));
    // An unknown email locks as a known one does.
    for _ in 0..10 {
        assert_eq!(people.sign_in("nobody@example.com", "x", ip(5), None).unwrap(), SignIn::Refused);
    }
    assert!(matches!(people.sign_in("nobody@example.com", "x", ip(5), None).unwrap(), SignIn::Locked { .. }));
}

/// Fifty failures from many addresses brake the account for browsers it has not signed in from;
/// its person's browser (its device token) still signs in, from a new address too.
#[test]
fn the_brake_on_an_account_guessed_from_many_addresses_spares_its_persons_browser() {
    let world = World::new();
    let org = org(&world);
    let (email, _) = join(&world, &org, "viewer");
    let people = world.platform.people();
    let SignIn::SignedIn { device, .. } = people.sign_in(&email, PASSWORD, ip(1), None).unwrap() else { panic!("signed in") };
    for attacker in 0..5u8 {
        for _ in 0..10 {
            assert_eq!(people.sign_in(&email, "wrong password!", ip(100 + attacker), None).unwrap(), SignIn::Refused);
        }
    }
    let braked = people.sign_in(&email, PASSWORD, ip(7), None).unwrap();
    assert!(matches!(braked, SignIn::Locked { .. }), "an unknown browser waits: {braked:?}");
    let forged = people.sign_in(&email, PASSWORD, ip(7), Some("mld_x.AAAA")).unwrap();
    assert!(matches!(forged, SignIn::Locked { .. }), "a forged device token is no device token");
    let other = join(&world, &org, "viewer").0;
    let SignIn::SignedIn { device: others, .. } = people.sign_in(&other, PASSWORD, ip(1), None).unwrap() else { panic!() };
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(7), Some(&others)).unwrap(), SignIn::Locked { .. }), "another person's");
    let owner = people.sign_in(&email, PASSWORD, ip(7), Some(&device)).unwrap();
    assert!(matches!(owner, SignIn::SignedIn { .. }), "the person's own browser: {owner:?}");
    // The brake holds for the rest of its window, whoever signs in meanwhile.
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(8), None).unwrap(), SignIn::Locked { .. }));
    world.advance(15 * 60);
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(8), None).unwrap(), SignIn::SignedIn { .. }));
}

/// A step-up code is a second factor and limited like one: after ten wrong codes every step-up
/// is refused, the right code included, until the wait ends; each attempt is audited.
#[test]
fn step_up_codes_are_limited_as_second_factors_and_the_right_one_is_refused_past_the_limit() {
    let world = World::new();
    let org = org(&world);
    let (email, who) = join(&world, &org, "admin");
    let (secret, _, who) = enrol(&world, &who);
    world.advance(30);
    let people = world.platform.people();
    for i in 0..10 {
        let err = people.step_up(&who, "000000", ip(2)).unwrap_err();
        assert!(matches!(err, ServiceError::Validation(ref f) if f[0].code == "wrong_code"), "attempt {}: {err:?}", i + 1);
    }
    let right = code(&world, &secret);
    let err = people.step_up(&who, &right, ip(2)).unwrap_err();
    assert!(matches!(err, ServiceError::Validation(ref f) if f[0].field == "code" && f[0].code == "locked"), "{err:?}");
    assert!(err.to_string().contains("15 minutes") || format!("{err:?}").contains("15 minutes"), "{err:?}");
    // It counted where the sign-in's failures count: this address waits to sign in too.
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(2), None).unwrap(), SignIn::Locked { .. }));
    let filter = AuditFilter { action: Some("step_up".into()), ..AuditFilter::default() };
    let log = people.audit_log(&who, &filter, None, 50).unwrap().data;
    let actions: Vec<&str> = log.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions.iter().filter(|a| **a == "step_up.failed").count(), 10, "{actions:?}");
    assert_eq!(actions.iter().filter(|a| **a == "step_up.locked").count(), 1, "{actions:?}");
    world.advance(15 * 60);
    people.step_up(&who, &code(&world, &secret), ip(2)).unwrap();
}

#[test]
fn a_code_is_accepted_once_within_its_window_and_recovery_codes_once() {
    let world = World::new();
    let org = org(&world);
    let (email, who) = join(&world, &org, "admin");
    assert!(who.must_enrol());
    let (secret, recovery, who) = enrol(&world, &who);
    assert!(!who.must_enrol());
    let people = world.platform.people();
    let SignIn::SecondFactor { token } = people.sign_in(&email, PASSWORD, ip(1), None).unwrap() else { panic!("a second factor is asked") };
    assert!(people.session(&token).unwrap().is_none(), "a pending sign-in opens nothing");
    assert_eq!(people.verify_second_factor(&token, &code(&world, &secret), ip(1), None).unwrap(), SignIn::Refused, "used at enrolment");
    world.advance(30);
    let fresh = code(&world, &secret);
    assert!(matches!(people.verify_second_factor(&token, &fresh, ip(1), None).unwrap(), SignIn::SignedIn { .. }));
    assert_eq!(people.verify_second_factor(&token, &fresh, ip(1), None).unwrap(), SignIn::Refused, "the pending token is spent");
    // Step-up: a used code is refused, a recovery code works once.
    let err = people.step_up(&who, &fresh, ip(1)).unwrap_err();
    assert!(matches!(err, ServiceError::Validation(ref f) if f[0].field == "code"), "{err:?}");
    people.step_up(&who, &recovery[0], ip(1)).unwrap();
    assert!(people.step_up(&who, &recovery[0], ip(1)).is_err());
    assert_eq!(people.recovery_codes_left(&who).unwrap(), 9);
    world.advance(60);
    let late = secret.code_at(world.now().as_micros() / 1_000_000 - 60).unwrap();
    assert!(people.step_up(&who, &late, ip(1)).is_err(), "two steps old");
    people.step_up(&who, &code(&world, &secret), ip(1)).unwrap();
}

#[test]
fn sessions_end_after_thirty_minutes_idle_or_twelve_hours() {
    let world = World::new();
    let org = org(&world);
    let (email, _) = join(&world, &org, "viewer");
    let people = world.platform.people();
    let SignIn::SignedIn { token, .. } = people.sign_in(&email, PASSWORD, ip(1), None).unwrap() else { panic!() };
    world.advance(29 * 60);
    assert!(people.session(&token).unwrap().is_some());
    world.advance(29 * 60);
    assert!(people.session(&token).unwrap().is_some(), "each request counts: idle 29 minutes again");
    world.advance(30 * 60);
    assert!(people.session(&token).unwrap().is_none(), "idle 30 minutes");

    let SignIn::SignedIn { token, .. } = people.sign_in(&email, PASSWORD, ip(1), None).unwrap() else { panic!() };
    for _ in 0..35 {
        world.advance(20 * 60);
        assert!(people.session(&token).unwrap().is_some());
    }
    world.advance(20 * 60);
    assert!(people.session(&token).unwrap().is_none(), "12 hours after sign-in");
}

#[test]
fn invitations_last_72_hours_and_work_once() {
    let world = World::new();
    let org = org(&world);
    let people = world.platform.people();
    let invitee = Invitee { email: "Wanjiru@Example.com".into(), role: "finance".into(), name: Some("Wanjiru".into()) };
    let invited = people.invite(Inviter::Operator, &org, &invitee).unwrap();
    let again = people.invite(Inviter::Operator, &org, &Invitee { email: "wanjiru@example.com".into(), ..invitee.clone() });
    assert!(matches!(again, Err(ServiceError::Validation(ref f)) if f[0].code == "taken"), "emails are unique, case-insensitively");
    let wrong_role = people.invite(Inviter::Operator, &org, &Invitee { email: "x@example.com".into(), role: "checker".into(), name: None });
    assert!(matches!(wrong_role, Err(ServiceError::Validation(ref f)) if f[0].field == "role"), "a checker is a corporate role");
    world.advance(72 * 3600);
    assert_eq!(people.invitation(&invited.token), Err(ServiceError::NotFound));
    assert_eq!(people.accept_invitation(&invited.token, "W", PASSWORD, PASSWORD, ip(1)), Err(ServiceError::NotFound));

    let fresh = people.invite(Inviter::Operator, &org, &Invitee { email: "late@example.com".into(), ..invitee }).unwrap();
    people.accept_invitation(&fresh.token, "Late", PASSWORD, PASSWORD, ip(1)).unwrap();
    assert_eq!(people.accept_invitation(&fresh.token, "Late", PASSWORD, PASSWORD, ip(1)), Err(ServiceError::NotFound), "once");
}

#[test]
fn the_team_is_managed_by_admins_with_a_fresh_second_factor_and_everything_is_audited() {
    let world = World::new();
    let org = org(&world);
    let (_, admin) = join(&world, &org, "admin");
    let (secret, _, admin) = enrol(&world, &admin);
    let (_, viewer_token, viewer) = join_with_token(&world, &org, "viewer");
    let people = world.platform.people();
    let invitee = Invitee { email: "new@example.com".into(), role: "viewer".into(), name: None };
    assert!(matches!(people.invite(Inviter::Member(&viewer, ip(1)), &org, &invitee), Err(ServiceError::Forbidden(_))));
    people.invite(Inviter::Member(&admin, ip(1)), &org, &invitee).unwrap();
    // Changing a role asks a fresh code (the enrolment's is used); the person's sessions end.
    let refused = people.change_role(&admin, viewer.user.id.as_str(), "finance", &code(&world, &secret), ip(1));
    assert!(matches!(refused, Err(ServiceError::Validation(_))));
    world.advance(30);
    people.change_role(&admin, viewer.user.id.as_str(), "finance", &code(&world, &secret), ip(1)).unwrap();
    assert!(people.session(&viewer_token).unwrap().is_none(), "their session ended with the change of privilege");
    let log = people.audit_log(&admin, &AuditFilter::default(), None, 50).unwrap();
    let actions: Vec<&str> = log.data.iter().map(|e| e.action.as_str()).collect();
    for expected in ["user.role_changed", "step_up.failed", "user.invited", "two_factor.enabled", "user.joined"] {
        assert!(actions.contains(&expected), "{expected} in {actions:?}");
    }
    assert!(log.data.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    // Another organisation's admin sees none of it.
    let other = world.platform.access().create_org("Other", OrgKind::Merchant, "KE").unwrap().org_id;
    let (_, stranger) = join(&world, &other, "admin");
    let (_, _, stranger) = enrol(&world, &stranger);
    let theirs = people.audit_log(&stranger, &AuditFilter { org_id: Some(org.clone()), ..AuditFilter::default() }, None, 50).unwrap();
    assert!(theirs.data.iter().all(|e| e.org_id.as_ref() == Some(&other)), "scoped to one's own organisation");
    assert_eq!(admin.principal().mode, Mode::Test, "a new session shows test objects");
}

#[test]
fn a_persons_idempotent_action_is_audited_in_its_own_transaction_once() {
    use malipo_service::commands::{CreatePaymentRequest, NewPaymentRequest};
    use malipo_service::Actor;
    let world = World::new();
    let org = org(&world);
    let (email, who) = join(&world, &org, "finance");
    let principal = who.principal();
    let mut idem = crate::support::idem(&principal, "console payment_request");
    idem.actor = Some(Actor {
        user_id: who.user.id.clone(),
        email: email.clone(),
        ip: "203.0.113.9".into(),
        action: "payment_request.created".into(),
    });
    let new = NewPaymentRequest { amount: "500.00".into(), reference: "INV-1".into(), ..NewPaymentRequest::default() };
    let command = world.platform.parse::<CreatePaymentRequest>(&principal, &new).unwrap();
    let first = world.platform.payment_requests().create(&principal, &command, &idem).unwrap();
    let again = world.platform.payment_requests().create(&principal, &command, &idem).unwrap();
    assert!(again.replayed);
    let admin = {
        let (_, a) = join(&world, &org, "admin");
        enrol(&world, &a).2
    };
    let filter = AuditFilter { action: Some("payment_request".into()), ..AuditFilter::default() };
    let log = world.platform.people().audit_log(&admin, &filter, None, 10).unwrap().data;
    assert_eq!(log.len(), 1, "once, though the request was sent twice: {log:?}");
    let entry = &log[0];
    assert_eq!(entry.object_id.as_deref(), Some(first.value.id.to_string().as_str()));
    assert_eq!((entry.actor.as_str(), entry.ip.as_deref(), entry.mode), (email.as_str(), Some("203.0.113.9"), Some(Mode::Test)));
    assert!(entry.detail.contains("KES 500.00"), "{}", entry.detail);
}

/// A success gives back its own attempt only: failures counted from the same address while its
/// password was being checked stay counted (a stale count written back would erase them, and
/// let one known password reset an address's limit).
#[test]
fn a_success_racing_failures_from_its_address_erases_none_of_them() {
    let world = World::new();
    let org = org(&world);
    let (email, _) = join(&world, &org, "viewer");
    let (failers, each, successes) = (4, 20, 40);
    std::thread::scope(|s| {
        for t in 0..failers {
            let world = &world;
            s.spawn(move || {
                for i in 0..each {
                    let unknown = format!("nobody-{t}-{i}@example.com");
                    assert_eq!(world.platform.people().sign_in(&unknown, "wrong password!", ip(9), None).unwrap(), SignIn::Refused);
                }
            });
        }
        let (world, email) = (&world, &email);
        s.spawn(move || {
            for _ in 0..successes {
                assert!(matches!(world.platform.people().sign_in(email, PASSWORD, ip(9), None).unwrap(), SignIn::SignedIn { .. }));
            }
        });
    });
    // Every failure still counts: exactly as many more reach the address's limit of 100.
    let people = world.platform.people();
    let counted = failers * each;
    for i in counted..99 {
        assert_eq!(
            people.sign_in(&format!("more-{i}@example.com"), "wrong password!", ip(9), None).unwrap(),
            SignIn::Refused,
            "failure {}",
            i + 1
        );
    }
    assert_eq!(people.sign_in("last@example.com", "wrong password!", ip(9), None).unwrap(), SignIn::Refused, "the hundredth failure");
    assert!(
        matches!(people.sign_in(&email, PASSWORD, ip(9), None).unwrap(), SignIn::Locked { .. }),
        "the address waits after 100 failures"
    );
}

#[test]
fn a_key_pair_a_person_created_acts_as_that_person_and_an_operators_as_nobody() {
    let world = World::new();
    let org = world.platform.access().create_org("Payroll Ltd", OrgKind::Corporate, "KE").unwrap();
    let (_, who) = join(&world, &org.org_id, "admin");
    let (secret, _, who) = enrol(&world, &who);
    world.advance(30);
    let people = world.platform.people();
    let theirs = people.create_key(&who, Mode::Test, &code(&world, &secret), ip(1)).unwrap();
    let access = world.platform.access();
    let token = access.issue_token(&theirs.client_id, &theirs.client_secret, None).unwrap();
    let principal = access.authenticate(&token.access_token).unwrap();
    assert_eq!((principal.client_id.as_str(), principal.person.as_ref()), (theirs.client_id.as_str(), Some(&who.user.id)));
    let token = access.issue_token(&org.client_id, &org.client_secret, None).unwrap();
    assert_eq!(access.authenticate(&token.access_token).unwrap().person, None, "the operator's key pair");
}

/// An email someone of another organisation uses is invited as a free one is (an admin learns
/// nothing of who uses the platform); the link can never be accepted. An operator is told.
#[test]
fn an_email_used_elsewhere_is_invited_as_a_free_one_and_its_link_never_works() {
    let world = World::new();
    let (a, b) = (org(&world), org(&world));
    let (email, _) = join(&world, &a, "viewer");
    let (_, admin) = join(&world, &b, "admin");
    let (_, _, admin) = enrol(&world, &admin);
    let people = world.platform.people();
    let invitee = Invitee { email: email.to_uppercase(), role: "viewer".into(), name: None };
    let invited = people.invite(Inviter::Member(&admin, ip(1)), &b, &invitee).unwrap();
    assert_eq!(people.invitation(&invited.token), Err(ServiceError::NotFound), "shown as a link that no longer works");
    assert_eq!(people.accept_invitation(&invited.token, "X", PASSWORD, PASSWORD, ip(1)), Err(ServiceError::NotFound));
    assert!(matches!(people.sign_in(&email, PASSWORD, ip(1), None).unwrap(), SignIn::SignedIn { .. }), "its person signs in as before");
    let by_operator = people.invite(Inviter::Operator, &b, &Invitee { email: email.clone(), role: "viewer".into(), name: None });
    assert!(matches!(by_operator, Err(ServiceError::Validation(ref f)) if f[0].code == "taken"), "{by_operator:?}");
    // Twice in one organisation: its own team, so it may say so.
    let again = people.invite(Inviter::Member(&admin, ip(1)), &b, &invitee);
    assert!(matches!(again, Err(ServiceError::Validation(ref f)) if f[0].code == "taken"), "{again:?}");
}

//! Organisations, credentials and tokens.

use malipo_auth::{Credential, Organisation, Role};
use malipo_core::{Mode, OrgId};
use malipo_service::{ServiceError, Store, StoreError, TokenRecord};

use crate::fixtures::duplicate;
use crate::fixtures::*;
use crate::people_fixtures::{active, insert_user, user};

/// Organisations round trip by id; `org_by_name` returns the oldest of that name; a duplicate
/// id is refused and leaves the stored organisation unchanged.
pub fn organisations_round_trip(store: &dyn Store) {
    let older = organisation("Duka", at(0));
    let other = organisation("Other", at(5));
    let newer = organisation("Duka", at(10));
    // Inserted newest first, so that insertion order is not the answer.
    commit(store, |tx| {
        tx.insert_org(&newer)?;
        tx.insert_org(&other)?;
        tx.insert_org(&older)?;
        Ok(())
    });
    assert_eq!(query(store, |tx| Ok(tx.org(&older.id)?)), Some(older.clone()));
    assert_eq!(query(store, |tx| Ok(tx.org(&newer.id)?)), Some(newer.clone()));
    assert_eq!(query(store, |tx| Ok(tx.org(&OrgId::new())?)), None);
    assert_eq!(query(store, |tx| Ok(tx.org_by_name("Duka")?)), Some(older.clone()), "the oldest of the name");
    assert_eq!(query(store, |tx| Ok(tx.org_by_name("Other")?)), Some(other.clone()));
    assert_eq!(query(store, |tx| Ok(tx.org_by_name("Nobody")?)), None);

    // Listed newest first (the back office's list).
    let ours = [&newer.id, &other.id, &older.id];
    let listed: Vec<OrgId> = query(store, |tx| Ok(tx.orgs(1000)?)).into_iter().map(|o| o.id).filter(|id| ours.contains(&id)).collect();
    assert_eq!(listed, [newer.id.clone(), other.id.clone(), older.id.clone()]);
    assert_eq!(query(store, |tx| Ok(tx.orgs(1)?)).len(), 1);

    let again = Organisation { name: "Renamed".into(), ..older.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_org(&again)?)), duplicate());
    assert_eq!(query(store, |tx| Ok(tx.org(&older.id)?)), Some(older));
}

/// Credentials of both modes round trip by client id; an unknown one is `None`.
pub fn credentials_round_trip(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let test = credential(&org, Mode::Test, "ck_test_roundtrip1");
    let live = credential(&org, Mode::Live, "ck_live_roundtrip1");
    commit(store, |tx| {
        tx.insert_credential(&test)?;
        tx.insert_credential(&live)?;
        Ok(())
    });
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_roundtrip1")?)), Some(test.clone()));
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_live_roundtrip1")?)), Some(live.clone()));
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_nobody")?)), None);
}

/// A second credential with an existing client id is refused, even for another organisation.
pub fn duplicate_client_id_is_refused(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(1));
    let first = credential(&a, Mode::Test, "ck_test_taken");
    commit(store, |tx| Ok(tx.insert_credential(&first)?));
    let same_org = credential(&a, Mode::Live, "ck_test_taken");
    assert_eq!(refused(store, |tx| Ok(tx.insert_credential(&same_org)?)), duplicate());
    let other_org = credential(&b, Mode::Test, "ck_test_taken");
    assert_eq!(refused(store, |tx| Ok(tx.insert_credential(&other_org)?)), duplicate());
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_taken")?)), Some(first));
}

/// Revoking a credential stamps it and every one of its tokens (`token()` then shows
/// `credential_revoked`); other credentials' tokens are untouched; revoking again, or an
/// unknown credential, answers `false`.
pub fn revoking_a_credential_revokes_its_tokens(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let a = credential(&org, Mode::Test, "ck_test_revoke_a");
    let b = credential(&org, Mode::Test, "ck_test_revoke_b");
    let (a1, a2, b1) = (access_token(&a, &digest("a1")), access_token(&a, &digest("a2")), access_token(&b, &digest("b1")));
    commit(store, |tx| {
        tx.insert_credential(&a)?;
        tx.insert_credential(&b)?;
        tx.insert_token(&a1)?;
        tx.insert_token(&a2)?;
        tx.insert_token(&b1)?;
        Ok(())
    });

    assert!(commit(store, |tx| Ok(tx.revoke_credential("ck_test_revoke_a", at(100))?)));
    let stored = query(store, |tx| Ok(tx.credential("ck_test_revoke_a")?)).expect("a revoked credential is still returned");
    assert_eq!(stored.revoked_at, Some(at(100)));
    for t in [&a1, &a2] {
        let record = query(store, |tx| Ok(tx.token(&t.digest)?)).expect("the token exists");
        assert!(record.credential_revoked, "token of a revoked credential");
        assert_eq!(record.token.revoked_at, Some(at(100)), "the token itself is revoked too");
    }
    let record = query(store, |tx| Ok(tx.token(&b1.digest)?)).expect("the token exists");
    assert!(!record.credential_revoked);
    assert_eq!(record.token.revoked_at, None);
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_revoke_b")?)).map(|c| c.revoked_at), Some(None));

    assert!(!commit(store, |tx| Ok(tx.revoke_credential("ck_test_revoke_a", at(200))?)), "already revoked");
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_revoke_a")?)).and_then(|c| c.revoked_at), Some(at(100)));
    assert!(!commit(store, |tx| Ok(tx.revoke_credential("ck_test_nobody", at(200))?)), "unknown");
}

/// `token()` returns the token with its organisation; an unknown digest is `None`; a
/// duplicate digest is refused.
pub fn token_returns_its_organisation(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let live = credential(&org, Mode::Live, "ck_live_token");
    let token = access_token(&live, &digest("token"));
    commit(store, |tx| {
        tx.insert_credential(&live)?;
        tx.insert_token(&token)?;
        Ok(())
    });
    assert_eq!(
        query(store, |tx| Ok(tx.token(&token.digest)?)),
        Some(TokenRecord { token: token.clone(), org: org.clone(), credential_revoked: false, credential_person: None })
    );
    assert_eq!(query(store, |tx| Ok(tx.token(&digest("nobody"))?)), None);
    assert_eq!(refused(store, |tx| Ok(tx.insert_token(&token)?)), duplicate());
}

/// `revoke_token` revokes only when the token belongs to the given client id.
pub fn revoke_token_only_for_its_client(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let a = credential(&org, Mode::Test, "ck_test_owner");
    let b = credential(&org, Mode::Test, "ck_test_stranger");
    let token = access_token(&a, &digest("owned"));
    commit(store, |tx| {
        tx.insert_credential(&a)?;
        tx.insert_credential(&b)?;
        tx.insert_token(&token)?;
        Ok(())
    });
    let revoked_at = |store: &dyn Store| query(store, |tx| Ok(tx.token(&token.digest)?)).and_then(|r| r.token.revoked_at);

    assert!(!commit(store, |tx| Ok(tx.revoke_token(&token.digest, "ck_test_stranger", at(50))?)), "another client's token");
    assert_eq!(revoked_at(store), None);
    assert!(!commit(store, |tx| Ok(tx.revoke_token(&digest("nobody"), "ck_test_owner", at(50))?)), "unknown token");

    assert!(commit(store, |tx| Ok(tx.revoke_token(&token.digest, "ck_test_owner", at(60))?)));
    assert_eq!(revoked_at(store), Some(at(60)));
    let record = query(store, |tx| Ok(tx.token(&token.digest)?)).expect("the token exists");
    assert!(!record.credential_revoked, "revoking a token leaves its credential alone");
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_owner")?)).map(|c| c.revoked_at), Some(None));
}

/// `replace_secret_hash` replaces a credential's stored hash only while it is still the one the
/// caller verified (two concurrent upgrades: one replaces, the other finds it replaced).
pub fn replace_secret_hash_only_replaces_the_verified_hash(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let c = credential(&org, Mode::Test, "ck_test_upgrade000000000000000000");
    commit(store, |tx| Ok(tx.insert_credential(&c)?));
    let old = c.secret_hash.clone();
    assert!(commit(store, |tx| Ok(tx.replace_secret_hash(&c.client_id, &old, "$malipo-hmac-sha256$v=1$new$new")?)));
    assert!(
        !commit(store, |tx| Ok(tx.replace_secret_hash(&c.client_id, &old, "$malipo-hmac-sha256$v=1$late$late")?)),
        "no longer the old hash"
    );
    assert!(!commit(store, |tx| Ok(tx.replace_secret_hash("ck_test_nobody", &old, "x")?)));
    let stored = query(store, |tx| Ok(tx.credential(&c.client_id)?)).map(|c| c.secret_hash);
    assert_eq!(stored.as_deref(), Some("$malipo-hmac-sha256$v=1$new$new"));
}

/// A credential keeps who created it in the console (a person of the store; an unknown one is
/// refused) and when it last got a token, which never goes back; `org_credentials` lists an
/// organisation's credentials of both modes, revoked ones too, newest first.
pub fn credentials_record_their_creator_and_last_use(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let other = insert_org(store, "Other", at(0));
    let admin = insert_user(store, active(user(&org, "admin@duka.example", Role::Admin, at(0)), at(0)));
    let by_command = Credential { created_at: at(10), ..credential(&org, Mode::Test, "ck_test_command") };
    let by_admin = Credential { created_by: Some(admin.id.clone()), created_at: at(20), ..credential(&org, Mode::Live, "ck_live_admin") };
    let revoked = Credential { created_at: at(30), revoked_at: Some(at(31)), ..credential(&org, Mode::Test, "ck_test_revoked") };
    let same_time = Credential { created_at: at(30), ..credential(&org, Mode::Test, "ck_test_same_time") };
    let elsewhere = credential(&other, Mode::Test, "ck_test_elsewhere");
    commit(store, |tx| {
        for c in [&same_time, &by_admin, &elsewhere, &revoked, &by_command] {
            tx.insert_credential(c)?;
        }
        Ok(())
    });
    assert_eq!(query(store, |tx| Ok(tx.credential(&by_admin.client_id)?)), Some(by_admin.clone()));
    assert_eq!(
        query(store, |tx| Ok(tx.org_credentials(&org.id)?)),
        vec![same_time.clone(), revoked.clone(), by_admin.clone(), by_command.clone()],
        "newest first (then by client id, descending)"
    );
    assert_eq!(query(store, |tx| Ok(tx.org_credentials(&OrgId::new())?)), vec![]);
    let unknown_creator = Credential { created_by: Some(malipo_core::UserId::new()), ..credential(&org, Mode::Test, "ck_test_unknown") };
    let e = refused(store, |tx| Ok(tx.insert_credential(&unknown_creator)?));
    assert!(matches!(e, ServiceError::Store(StoreError::Other(_))), "{e:?}");

    let last_used = |store: &dyn Store| query(store, |tx| Ok(tx.credential(&by_admin.client_id)?)).and_then(|c| c.last_used_at);
    assert_eq!(last_used(store), None);
    commit(store, |tx| Ok(tx.touch_credential(&by_admin.client_id, at(100))?));
    assert_eq!(last_used(store), Some(at(100)));
    commit(store, |tx| Ok(tx.touch_credential(&by_admin.client_id, at(90))?));
    assert_eq!(last_used(store), Some(at(100)), "never back");
    commit(store, |tx| Ok(tx.touch_credential(&by_admin.client_id, at(200))?));
    commit(store, |tx| Ok(tx.touch_credential("ck_test_nobody", at(200))?));
    assert_eq!(last_used(store), Some(at(200)));
    assert_eq!(query(store, |tx| Ok(tx.credential(&by_command.client_id)?)), Some(by_command), "only the one touched");
}

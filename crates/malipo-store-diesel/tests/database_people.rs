//! The console's people on both databases: the audit log is append-only and the people tables
//! refuse wrong rows written by hand; two transactions racing on one subject's sign-in failures
//! count one after the other; the migration is undone and done again keeping the credentials.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, SqliteConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use malipo_auth::{Credential, Failures, Role};
use malipo_core::Mode;
use malipo_service::{read, write, AuditFilter, Store};
use malipo_store_contract::fixtures::{at, commit, credential, insert_org};
use malipo_store_contract::people_fixtures::{active, audit_entry, insert_user, invitation, session, user};
use malipo_store_diesel::testing::TestDatabase;
use malipo_store_diesel::{Backend, DieselStore};

const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

/// Entries of the audit log are never changed or deleted, whoever writes the SQL.
fn the_audit_log_is_append_only(db: &TestDatabase) {
    let org = insert_org(db, "Duka", at(0));
    let admin = insert_user(db, active(user(&org, "admin@duka.example", Role::Admin, at(0)), at(0)));
    let log = [audit_entry(Some(&org.id), Some(&admin), "sign_in", at(1)), audit_entry(None, None, "sign_in.failed", at(2))];
    commit(db, |tx| {
        for e in &log {
            tx.append_audit(e)?;
        }
        Ok(())
    });
    db.refused("UPDATE audit_log SET detail = 'forged'");
    db.refused(&format!("UPDATE audit_log SET action = 'nothing' WHERE id = '{}'", log[0].id));
    db.refused(&format!("DELETE FROM audit_log WHERE id = '{}'", log[1].id));
    db.refused("DELETE FROM audit_log");
    if db.store.backend() == Backend::Postgres {
        db.refused("TRUNCATE audit_log");
    }
    let stored = read(db, |tx| Ok(tx.audit_entries(&AuditFilter::default(), None, 10)?)).unwrap();
    assert_eq!(stored, vec![log[1].clone(), log[0].clone()]);
}

/// The people tables refuse, by hand too, what the domain never writes.
fn people_are_checked_by_the_database(db: &TestDatabase) {
    let org = insert_org(db, "Duka", at(0));
    let admin = insert_user(db, active(user(&org, "admin@duka.example", Role::Admin, at(0)), at(0)));
    let key = Credential { created_by: Some(admin.id.clone()), ..credential(&org, Mode::Test, "ck_test_checked") };
    commit(db, |tx| Ok(tx.insert_credential(&key)?));
    let o = org.id.as_str();
    let person = |id: &str, key: &str, role: &str, extra_columns: &str, extra_values: &str| {
        format!(
            "INSERT INTO users (id, org_id, email, email_key, name, role, created_at{extra_columns}) \
             VALUES ('{id}', '{o}', 'x', '{key}', 'X', '{role}', 0{extra_values})"
        )
    };
    assert_eq!(db.run(&person("usr_fine", "fine@duka.example", "viewer", "", "")), 1);
    db.refused(&person("usr_dup", "ADMIN@duka.example", "viewer", "", ""));
    db.refused(&person("usr_dup", "admin@duka.example", "viewer", "", ""));
    db.refused(&person("usr_space", " space@duka.example", "viewer", "", ""));
    db.refused(&person("usr_role", "role@duka.example", "root", "", ""));
    db.refused(&person("usx_prefix", "prefix@duka.example", "viewer", "", ""));
    db.refused(&person("usr_totp", "totp@duka.example", "admin", ", totp_enabled_at", ", 1"));
    db.refused(&person("usr_active", "active@duka.example", "admin", ", activated_at", ", 1"));
    db.refused(&person("usr_step", "step@duka.example", "admin", ", totp_last_step", ", -1"));
    db.refused(&person("usr_org", "org@duka.example", "admin", "", "").replace(o, "org_nobody"));

    let u = admin.id.as_str();
    // What the domain writes is accepted (so that each refusal below is the rule's, not a typo's).
    for fine in [
        format!("INSERT INTO invitations (digest, user_id, created_at, expires_at, accepted_at) VALUES ('d0', '{u}', 10, 20, 19)"),
        format!("INSERT INTO recovery_codes (user_id, digest, created_at) VALUES ('{u}', 'c', 0)"),
        "INSERT INTO sign_in_failures (subject, window_start, count) VALUES ('account:y', 0, 0)".to_owned(),
        "INSERT INTO audit_log (id, actor, action, detail, mode, created_at) VALUES ('aud_ok', 'a', 'b', '', 'live', 0)".to_owned(),
        format!("INSERT INTO organisation_settings (org_id, require_two_factor) VALUES ('{o}', TRUE)"),
        format!("UPDATE credentials SET created_by = '{u}', last_used_at = 5 WHERE client_id = 'ck_test_checked'"),
    ] {
        assert_eq!(db.run(&fine), 1, "{fine}");
    }
    db.refused(&format!("INSERT INTO invitations (digest, user_id, created_at, expires_at) VALUES ('d1', '{u}', 10, 10)"));
    db.refused(&format!("INSERT INTO invitations (digest, user_id, created_at, expires_at, accepted_at) VALUES ('d2', '{u}', 10, 20, 20)"));
    db.refused("INSERT INTO invitations (digest, user_id, created_at, expires_at) VALUES ('d3', 'usr_nobody', 10, 20)");
    db.refused("INSERT INTO recovery_codes (user_id, digest, created_at) VALUES ('usr_nobody', 'c', 0)");
    let s = |stage: &str, mode: &str, created: i64, seen: i64, expires: i64| {
        format!(
            "INSERT INTO console_sessions (digest, user_id, stage, mode, created_at, last_seen_at, expires_at, ip) \
             VALUES ('s{created}{seen}{expires}{stage}{mode}', '{u}', '{stage}', '{mode}', {created}, {seen}, {expires}, 'ip')"
        )
    };
    assert_eq!(db.run(&s("active", "test", 10, 10, 20)), 1);
    db.refused(&s("pending", "test", 10, 10, 20));
    db.refused(&s("active", "staging", 10, 10, 20));
    db.refused(&s("active", "test", 10, 10, 10));
    db.refused(&s("active", "test", 10, 9, 20));
    db.refused("INSERT INTO sign_in_failures (subject, window_start, count) VALUES ('account:x', 0, -1)");
    db.refused("INSERT INTO audit_log (id, actor, action, detail, mode, created_at) VALUES ('aud_x', 'a', 'b', '', 'staging', 0)");
    db.refused("INSERT INTO audit_log (id, actor, action, detail, created_at) VALUES ('evt_x', 'a', 'b', '', 0)");
    db.refused("INSERT INTO audit_log (id, user_id, actor, action, detail, created_at) VALUES ('aud_y', 'usr_nobody', 'a', 'b', '', 0)");
    db.refused("INSERT INTO organisation_settings (org_id, require_two_factor) VALUES ('org_nobody', TRUE)");
    db.refused("UPDATE credentials SET created_by = 'usr_nobody' WHERE client_id = 'ck_test_checked'");
}

/// Two transactions judging a sign-in of one subject at once: the second's `lock_failures` waits
/// for the first's commit and reads its count, so the two count one after the other, whether
/// the subject was new (the first creates its row) or known. Without the row lock both would
/// read the same count and one failure would be lost.
fn racing_attempts_on_one_subject_count_one_after_the_other(db: &TestDatabase) {
    let known = "account:known@duka.example";
    commit(db, |tx| Ok(tx.put_failures(known, &Failures { window_start: at(0), count: 3, locked_until: None })?));
    for (subject, start) in [("account:new@duka.example", 0), (known, 3)] {
        // One attempt: lock, tell the other thread, hold the lock `hold` long, count.
        let attempt = |store: DieselStore, locked: Option<mpsc::Sender<()>>, hold: Duration| {
            std::thread::spawn(move || {
                write(&store, |tx| {
                    let seen = tx.lock_failures(subject, at(5))?;
                    if let Some(locked) = &locked {
                        let _ = locked.send(());
                    }
                    std::thread::sleep(hold);
                    tx.put_failures(subject, &Failures { count: seen.count + 1, ..seen })?;
                    Ok((seen.count, Instant::now()))
                })
                .unwrap()
            })
        };
        let (locked, first_locked) = mpsc::channel();
        let first = attempt(db.store.clone(), Some(locked), Duration::from_millis(400));
        first_locked.recv_timeout(Duration::from_secs(10)).unwrap();
        let second = attempt(db.store.clone(), None, Duration::ZERO);
        let (first_seen, first_done) = first.join().unwrap();
        let (second_seen, second_done) = second.join().unwrap();
        assert_eq!((first_seen, second_seen), (start, start + 1), "{subject}: the second reads the first's count");
        assert!(second_done > first_done, "{subject}: the second waited for the first");
        let after = commit(db, |tx| Ok(tx.lock_failures(subject, at(6))?));
        assert_eq!(after.count, start + 2, "{subject}: no failure lost");
    }
}

/// Whether undoing the people's migration (and the later ones first) works with data in every people table, keeps the
/// credentials (without their new columns), and doing it again brings the tables back empty.
fn the_people_migration_is_undone_and_done_again(db: &TestDatabase) {
    let org = insert_org(db, "Duka", at(0));
    let admin = insert_user(db, active(user(&org, "admin@duka.example", Role::Admin, at(0)), at(0)));
    let invited = insert_user(db, user(&org, "new@duka.example", Role::Viewer, at(1)));
    let key =
        Credential { created_by: Some(admin.id.clone()), last_used_at: Some(at(3)), ..credential(&org, Mode::Test, "ck_test_people") };
    commit(db, |tx| {
        tx.insert_credential(&key)?;
        tx.insert_invitation(&invitation(&invited, Some(&admin.id), "link", at(1)))?;
        tx.replace_recovery_codes(&admin.id, &["code".to_owned()], at(1))?;
        tx.insert_session(&session(&admin, "s", at(2)))?;
        tx.put_failures("account:x", &Failures { window_start: at(0), count: 1, locked_until: None })?;
        tx.append_audit(&audit_entry(Some(&org.id), Some(&admin), "api_key.created", at(3)))?;
        tx.set_org_requires_two_factor(&org.id, true)?;
        Ok(())
    });
    let undone = match db.store.backend() {
        Backend::Postgres => {
            let mut conn = PgConnection::establish(&db.url).unwrap();
            let mut undone = conn.revert_last_migration(PG_MIGRATIONS).unwrap().to_string();
            // The later ones first (the console's charges indexes, 000011).
            while !undone.ends_with("000010") {
                undone = conn.revert_last_migration(PG_MIGRATIONS).unwrap().to_string();
            }
            db.refused("SELECT count(*) FROM users");
            assert_eq!(db.run("UPDATE credentials SET scopes = scopes WHERE client_id = 'ck_test_people'"), 1, "the credential stays");
            conn.run_pending_migrations(PG_MIGRATIONS).unwrap();
            undone
        }
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
            conn.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
            let mut undone = conn.revert_last_migration(SQLITE_MIGRATIONS).unwrap().to_string();
            // The later ones first (the console's charges indexes, 000011).
            while !undone.ends_with("000010") {
                undone = conn.revert_last_migration(SQLITE_MIGRATIONS).unwrap().to_string();
            }
            db.refused("SELECT count(*) FROM users");
            assert_eq!(db.run("UPDATE credentials SET scopes = scopes WHERE client_id = 'ck_test_people'"), 1, "the credential stays");
            conn.run_pending_migrations(SQLITE_MIGRATIONS).unwrap();
            undone
        }
    };
    assert!(undone.ends_with("000010"), "{undone}");
    // A new pool: the old one's prepared statements may name the tables as they were.
    let store = DieselStore::connect(&db.url, Some(2)).unwrap();
    assert_eq!(store.ready(), Ok(()));
    let stored = read(&store, |tx| Ok(tx.credential(&key.client_id)?)).unwrap();
    assert_eq!(stored, Some(Credential { created_by: None, last_used_at: None, ..key }));
    assert_eq!(read(&store, |tx| Ok(tx.user(&admin.id)?)).unwrap(), None);
    assert!(!read(&store, |tx| Ok(tx.org_requires_two_factor(&org.id)?)).unwrap());
    insert_user(&store, admin);
}

malipo_store_diesel::on_both_backends!(
    the_audit_log_is_append_only,
    people_are_checked_by_the_database,
    racing_attempts_on_one_subject_count_one_after_the_other,
    the_people_migration_is_undone_and_done_again,
);

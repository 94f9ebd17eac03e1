//! The console's list of events: newest first, before a cursor.

use malipo_core::{EventId, Mode, OrgId};
use malipo_service::{EventsPage, Store};
use malipo_webhooks::Event;

use crate::fixtures::*;

const COMPLETED: &str = "charge.completed";
const FAILED: &str = "charge.failed";

fn event_ids(events: &[Event]) -> Vec<EventId> {
    events.iter().map(|e| e.id.clone()).collect()
}

/// `list_events_newest` returns an organisation's events of a mode newest first (by id), with
/// ids strictly below the `before` cursor, of one kind when asked, at most `limit`.
pub fn list_events_pages_newest_first(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    let mine: Vec<Event> = (1..=6).map(|t| event(&a, Mode::Test, if t % 2 == 0 { FAILED } else { COMPLETED }, at(t))).collect();
    let live = event(&a, Mode::Live, COMPLETED, at(7));
    let theirs = event(&b, Mode::Test, COMPLETED, at(8));
    commit(store, |tx| {
        for e in [&theirs, &live].into_iter().chain(mine.iter()) {
            tx.insert_event(e)?;
        }
        Ok(())
    });
    let list = |org: &OrgId, mode: Mode, kind: Option<&str>, before: Option<&EventId>, limit: usize| {
        query(store, |tx| Ok(tx.list_events(org, mode, kind, EventsPage::Before(before), limit)?))
    };
    let newest: Vec<Event> = mine.iter().rev().cloned().collect();

    assert_eq!(list(&a.id, Mode::Test, None, None, 100), newest, "every event, newest first, whole");
    assert_eq!(event_ids(&list(&a.id, Mode::Test, None, None, 2)), event_ids(&newest[..2]));
    assert_eq!(event_ids(&list(&a.id, Mode::Test, None, Some(&newest[1].id), 3)), event_ids(&newest[2..5]), "before is exclusive");
    assert_eq!(event_ids(&list(&a.id, Mode::Test, None, Some(&newest[4].id), 3)), event_ids(&newest[5..]));
    assert_eq!(list(&a.id, Mode::Test, None, Some(&newest[5].id), 3), vec![]);
    assert_eq!(list(&a.id, Mode::Test, None, None, 0), vec![]);

    let failed: Vec<Event> = newest.iter().filter(|e| e.kind == FAILED).cloned().collect();
    assert_eq!(event_ids(&list(&a.id, Mode::Test, Some(FAILED), None, 100)), event_ids(&failed));
    assert_eq!(event_ids(&list(&a.id, Mode::Test, Some(FAILED), Some(&failed[0].id), 1)), event_ids(&failed[1..2]), "kind and cursor");
    assert_eq!(list(&a.id, Mode::Test, Some("charge"), None, 100), vec![], "kinds match exactly");

    assert_eq!(list(&a.id, Mode::Live, None, None, 100), vec![live]);
    assert_eq!(list(&b.id, Mode::Test, None, None, 100), vec![theirs]);
    assert_eq!(list(&b.id, Mode::Live, None, None, 100), vec![]);
}

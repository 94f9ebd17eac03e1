//! The storage contract: one suite of cases that every adapter of the storage port
//! ([`malipo_service::Store`]) must pass — in-memory, SQLite and PostgreSQL alike.
//!
//! An adapter's test file runs the whole suite with one line:
//!
//! ```text
//! fn make() -> Box<dyn malipo_service::Store> {
//!     Box::new(malipo_store_memory::MemoryStore::new())
//! }
//! malipo_store_contract::store_contract_tests!(make);
//! ```
//!
//! which expands to one `#[test]` per case (named after the case), each running
//! [`cases`]`::<case>` on a fresh, empty store from `make`. Attributes may precede the factory
//! and are put on every test, e.g. `store_contract_tests!(#[serial] make)`.
//! [`cases::ALL`] lists every case with its name, to run them some other way.
//!
//! The list of cases lives in one place, the hidden `__store_contract_cases!` macro: both
//! [`cases`] and [`store_contract_tests!`] are generated from it, so a case added there is run
//! by every adapter. (A case function that is not listed is an unused private item and fails
//! the build under `-D warnings`.)
//!
//! Cases write through [`malipo_service::write`], read through [`malipo_service::read`], use
//! fixed timestamps ([`fixtures::T0`]) and set up their own data with [`fixtures`]. Every case
//! that posts to the ledger ends with [`fixtures::assert_ledger_sound`].

// This crate is test code: its cases and fixtures panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod fixtures;
pub mod payout_fixtures;
pub mod people_fixtures;
mod suite;

/// One public fn per case: `pub fn <case>(store: &dyn malipo_service::Store)`, panicking on
/// failure. Each expects a fresh, empty store.
pub mod cases {
    crate::__store_contract_cases!(__store_contract_define_cases {});
}

/// The list of cases, `module::case`, in suite order: calls `$crate::$callback! { { $extra } [ … ] }`.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_contract_cases {
    ($callback:ident { $($extra:tt)* }) => {
        $crate::$callback! {
            { $($extra)* }
            [
                transactions::fresh_store_is_ready_and_empty,
                auth::organisations_round_trip,
                auth::credentials_round_trip,
                auth::duplicate_client_id_is_refused,
                auth::revoking_a_credential_revokes_its_tokens,
                auth::token_returns_its_organisation,
                auth::revoke_token_only_for_its_client,
                auth::replace_secret_hash_only_replaces_the_verified_hash,
                auth::credentials_record_their_creator_and_last_use,
                accounts::accounts_insert_and_find,
                accounts::account_ids_and_names_are_only_what_committed,
                accounts::duplicate_accounts_are_refused,
                accounts::org_accounts_only_of_that_org_and_mode,
                ledger::post_journal_updates_balances_and_chains,
                ledger::overdraft_is_refused_and_writes_nothing,
                ledger::post_journal_whole_never_commits_a_refused_journal,
                ledger::post_journals_whole_posts_each_in_turn,
                queued::queued_journals_are_seen_by_reads_and_committed_in_order,
                queued::queued_journals_refused_fail_the_commit_and_survive_a_failed_savepoint,
                queued::queued_events_are_seen_by_reads_and_a_duplicate_fails_the_commit,
                ledger::issuance_may_go_negative,
                ledger::unknown_account_is_refused,
                ledger::currency_or_mode_mismatch_is_refused,
                ledger::an_account_whose_opening_rolled_back_is_unknown,
                ledger::holds_and_releases,
                ledger::pending_credits_sum_authorised_charges,
                ledger::account_debits_and_statement,
                ledger::account_postings_keep_to_the_window,
                ledger::ledger_part_is_the_accounts_and_their_journals,
                hot::waiting_lines_count_at_once_and_post_in_order,
                hot::checked_debits_and_holds_count_waiting_credits,
                hot::concurrent_credits_and_appliers_keep_one_running_balance,
                hot::concurrent_debits_of_waiting_credits_pass_once,
                chain::sealing_chains_committed_journals_once,
                chain::concurrent_sealers_make_one_chain,
                statements::postings_carry_fees_and_page_newest_first_by_kind,
                statements::journal_postings_and_the_last_posting_before,
                statements::posting_times_never_go_back_on_an_account,
                wallets::wallets_insert_get_update,
                wallets::duplicate_wallet_is_refused,
                wallets::wallet_constraints,
                ussd::ussd_sessions_put_get_purge,
                ussd::ussd_sessions_swap_only_over_what_was_seen,
                charges::charges_round_trip_scoped_by_org_and_mode,
                charges::insert_charges_inserts_together,
                charges::update_charge_persists_every_mutable_field,
                charges::latest_charge_by_reference_picks_the_newest,
                charges::list_charges_pages_newest_first,
                charges::list_charges_filters,
                charges::claim_due_charges_leases,
                charges::lock_due_charges_takes_the_oldest_of_a_mode,
                charges::pending_charges_of_payer,
                charges::cash_outs_are_not_charges,
                charges::list_charges_filters_by_payer,
                activity::charge_day_totals_count_by_day_and_state,
                activity::charge_day_totals_follow_state_changes,
                payouts::payouts_round_trip_scoped_by_org_and_mode,
                payouts::update_payout_persists_every_mutable_field,
                payouts::payouts_refuse_impossible_states,
                payouts::list_payouts_pages_newest_first,
                payouts::list_payouts_filters,
                payouts::claim_due_payouts_leases,
                payouts::a_charge_or_payout_is_paid_once,
                payment_requests::payment_requests_round_trip_scoped_by_org_and_mode,
                payment_requests::an_open_pay_code_is_unique_per_mode,
                payment_requests::payment_request_updates_are_guarded_and_states_checked,
                payment_requests::payment_request_by_code_prefers_the_open_one,
                payment_requests::list_payment_requests_pages_and_filters,
                payment_requests::lock_due_payment_requests_takes_the_open_expired_ones,
                payment_requests::a_payment_request_is_paid_once,
                bulk::batches_round_trip_and_update,
                bulk::batches_refuse_impossible_states,
                bulk::batches_keep_people_apart,
                bulk::list_batches_pages_newest_first,
                bulk::batch_items_in_batch_order,
                bulk::schedule_and_fail_only_the_pending_items_of_the_batch,
                bulk::a_batch_of_ten_thousand_items_in_one_insert,
                reversals::reversals_round_trip_scoped_by_org_and_mode,
                reversals::list_reversals_pages_newest_first,
                reversals::journal_source_names_what_a_transaction_paid,
                people::users_round_trip_by_id_email_and_organisation,
                people::an_email_waits_in_several_organisations_until_one_accepts_it,
                people::users_refuse_impossible_states,
                people::activating_a_user_happens_once,
                people::passwords_roles_and_removal,
                people::totp_enrolment_and_steps_are_guarded,
                people::recovery_codes_are_used_once_and_replaced,
                people::invitations_are_accepted_once_before_expiry,
                people::organisations_require_two_factor_once_set,
                people::sessions_round_trip_touch_and_end,
                people::purge_sessions_by_end_and_by_idle,
                people::failure_counts_lock_put_and_clear,
                people::stale_failure_counts_are_purged,
                people::audit_log_filters_orders_and_pages,
                people::failed_closures_and_savepoints_roll_back_people,
                idempotency::insert_key_then_read,
                idempotency::insert_keys_stores_the_new_ones_and_counts_them,
                idempotency::purge_keys_removes_old_ones_only,
                webhooks::endpoints_round_trip_and_update,
                webhooks::list_endpoints_skips_deleted_and_other_orgs,
                webhooks::list_endpoints_sees_the_transactions_own_writes,
                webhooks::events_round_trip_scoped_by_org_and_mode,
                webhooks::list_events_pages_oldest_first,
                events::list_events_pages_newest_first,
                webhooks::deliveries_insert_lock_update,
                webhooks::claim_due_deliveries_leases,
                webhooks::deliveries_of_event_and_pending_of_endpoint,
                webhooks::attempts_of_event_oldest_first,
                webhooks::batch_reads_and_attempts,
                activity::events_of_object_oldest_first_in_scope,
                activity::deliveries_and_attempts_of_several_events,
                webhooks::purge_events_removes_old_events_with_their_deliveries,
                webhooks::failed_closure_rolls_back_webhook_writes,
                callbacks::callbacks_wait_come_due_and_are_claimed_once,
                callbacks::queued_callbacks_come_due_as_at_once,
                callbacks::callback_secrets_per_organisation_and_mode,
                transactions::failed_closure_rolls_back_everything,
                transactions::write_returns_values_and_read_sees_commits,
                transactions::retry_reruns_the_whole_closure,
            ]
        }
    };
}

/// Generates the body of [`cases`] from the list.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_contract_define_cases {
    ({} [$($module:ident :: $case:ident),* $(,)?]) => {
        $(pub use $crate::suite::$module::$case;)*

        /// Every case with its name, in suite order.
        pub const ALL: &[(&str, fn(&dyn ::malipo_service::Store))] = &[
            $((stringify!($case), $case as fn(&dyn ::malipo_service::Store))),*
        ];
    };
}

/// Expands to one `#[test]` per case, each calling `$crate::cases::<case>(&*($make)())`.
///
/// `$make` is an expression of type `fn() -> Box<dyn malipo_service::Store>` (a function name
/// or a non-capturing closure) producing a fresh, empty store. Outer attributes written before
/// it (`#[ignore]`, `#[serial]`, …) are copied onto every generated test.
#[macro_export]
macro_rules! store_contract_tests {
    // Outer attributes first, gathered one by one (an expression may itself start with `#`).
    (#[$attr:meta] $($rest:tt)+) => {
        $crate::store_contract_tests!(@attrs [#[$attr]] $($rest)+);
    };
    (@attrs [$($attrs:tt)*] #[$attr:meta] $($rest:tt)+) => {
        $crate::store_contract_tests!(@attrs [$($attrs)* #[$attr]] $($rest)+);
    };
    (@attrs [$($attrs:tt)*] $make:expr $(,)?) => {
        $crate::__store_contract_cases!(__store_contract_test_fns { [$($attrs)*] $make });
    };
    ($make:expr $(,)?) => {
        $crate::__store_contract_cases!(__store_contract_test_fns { [] $make });
    };
}

/// Generates the tests of [`store_contract_tests!`] from the list.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_contract_test_fns {
    ({ $attrs:tt $make:expr } [$($module:ident :: $case:ident),* $(,)?]) => {
        $($crate::__store_contract_test_fn! { $attrs $make, $case })*
    };
}

/// Generates one test of [`store_contract_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __store_contract_test_fn {
    ([$(#[$attr:meta])*] $make:expr, $case:ident) => {
        #[test]
        $(#[$attr])*
        fn $case() {
            $crate::cases::$case(&*($make)());
        }
    };
}
